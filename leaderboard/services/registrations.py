"""Taking part in a challenge: accepting its rules, and registering where the hosts approve contestants.

A contestant accepts the challenge's rules (when it has any) before the first submission; on a
challenge with ``registration_required`` a host approves the registration first.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from ..choices import RegistrationStatus
from ..models import Challenge, Registration
from ..selectors import user_is_host
from .audit import audit_record
from .errors import NotAllowed, ServiceError


def registration_register(*, challenge: Challenge, user: User, accept_rules: bool = False) -> Registration:
    """Register ``user`` for the challenge (accepting its rules): approved at once unless the hosts approve."""
    if challenge.rules and not accept_rules:
        raise ServiceError("Accept the challenge's rules to take part (accept_rules).", field="accept_rules")
    with transaction.atomic():
        registration, created = Registration.objects.select_for_update().get_or_create(
            challenge=challenge,
            user=user,
            defaults={
                "status": RegistrationStatus.PENDING if challenge.registration_required else RegistrationStatus.APPROVED
            },
        )
        if accept_rules and registration.rules_accepted_at is None:
            registration.rules_accepted_at = timezone.now()
        if not challenge.registration_required and registration.status == RegistrationStatus.PENDING:
            registration.status = RegistrationStatus.APPROVED
        registration.save()
    return registration


def registration_decide_allowed(*, challenge, user: User) -> None:
    """Only the challenge's hosts decide registrations: asked before the registration is looked up, so a contestant
    reads the same refusal for an id that is none of the challenge's registrations and for one that is (the list is
    the hosts': 404 against 403 counted who had registered, and when)."""
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can approve registrations.")


def registration_decide(*, registration: Registration, user: User, approve: bool) -> Registration:
    """A host approves or rejects a registration; the audit log records it."""
    challenge = registration.challenge
    registration_decide_allowed(challenge=challenge, user=user)
    with transaction.atomic():
        registration.status = RegistrationStatus.APPROVED if approve else RegistrationStatus.REJECTED
        registration.decided_by, registration.decided_at = user, timezone.now()
        registration.save(update_fields=["status", "decided_by", "decided_at"])
        audit_record(
            challenge=challenge,
            actor=user,
            action="registration_decided",
            user=registration.user.username,
            status=registration.status,
        )
    return registration


def registration_check(*, challenge: Challenge, user: User) -> None:
    """Raise NotAllowed, saying what is missing, unless ``user`` may submit to the challenge."""
    if not (challenge.rules or challenge.registration_required) or user_is_host(user=user, challenge=challenge):
        return
    registration = Registration.objects.filter(challenge=challenge, user=user).first()
    if challenge.rules and (registration is None or registration.rules_accepted_at is None):
        raise NotAllowed(
            "Accept the challenge's rules before your first submission (on the challenge page, or "
            f"POST /api/challenges/{challenge.slug}/register/ with accept_rules=true)."
        )
    if challenge.registration_required:
        if registration is None:
            raise NotAllowed(
                "This challenge requires registration: register on the challenge page (or POST "
                f"/api/challenges/{challenge.slug}/register/) and wait for a host's approval."
            )
        if registration.status != RegistrationStatus.APPROVED:
            raise NotAllowed(
                f"Your registration is {registration.get_status_display().lower()}: the hosts "
                "approve registrations before you can submit."
            )
