"""One rule for every write of the API: a field the endpoint does not take is refused, never ignored.

A misspelled setting (``kruns`` for ``k_runs``) or a read-only one (``slug``, ``hosts``) sent in a write
answers 400 naming it, in the API's error shape: ``detail`` names each such field (with the nearest name
the endpoint takes, if one is close), ``field`` the first of them, ``errors`` each one's message. Every
input serializer of the API mixes in :class:`StrictInput`; a view that reads ``request.data`` without a
serializer calls :func:`refuse_unknown_fields` with the serializer of its schema.

Reads follow the same rule for their query parameters: a view mixing in :class:`StrictQuery` refuses a query
parameter its GET does not take (``?stauts=failed`` answered every submission, unfiltered), each handler's
parameters declared once with :func:`takes_query`, the list its schema shows.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.filters import OrderingFilter

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
    ``OpenApiParameter`` list, the one its schema shows, or their names) does not name; ``format`` is every
    endpoint's. A misspelled setting of a report endpoint (``?statistc=boo_n``, ``?alhpa=0.1``) answered the
    board of the challenge's own settings, as if it were the one asked for."""
    known = [getattr(parameter, "name", parameter) for parameter in parameters] + ["format"]
    unknown = [str(key) for key in query_params if key not in known]
    if unknown:
        raise UnknownFields({name: _query_refusal(name, known) for name in unknown})


def takes_query(parameters=(), *, paged: bool = False, **schema):
    """Declare a GET handler's query parameters once: ``parameters`` (``OpenApiParameter``) go to its schema
    (``extend_schema(parameters=...)``, with ``schema``'s other arguments) and are the ones :class:`StrictQuery`
    lets through; ``paged``: a page of a list, which also takes the paginator's ``limit`` and ``offset`` (the
    schema shows them from the same paginator)."""

    def decorate(handler):
        handler.query_parameters = [parameter.name for parameter in parameters]
        handler.query_paged = paged
        return extend_schema(parameters=list(parameters), **schema)(handler) if parameters or schema else handler

    return decorate


class StrictQuery:
    """Mixed into an API view (before DRF's class): a GET query parameter a list or read the endpoint declares
    does not take is a 400 naming it and the nearest one it takes. A handler takes what :func:`takes_query`
    declared; DRF's ``list`` of a viewset takes its filterset's filters, ``ordering`` (where it orders) and the
    paginator's parameters, as drf-spectacular shows them from those same classes; every GET takes ``format``.
    A handler that declares nothing (one object's page) is not checked."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        names = self.query_names() if request.method in ("GET", "HEAD") else None
        if names is not None:
            refuse_unknown_query(request.query_params, names)

    def query_names(self) -> list[str] | None:
        """The query parameters this request's handler takes (None: it declares none)."""
        action = getattr(self, "action", None)
        handler = getattr(self, action or "get", None)
        if action != "list" and not hasattr(handler, "query_parameters"):
            return None
        names = list(getattr(handler, "query_parameters", []))
        if action == "list" or getattr(handler, "query_paged", False):
            paginator = self.pagination_class()  # type: ignore[attr-defined]
            names += [paginator.limit_query_param, paginator.offset_query_param]
        if action == "list":
            filterset = getattr(self, "filterset_class", None)
            names += list(filterset.base_filters) if filterset else []
            names += [OrderingFilter.ordering_param] if getattr(self, "ordering_fields", None) else []
        return names


def _query_refusal(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}?" if close else f"it takes {', '.join(known)}"
    return f"not a query parameter of this endpoint ({hint})"


def _refusal(name: str, writable: list[str]) -> str:
    close = difflib.get_close_matches(name, writable, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}?" if close else f"it takes {', '.join(writable) or 'no fields'}"
    return f"not a field this endpoint writes (unknown or read-only; {hint})"


class NamesChoices:
    """A choice field whose refusal names the values it takes: DRF's '"median" is not a valid choice.' named none
    (a new user's finding on ``?statistic=median``), where the filters' refusals list theirs
    (:class:`~leaderboard.api.filters.NamingFilterSet`)."""

    def fail(self, key: str, **kwargs):
        if key == "invalid_choice":
            taken = ", ".join(str(value) for value in self.choices)  # type: ignore[attr-defined]
            message = f'"{kwargs.get("input")}" is not a valid choice; one of: {taken}.'
            raise serializers.ValidationError(message, code=key)
        return super().fail(key, **kwargs)  # type: ignore[misc]


class ChoiceField(NamesChoices, serializers.ChoiceField):
    """The API's choice field (every serializer's: :class:`StrictInput` makes it a model serializer's too)."""


class MultipleChoiceField(NamesChoices, serializers.MultipleChoiceField):
    """The API's multiple-choice field."""


class StrictInput:
    """Mixed into an input serializer (before DRF's class): unknown and read-only fields are a 400 naming them;
    the choice fields a model serializer builds name the values they take (:class:`ChoiceField`)."""

    serializer_choice_field = ChoiceField

    def is_valid(self, *, raise_exception: bool = False) -> bool:
        if raise_exception:  # raised here: DRF's is_valid re-raises a plain ValidationError, without ``field``
            refuse_unknown_fields(getattr(self, "initial_data", None), self)  # type: ignore[arg-type]
        return super().is_valid(raise_exception=raise_exception)  # type: ignore[misc]

    def run_validation(self, data=empty):
        refuse_unknown_fields(data, self)  # type: ignore[arg-type]
        return super().run_validation(data)  # type: ignore[misc]
