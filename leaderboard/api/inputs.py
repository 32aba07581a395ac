"""One rule for every write of the API: a field the endpoint does not take is refused, never ignored.

A misspelled setting (``kruns`` for ``k_runs``) or a read-only one (``slug``, ``hosts``) sent in a write
answers 400 naming it, in the API's error shape: ``detail`` names each such field (with the nearest name
the endpoint takes, if one is close), ``field`` the first of them, ``errors`` each one's message. Every
input serializer of the API mixes in :class:`StrictInput`; a view that reads ``request.data`` without a
serializer calls :func:`refuse_unknown_fields` with the serializer of its schema.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from rest_framework import serializers
from rest_framework.fields import empty

#: Sent by the browsable API's HTML forms along with the fields; never a field of the endpoint.
FORM_MACHINERY = frozenset({"csrfmiddlewaretoken"})


class UnknownFields(serializers.ValidationError):
    """The fields an endpoint does not take (a 400 with ``field``: the first of them)."""

    def __init__(self, messages: dict[str, str]):
        super().__init__({name: [message] for name, message in messages.items()})
        self.field = next(iter(messages))


def refuse_unknown_fields(data, serializer: serializers.Serializer) -> None:
    """Raise :class:`UnknownFields` if ``data`` (a request body) holds a key ``serializer`` does not write."""
    if not isinstance(data, Mapping):
        return
    writable = [name for name, field in serializer.fields.items() if not field.read_only]
    unknown = [str(key) for key in data if key not in writable and key not in FORM_MACHINERY]
    if unknown:
        raise UnknownFields({name: _refusal(name, writable) for name in unknown})


def refuse_unknown_query(query_params: Mapping, parameters) -> None:
    """Raise :class:`UnknownFields` for a query parameter that ``parameters`` (the endpoint's
    ``OpenApiParameter`` list, the one its schema shows) does not name; ``format`` is every endpoint's. A
    misspelled setting of a report endpoint (``?statistc=boo_n``, ``?alhpa=0.1``) answered the board of the
    challenge's own settings, as if it were the one asked for."""
    known = [parameter.name for parameter in parameters] + ["format"]
    unknown = [str(key) for key in query_params if key not in known]
    if unknown:
        raise UnknownFields({name: _query_refusal(name, known) for name in unknown})


def _query_refusal(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}?" if close else f"it takes {', '.join(known)}"
    return f"not a query parameter of this endpoint ({hint})"


def _refusal(name: str, writable: list[str]) -> str:
    close = difflib.get_close_matches(name, writable, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}?" if close else f"it takes {', '.join(writable) or 'no fields'}"
    return f"not a field this endpoint writes (unknown or read-only; {hint})"


class StrictInput:
    """Mixed into an input serializer (before DRF's class): unknown and read-only fields are a 400 naming them."""

    def is_valid(self, *, raise_exception: bool = False) -> bool:
        if raise_exception:  # raised here: DRF's is_valid re-raises a plain ValidationError, without ``field``
            refuse_unknown_fields(getattr(self, "initial_data", None), self)  # type: ignore[arg-type]
        return super().is_valid(raise_exception=raise_exception)  # type: ignore[misc]

    def run_validation(self, data=empty):
        refuse_unknown_fields(data, self)  # type: ignore[arg-type]
        return super().run_validation(data)  # type: ignore[misc]
