"""Accounts: API tokens (django-rest-knox: stored as digests, with expiry) and e-mail verification.

A token's secret is shown once, when it is created; the database keeps its SHA-512 digest and
its first characters (``token_key``), by which the owner lists and revokes it. With
``VARBOARD_EMAIL_VERIFICATION`` on, a new account stays inactive until its owner follows the
signed link mailed to them.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing
from django.core.mail import send_mail
from django.db.models import Q, QuerySet
from django.utils import timezone
from knox.models import AuthToken

from .errors import NotFound, ServiceError
from .teams import team_personal_for

VERIFY_SALT = "varboard.email-verification"
VERIFY_MAX_AGE_S = 3 * 24 * 3600


def token_create(*, user: User) -> tuple[AuthToken, str]:
    """A new API token for ``user``: (its record, the secret, shown this once)."""
    limit = settings.REST_KNOX.get("TOKEN_LIMIT_PER_USER")
    if limit and token_list(user=user).count() >= limit:
        raise ServiceError(f"You have {limit} tokens, the most allowed; revoke one first.")
    return AuthToken.objects.create(user=user)


def token_list(*, user: User) -> QuerySet[AuthToken]:
    """The user's tokens that have not expired, newest first."""
    return (
        AuthToken.objects.filter(user=user)
        .filter(Q(expiry__isnull=True) | Q(expiry__gt=timezone.now()))
        .order_by("-created")
    )


def token_revoke(*, user: User, token_key: str) -> int:
    """Revoke the user's tokens starting with ``token_key``; how many were revoked (0: none matched)."""
    deleted, _ = AuthToken.objects.filter(user=user, token_key=token_key).delete()
    if not deleted:
        raise NotFound(f"You have no token {token_key!r}.", field="token_key")
    return deleted


def account_signup(*, user: User, verify_url) -> bool:
    """After a sign-up: the personal team, and, with e-mail verification on, an inactive account and a
    mail with the link ``verify_url(signed)``. True when the account is active now."""
    team_personal_for(user=user)
    if not settings.VARBOARD_EMAIL_VERIFICATION:
        return True
    if not user.email:
        raise ServiceError("An e-mail address is required to verify the account.", field="email")
    user.is_active = False
    user.save(update_fields=["is_active"])
    signed = signing.dumps({"user": user.pk, "email": user.email}, salt=VERIFY_SALT)
    send_mail(
        "Confirm your varboard account",
        f"Confirm your account: {verify_url(signed)}\n",
        settings.DEFAULT_FROM_EMAIL,
        [user.email],
    )
    return False


def account_verify(*, signed: str) -> User:
    """Activate the account named by a verification link; ServiceError when the link is bad or expired."""
    try:
        payload = signing.loads(signed, salt=VERIFY_SALT, max_age=VERIFY_MAX_AGE_S)
    except signing.SignatureExpired:
        raise ServiceError("This confirmation link has expired; sign up again.") from None
    except signing.BadSignature:
        raise ServiceError("This confirmation link is not valid.") from None
    user = User.objects.filter(pk=payload.get("user"), email=payload.get("email")).first()
    if user is None:
        raise ServiceError("This confirmation link names no account.")
    user.is_active = True
    user.save(update_fields=["is_active"])
    return user
