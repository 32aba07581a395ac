"""Moderation: a challenge's host disqualifies or hides an entry (a submission) or a whole team, with a reason.

A moderated entry is on neither board (``services.reports.report_entries`` leaves out every row whose
snapshot column ``moderated`` is set: the submission's own moderation, else its team's on the challenge),
its runs leave the exports, and only its team and the hosts still read it, with the state and the reason.
Each action is audit-logged and requests a report update; a restore undoes it.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from ..choices import Moderation
from ..models import Challenge, Submission, Team, TeamModeration
from ..selectors import user_is_host
from .audit import audit_record
from .errors import NotAllowed, ServiceError
from .reports import report_request_after, report_request_after_team

#: The longest reason kept (characters).
REASON_MAX = 2000


def moderation_allowed(*, challenge: Challenge, user: User) -> None:
    """Raise ``NotAllowed`` (403) unless ``user`` hosts ``challenge``: checked before the request's input, so
    a contestant learns that they may not moderate, not what a valid moderation would look like."""
    if not user_is_host(user=user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can moderate its entries and teams.")


def _checked(*, challenge: Challenge, user: User, state: str | None, reason: str | None, required: bool) -> str:
    """The reason, stripped, once the user is a host of ``challenge`` and ``state`` a moderation state."""
    moderation_allowed(challenge=challenge, user=user)
    if state is not None and state not in Moderation.values:
        raise ServiceError(f"state must be one of {', '.join(Moderation.values)}; got {state!r}.", field="state")
    reason = (reason or "").strip()
    if required and not reason:
        raise ServiceError("Give a reason: the entry's team reads it on its submission page.", field="reason")
    if len(reason) > REASON_MAX:
        raise ServiceError(f"reason has {len(reason)} characters; at most {REASON_MAX} are kept.", field="reason")
    return reason


def _entry(submission: Submission) -> dict:
    return {"submission": submission.pk, "method_name": submission.method_name, "team": submission.team.name}


def submission_moderate(*, submission: Submission, user: User, state: str, reason: str) -> Submission:
    """Disqualify or hide one submission (``state``: a :class:`~leaderboard.choices.Moderation`)."""
    reason = _checked(challenge=submission.challenge, user=user, state=state, reason=reason, required=True)
    with transaction.atomic():
        submission = Submission.objects.select_for_update().select_related("team", "challenge").get(pk=submission.pk)
        previous = submission.moderation
        submission.moderation, submission.moderation_reason = state, reason
        submission.moderated_by, submission.moderated_at = user, timezone.now()
        submission.save(update_fields=["moderation", "moderation_reason", "moderated_by", "moderated_at"])
        audit_record(
            challenge=submission.challenge,
            actor=user,
            action=f"entry_{state}",
            reason=reason,
            previous=previous or None,
            **_entry(submission),
        )
    report_request_after(submission=submission)
    return submission


def submission_restore(*, submission: Submission, user: User, reason: str = "") -> Submission:
    """Undo a submission's own moderation (a team's is undone by :func:`team_restore`)."""
    reason = _checked(challenge=submission.challenge, user=user, state=None, reason=reason, required=False)
    with transaction.atomic():
        submission = Submission.objects.select_for_update().select_related("team", "challenge").get(pk=submission.pk)
        if not submission.moderation:
            raise ServiceError(
                f"Submission {submission.pk} is not disqualified or hidden: there is nothing to "
                "restore (a team's moderation is restored on the team)."
            )
        previous = submission.moderation
        submission.moderation, submission.moderation_reason = "", ""
        submission.moderated_by, submission.moderated_at = user, timezone.now()
        submission.save(update_fields=["moderation", "moderation_reason", "moderated_by", "moderated_at"])
        audit_record(
            challenge=submission.challenge,
            actor=user,
            action="entry_restored",
            reason=reason,
            previous=previous,
            **_entry(submission),
        )
    report_request_after(submission=submission)
    return submission


def submissions_moderate(*, submissions: Iterable[Submission], user: User, state: str | None, reason: str) -> int:
    """Moderate (``state``) or restore (``state`` None) each submission that needs it; how many changed.

    Every submission is checked first, so a refusal changes none of them."""
    submissions = list(submissions)
    for submission in submissions:
        _checked(challenge=submission.challenge, user=user, state=state, reason=reason, required=state is not None)
    changed = [s for s in submissions if (s.moderation != state if state else bool(s.moderation))]
    with transaction.atomic():
        for submission in changed:
            if state:
                submission_moderate(submission=submission, user=user, state=state, reason=reason)
            else:
                submission_restore(submission=submission, user=user, reason=reason)
    return len(changed)


def team_moderate(*, challenge: Challenge, team: Team, user: User, state: str, reason: str) -> TeamModeration:
    """Disqualify or hide a whole team on ``challenge``: every submission of it, later ones too."""
    reason = _checked(challenge=challenge, user=user, state=state, reason=reason, required=True)
    if not Submission.objects.filter(challenge=challenge, team=team).exists():
        raise ServiceError(f"Team {team.name!r} has no submission on this challenge.", field="team")
    with transaction.atomic():
        moderation, created = TeamModeration.objects.select_for_update().get_or_create(
            challenge=challenge, team=team, defaults={"state": state, "reason": reason, "moderated_by": user}
        )
        previous = None if created else moderation.state
        if not created:
            moderation.state, moderation.reason = state, reason
            moderation.moderated_by, moderation.moderated_at = user, timezone.now()
            moderation.save()
        audit_record(
            challenge=challenge,
            actor=user,
            action=f"team_{state}",
            team=team.name,
            team_id=team.pk,
            reason=reason,
            previous=previous,
        )
    report_request_after_team(challenge=challenge, team_id=team.pk)
    return moderation


def team_restore(*, challenge: Challenge, team: Team, user: User, reason: str = "") -> None:
    """Undo a team's moderation on ``challenge`` (its submissions' own moderations stay)."""
    reason = _checked(challenge=challenge, user=user, state=None, reason=reason, required=False)
    with transaction.atomic():
        moderation = TeamModeration.objects.select_for_update().filter(challenge=challenge, team=team).first()
        if moderation is None:
            raise ServiceError(
                f"Team {team.name!r} is not disqualified or hidden on this challenge: there is nothing to restore."
            )
        moderation.delete()
        audit_record(
            challenge=challenge,
            actor=user,
            action="team_restored",
            team=team.name,
            team_id=team.pk,
            reason=reason,
            previous=moderation.state,
        )
    report_request_after_team(challenge=challenge, team_id=team.pk)
