"""Phases of a challenge (e.g. development, then final): dates, quotas, kinds and scored rows of each.

Every challenge has at least one phase; ``challenge_create`` makes the first from the
challenge's own dates, quotas and kinds, and while a challenge has exactly one phase, changing
those settings on the challenge changes the phase too. A submission belongs to the phase open
when it is made, and is charged to that phase's quotas.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import Challenge, Phase
from ..selectors import user_is_host
from .audit import audit_record, audit_save
from .errors import ChallengeClosed, NotAllowed, ServiceError

PHASE_FIELDS = ("name", "order", "opens_at", "closes_at", "daily_quota", "total_quota", "daily_file_quota",
                "total_file_quota", "allow_predictions", "allow_recipes", "test_rows", "auto_reveal")
#: Challenge settings a single-phase challenge shares with its phase.
SHARED_WITH_PHASE = ("opens_at", "closes_at", "daily_quota", "total_quota", "allow_predictions", "allow_recipes")


def phase_default(*, challenge: Challenge) -> Phase:
    """The first phase, from the challenge's own dates, quotas and kinds."""
    return Phase.objects.create(challenge=challenge, name="main", order=0,
                                **{name: getattr(challenge, name) for name in SHARED_WITH_PHASE})


def phase_sync_single(*, challenge: Challenge) -> None:
    """A challenge with one phase: the phase follows the challenge's dates, quotas and kinds."""
    phases = list(challenge.phases.all()[:2])
    if len(phases) == 1:
        Phase.objects.filter(pk=phases[0].pk).update(**{name: getattr(challenge, name) for name in SHARED_WITH_PHASE})


def phase_open(*, challenge: Challenge, now=None) -> Phase:
    """The phase taking submissions now; ChallengeClosed naming the reason when none does."""
    now = now or timezone.now()
    reason = challenge.closed_reason(now)
    if reason:
        raise ChallengeClosed(reason)
    phases = list(challenge.phases.all())
    for phase in phases:
        if phase.closed_reason(now) is None:
            return phase
    upcoming = [p for p in phases if p.opens_at and p.opens_at > now]
    if upcoming:
        raise ChallengeClosed(min(upcoming, key=lambda p: p.opens_at).closed_reason(now))
    if phases:
        raise ChallengeClosed(max(phases, key=lambda p: (p.closes_at is not None, p.closes_at)).closed_reason(now))
    raise ChallengeClosed("This challenge has no phase taking submissions.")


def _check(fields: dict) -> None:
    unknown = sorted(set(fields) - set(PHASE_FIELDS))
    if unknown:
        raise ServiceError(f"Unknown phase fields: {unknown}.")
    opens, closes = fields.get("opens_at"), fields.get("closes_at")
    if opens and closes and closes <= opens:
        raise ServiceError("A phase's closing date must come after its opening date.", field="closes_at")
    if not fields.get("allow_predictions", True) and not fields.get("allow_recipes", True):
        raise ServiceError("A phase must take predictions, recipes, or both.", field="allow_predictions")


def phase_create(*, challenge: Challenge, user: User, **fields) -> Phase:
    """Add a phase (hosts only)."""
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can add phases.")
    if not (fields.get("name") or "").strip():
        raise ServiceError("A phase needs a name.", field="name")
    _check(fields)
    try:
        with transaction.atomic():
            phase = Phase.objects.create(challenge=challenge, **fields)
            audit_record(challenge=challenge, actor=user, action="phase_created", phase=phase.name,
                         settings={name: getattr(phase, name) for name in PHASE_FIELDS})
    except IntegrityError:
        raise ServiceError(f"The challenge has a phase named {fields['name']!r} already.", field="name") from None
    return phase


def phase_update(*, phase: Phase, user: User, **fields) -> Phase:
    """Change a phase's settings (hosts only); the audit log keeps the old and new values."""
    if not user_is_host(user=user, challenge=phase.challenge):
        raise NotAllowed("Only the challenge's hosts can change phases.")
    _check({name: getattr(phase, name) for name in PHASE_FIELDS} | fields)
    try:
        with transaction.atomic():
            audit_save(phase, fields, challenge=phase.challenge, actor=user, action="phase_changed",
                       tracked=PHASE_FIELDS, phase=phase.name)
    except IntegrityError:
        raise ServiceError(f"The challenge has a phase named {fields.get('name')!r} already.", field="name") from None
    return phase
