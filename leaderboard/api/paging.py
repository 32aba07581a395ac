"""One pagination shape for every list the API returns: ``{"count", "next", "previous", "results"}``
(``?limit=&offset=``, 50 rows by default; LimitOffsetPagination, as the viewsets use)."""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response


def page_of(view, request, rows, serializer_class, **kwargs) -> Response:
    """One page of ``rows`` serialized by ``serializer_class`` in the envelope (``view.pagination_class``)."""
    paginator = (getattr(view, "pagination_class", None) or LimitOffsetPagination)()
    page = paginator.paginate_queryset(rows, request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True, **kwargs).data)
