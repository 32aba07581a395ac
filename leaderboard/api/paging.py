"""One pagination shape for every list the API returns: ``{"count", "next", "previous", "results"}``
(``?limit=&offset=``, 50 rows by default, at most 500), with the leaderboard's rule for the
parameters (:func:`leaderboard.services.paging.page_limit`): a ``limit`` or ``offset`` that does not
parse is a 400 naming it, never silently replaced by the default."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response

from ..services.paging import PAGE_MAX, WHOLE_NUMBER_MAX, page_limit, page_offset


def whole(minimum: int = 0, maximum: int = WHOLE_NUMBER_MAX) -> dict:
    """The schema of a whole-number query parameter, with the bounds the server enforces (a generated client
    can check them before it asks: a reviewer's schemathesis run found them undeclared)."""
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


class StrictLimitOffsetPagination(LimitOffsetPagination):
    """DRF's limit/offset paging; ``limit`` an integer in [1, 500], ``offset`` a non-negative integer,
    else 400 (DRF's own falls back to the default page without a word)."""

    max_limit = PAGE_MAX

    def get_limit(self, request) -> int:
        try:
            return page_limit(request.query_params.get(self.limit_query_param), default=self.default_limit)
        except ValueError as exc:
            raise ValidationError({self.limit_query_param: str(exc)}) from None

    def get_offset(self, request) -> int:
        try:
            offset = page_offset(self.offset_query_param, request.query_params.get(self.offset_query_param))
        except ValueError as exc:
            raise ValidationError({self.offset_query_param: str(exc)}) from None
        return offset or 0

    def get_schema_operation_parameters(self, view):
        """DRF's two parameters, with the bounds enforced above."""
        bounds = {self.limit_query_param: whole(1, PAGE_MAX), self.offset_query_param: whole()}
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"] = bounds.get(parameter["name"], parameter["schema"])
        return parameters


def page_of(view, request, rows, serializer_class, **kwargs) -> Response:
    """One page of ``rows`` serialized by ``serializer_class`` in the envelope (``view.pagination_class``)."""
    paginator = (getattr(view, "pagination_class", None) or StrictLimitOffsetPagination)()
    page = paginator.paginate_queryset(rows, request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True, **kwargs).data)
