"""One rule for printing a score, an interval's bound or any other figure on the pages: ``{{ x|number:4 }}``.

Django's ``floatformat`` prints every digit of a large magnitude (a score of 1e18 read
``1000000000000000000.0000``) and rounds a small one away (``0.0000`` for 3e-5). A magnitude of at least
:data:`SCIENTIFIC_ABOVE`, or non-zero below :data:`SCIENTIFIC_BELOW`, is printed in scientific notation with the
same digits after the point (``1.0000e+18``); every other value exactly as ``floatformat`` printed it (0.8123).
The command-line client, standard library only, applies the same rule (``cli.varboard_cli._number``; a test
holds the two together).
"""

from __future__ import annotations

import math

from django import template
from django.template.defaultfilters import floatformat

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
    """``value`` with ``digits`` after the point: ``floatformat`` for ordinary magnitudes (as the pages always
    printed them), scientific notation for very large or very small ones; "" for None, as ``floatformat``."""
    try:
        figure = float(value)
    except (TypeError, ValueError):
        return floatformat(value, digits)
    return f"{figure:.{int(digits)}e}" if scientific(figure) else floatformat(value, digits)
