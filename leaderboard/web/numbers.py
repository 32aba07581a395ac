"""One rule for printing a score, an interval's bound or any other figure on the pages: ``{{ x|number:4 }}``.

Django's ``floatformat`` prints every digit of a large magnitude (a score of 1e18 read
``1000000000000000000.0000``) and rounds a small one away (``0.0000`` for 3e-5). A magnitude of at least
:data:`SCIENTIFIC_ABOVE`, or non-zero below :data:`SCIENTIFIC_BELOW`, is printed in scientific notation with the
same digits after the point (``1.0000e+18``); every other value rounded as a rounded board rounds
(:func:`evaluation.boards.shown_score`: half-way to the even digit, read past the binary noise) and printed by
``floatformat`` (0.8123). ``floatformat`` alone rounded the decimal repr half up (0.00015 -> 0.0002) where Python's
format, the CLI's, rounds the binary value (0.0001): 5,000 of the 20,001 accuracies k/20000 printed differently on
the page and in the CLI, and a loss board's 0.57555 (0.5756) did not mirror its accuracy's 0.42445 (0.4245). The
command-line client, standard library only, applies the same rule (``cli.varboard_cli._number``; a test holds the
two together).
"""

from __future__ import annotations

import math

from django import template
from django.template.defaultfilters import floatformat

from evaluation.boards import shown_score

register = template.Library()

#: Magnitudes printed in scientific notation: from 1e9 up (ten integer digits), and non-zero below 1e-4 (which
#: four decimals would show as 0.0000 or 0.0001).
SCIENTIFIC_ABOVE = 1e9
SCIENTIFIC_BELOW = 1e-4


def scientific(value: float) -> bool:
    """Whether ``value`` is printed in scientific notation (finite, non-zero, outside [1e-4, 1e9))."""
    return math.isfinite(value) and value != 0 and not SCIENTIFIC_BELOW <= abs(value) < SCIENTIFIC_ABOVE


@register.filter
def number(value, digits: int = 4) -> str:
    """``value`` with ``digits`` after the point: :func:`~evaluation.boards.shown_score`, then ``floatformat``, for
    ordinary magnitudes, scientific notation for very large or very small ones; "" for None, as ``floatformat``."""
    try:
        figure = float(value)
    except (TypeError, ValueError):
        return floatformat(value, digits)
    if scientific(figure):
        return f"{figure:.{int(digits)}e}"
    return floatformat(shown_score(figure, int(digits)) if math.isfinite(figure) else value, digits)
