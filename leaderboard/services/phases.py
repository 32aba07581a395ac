"""Phases of a challenge (e.g. development, then final): dates, quotas, kinds and scored rows of each.

Every challenge has at least one phase, and its dates and quotas live on its phases only (issue
24): ``challenge_create`` makes the first phase from the dates and quotas it is given
(:data:`FIRST_PHASE_FIELDS`), and while a challenge has exactly one phase, ``challenge_update``
changes them on that phase. Whether the challenge is open, and under which phase, is
:func:`leaderboard.selectors.phase_in_force`. A submission belongs to the phase open when it is
made, and is charged to that phase's quotas.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import Challenge, Phase
from ..selectors import phase_in_force, private_board_revealed, user_is_host
from .audit import audit_record, audit_save
from .errors import ChallengeClosed, NotAllowed, ServiceError

PHASE_FIELDS = (
    "name",
    "order",
    "opens_at",
    "closes_at",
    "daily_quota",
    "total_quota",
    "daily_file_quota",
    "total_file_quota",
    "allow_predictions",
    "allow_recipes",
    "test_rows",
    "auto_reveal",
)
#: Phase settings the challenge's create and update take for its first (while it is the only) phase.
FIRST_PHASE_FIELDS = ("opens_at", "closes_at", "daily_quota", "total_quota")
#: Challenge settings a single-phase challenge shares with its phase (the challenge's kinds bound every phase's).
SHARED_WITH_PHASE = ("allow_predictions", "allow_recipes")


def phase_default(*, challenge: Challenge, **fields) -> Phase:
    """The first phase, ``main``: the challenge's kinds, and the dates and quotas in ``fields`` (else the defaults)."""
    unknown = sorted(set(fields) - set(FIRST_PHASE_FIELDS))
    if unknown:
        raise ServiceError(f"Unknown phase fields: {unknown}.")
    return Phase.objects.create(
        challenge=challenge,
        name="main",
        order=0,
        **{name: getattr(challenge, name) for name in SHARED_WITH_PHASE},
        **fields,
    )


def phase_update_single(*, challenge: Challenge, user: User | None, fields: dict) -> dict:
    """Apply the challenge's kinds and the given :data:`FIRST_PHASE_FIELDS` to its only phase; the changes.

    With several phases, dates and quotas are set on each phase (``phase_update``): a challenge-wide
    value would be ambiguous, so it is refused naming the field.
    """
    given = {name: fields[name] for name in FIRST_PHASE_FIELDS if name in fields}
    phases = list(challenge.phases.all())
    if len(phases) != 1:
        if given:
            name = next(iter(given))
            raise ServiceError(
                f"This challenge has {len(phases)} phases: set {name} on each phase "
                "(its phases endpoint), not on the challenge.",
                field=name,
            )
        return {}
    phase = phases[0]
    values = {name: getattr(challenge, name) for name in SHARED_WITH_PHASE} | given
    merged = {name: getattr(phase, name) for name in PHASE_FIELDS} | values
    _check(merged)
    if {"opens_at", "closes_at"} & set(given):
        _check_not_after_reveal(challenge, merged)
    return audit_save(
        phase, values, challenge=challenge, actor=user, action="phase_changed", tracked=PHASE_FIELDS, phase=phase.name
    )


def phase_open(*, challenge: Challenge, now=None) -> Phase:
    """The phase taking submissions now; ChallengeClosed with :func:`phase_in_force`'s reason when none does."""
    in_force = phase_in_force(challenge=challenge, now=now)
    if not in_force.open:
        raise ChallengeClosed(in_force.reason)
    return in_force.phase


def _check(fields: dict) -> None:
    unknown = sorted(set(fields) - set(PHASE_FIELDS))
    if unknown:
        raise ServiceError(f"Unknown phase fields: {unknown}.")
    opens, closes = fields.get("opens_at"), fields.get("closes_at")
    if opens and closes and closes <= opens:
        raise ServiceError("A phase's closing date must come after its opening date.", field="closes_at")
    if not fields.get("allow_predictions", True) and not fields.get("allow_recipes", True):
        raise ServiceError("A phase must take predictions, recipes, or both.", field="allow_predictions")


def _window(opens, closes) -> str:
    start = f"from {opens:%Y-%m-%d %H:%M} UTC" if opens else "from the start"
    return f"{start}, {f'until {closes:%Y-%m-%d %H:%M} UTC' if closes else 'never closing'}"


def _check_sequence(challenge: Challenge, fields: dict, *, phase: Phase | None = None) -> None:
    """Phases follow one another: each has its own ``order``, and no two windows overlap (so at most one is open).

    Windows are half-open, ``[opens_at, closes_at)``: a phase may open when the one before closes.
    """
    others = list(challenge.phases.exclude(pk=phase.pk if phase else None))
    name = fields.get("name") or (phase.name if phase else "new")
    clash = next((p for p in others if p.order == fields.get("order")), None)
    if clash is not None:
        raise ServiceError(
            f"The {clash.name} phase has order {clash.order} already: give the {name} phase "
            "its own place in the sequence (or leave order out to put it last).",
            field="order",
        )
    opens, closes = fields.get("opens_at"), fields.get("closes_at")
    for other in others:
        if (opens is None or other.closes_at is None or opens < other.closes_at) and (
            other.opens_at is None or closes is None or other.opens_at < closes
        ):
            raise ServiceError(
                f"The {name} phase ({_window(opens, closes)}) overlaps the {other.name} phase "
                f"({_window(other.opens_at, other.closes_at)}): phases follow one another, so "
                f"change the dates of one of them first.",
                field="opens_at",
            )


def _check_not_after_reveal(challenge: Challenge, fields: dict) -> None:
    """No phase takes submissions once the private board is revealed (by the hosts, or by an automatic reveal).

    The reveal ends the competition (:func:`~leaderboard.services.challenges.challenge_reveal` closes every phase):
    a phase open afterwards let contestants fit entries to the private scores everyone reads, and re-opening an
    automatically revealing phase hid the revealed board again (a reviewer's finding). A phase that ends by now
    may still be changed (its name, its quotas). An automatic reveal of a board without entries revealed nothing: a
    challenge imported from a bundle, its phases past, may run them again (a host's reveal is one all the same: a
    private score made after it would be public at once).
    """
    closes = fields.get("closes_at")
    if challenge.public_fraction >= 1.0 or (closes is not None and closes <= timezone.now()):
        return
    if challenge.private_revealed_at is None and not challenge.submissions.exists():
        return
    if private_board_revealed(challenge=challenge):
        name = fields.get("name") or "new"
        raise ServiceError(
            f"The private board is revealed, which ended the competition: the {name} phase would take submissions "
            "after it, fitted to the private scores everyone can read. Give it a closing date in the past, or start "
            "a new challenge for further submissions.",
            field="closes_at",
        )


def _check_reveal_kept(phase: Phase, fields: dict) -> None:
    """An automatic reveal, once it has shown the private board, is not taken back: unticking the phase's
    ``auto_reveal`` hid the board again, which then counted as never revealed, and a new phase could take
    submissions fitted to the private scores everyone had read (what :func:`_check_not_after_reveal` refuses)."""
    if not phase.auto_reveal or fields.get("auto_reveal", True):
        return
    challenge = phase.challenge
    if challenge.private_revealed_at is not None or not challenge.submissions.exists():
        return  # a host's reveal stands alone; a reveal without entries revealed nothing
    if private_board_revealed(challenge=challenge):
        raise ServiceError(
            f"auto_reveal cannot be turned off: the {phase.name} phase's automatic reveal has shown the private board "
            "to everyone, and turning it off would hide the board again and let a new phase take submissions fitted "
            "to the private scores read meanwhile.",
            field="auto_reveal",
        )


def phase_create(*, challenge: Challenge, user: User, **fields) -> Phase:
    """Add a phase (hosts only); without an ``order`` it goes after the last phase."""
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can add phases.")
    if not (fields.get("name") or "").strip():
        raise ServiceError("A phase needs a name.", field="name")
    for name in SHARED_WITH_PHASE:  # the kinds the challenge takes, unless given (a predictions-only challenge's
        if fields.get(name) is None:  # new phase said it took recipes: found by a new host)
            fields[name] = getattr(challenge, name)
    _check(fields)
    try:
        with transaction.atomic():
            Challenge.objects.select_for_update().filter(pk=challenge.pk).first()  # one sequence at a time
            if fields.get("order") is None:
                last = challenge.phases.order_by("-order").values_list("order", flat=True).first()
                fields["order"] = 0 if last is None else last + 1
            _check_not_after_reveal(challenge, fields)
            _check_sequence(challenge, fields)
            phase = Phase.objects.create(challenge=challenge, **fields)
            audit_record(
                challenge=challenge,
                actor=user,
                action="phase_created",
                phase=phase.name,
                settings={name: getattr(phase, name) for name in PHASE_FIELDS},
            )
    except IntegrityError:
        raise ServiceError(f"The challenge has a phase named {fields['name']!r} already.", field="name") from None
    return phase


def phase_update(*, phase: Phase, user: User, **fields) -> Phase:
    """Change a phase's settings (hosts only); the audit log keeps the old and new values."""
    if not user_is_host(user=user, challenge=phase.challenge):
        raise NotAllowed("Only the challenge's hosts can change phases.")
    merged = {name: getattr(phase, name) for name in PHASE_FIELDS} | fields
    _check(merged)
    try:
        with transaction.atomic():
            Challenge.objects.select_for_update().filter(pk=phase.challenge_id).first()
            if {"opens_at", "closes_at"} & set(fields):
                _check_not_after_reveal(phase.challenge, merged)
            _check_reveal_kept(phase, fields)
            _check_sequence(phase.challenge, merged, phase=phase)
            audit_save(
                phase,
                fields,
                challenge=phase.challenge,
                actor=user,
                action="phase_changed",
                tracked=PHASE_FIELDS,
                phase=phase.name,
            )
    except IntegrityError:
        raise ServiceError(f"The challenge has a phase named {fields.get('name')!r} already.", field="name") from None
    return phase
