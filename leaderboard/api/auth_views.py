"""API tokens: log in for one (throttled on failures), list yours, revoke one (django-rest-knox)."""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from ..services.accounts import token_create, token_list, token_revoke
from ..throttles import FailedLoginThrottle
from .inputs import StrictQuery, takes_query
from .paging import StrictLimitOffsetPagination, page_of
from .schema import error_responses
from .serializers import LoginSerializer, TokenSerializer

TOKEN_RESPONSE = inline_serializer(
    "TokenResponse",
    fields={
        "token": serializers.CharField(help_text="Send it as `Authorization: Token <token>`; shown once."),
        "token_key": serializers.CharField(),
        "expiry": serializers.DateTimeField(allow_null=True),
    },
)


def _token_response(instance, token: str, status: int = 200) -> Response:
    return Response({"token": token, "token_key": instance.token_key, "expiry": instance.expiry}, status=status)


class TokenLoginView(APIView):
    """``POST /api/auth/token/``: username and password in, a new token out (the CLI's log-in)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        request=LoginSerializer,
        responses={200: TOKEN_RESPONSE, **error_responses(429)},
        description="A new API token (stored hashed, expiring after VARBOARD_TOKEN_TTL_HOURS). "
        "Failed attempts are throttled per address and per username (429 with "
        "Retry-After).",
    )
    def post(self, request):
        incoming = LoginSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        username = incoming.validated_data["username"]
        throttle = FailedLoginThrottle()
        wait = throttle.blocked(request, username)
        if wait is not None:
            raise Throttled(wait=wait, detail="Too many failed log-ins from this address or for this account.")
        user = authenticate(request, username=username, password=incoming.validated_data["password"])
        if user is None:
            throttle.record(request, username)
            raise AuthenticationFailed("Unable to log in with the username and password given.")
        return _token_response(*token_create(user=user))


class TokenListView(StrictQuery, APIView):
    """``GET /api/auth/tokens/``: your tokens; ``POST``: a new one (its secret is shown once)."""

    permission_classes = [IsAuthenticated]
    pagination_class = StrictLimitOffsetPagination

    @takes_query(paged=True, responses=TokenSerializer(many=True))
    def get(self, request):
        """Your API tokens (their secrets are never shown again)."""
        return page_of(self, request, token_list(user=request.user), TokenSerializer)

    @extend_schema(request=None, responses={201: TOKEN_RESPONSE})
    def post(self, request):
        """Create a token; its secret is in this answer only."""
        return _token_response(*token_create(user=request.user), status=201)


class TokenRevokeView(APIView):
    """``DELETE /api/auth/tokens/{token_key}/``: revoke one of your tokens."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={204: None})
    def delete(self, request, token_key: str):
        token_revoke(user=request.user, token_key=token_key)
        return Response(status=204)
