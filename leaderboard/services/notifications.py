"""Notifications: e-mails to contestants and webhooks to hosts, sent from an outbox of events.

A service that changes what someone should hear about records an :class:`~leaderboard.models.Event`
in its own transaction (``event_record``): a submission scored or failed, a private board revealed
(by a host, or when a phase with ``auto_reveal`` closes: the janitor notices that), a user invited to a
team (mailed to the invitee only: a team's event goes to no challenge's webhooks). The event's key
makes it happen once however often its cause is seen. After commit a task on the scoring queue
(``tasks.notifications.process_event``) mails the users who want to hear (each can turn every kind
off on their account page: ``Profile``) and creates one signed delivery per webhook of the
challenge (``services.webhooks``). Nothing is sent from a web request; events a lost broker never
delivered are sent again by the janitor (``notifications_heal``).
"""

from __future__ import annotations

import logging
import smtplib
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import send_mass_mail
from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from ..choices import SubmissionStatus, Visibility
from ..models import Challenge, Event, Membership, Phase, Profile, Submission, TeamInvitation, WebhookDelivery
from . import dispatch
from .boards import board_private_revealed
from .dispatch import DELIVER_WEBHOOK, PROCESS_EVENT, enqueue_on_commit
from .errors import PlatformError, ServiceError
from .reports import report_request
from .webhooks import deliveries_create

logger = logging.getLogger(__name__)

PREFERENCE_OF = {
    Event.Kind.SUBMISSION_SCORED: "notify_scored",
    Event.Kind.SUBMISSION_FAILED: "notify_failed",
    Event.Kind.BOARD_REVEALED: "notify_revealed",
    Event.Kind.TEAM_INVITED: "notify_invited",
}
PREFERENCES = tuple(PREFERENCE_OF.values())


def profile_for(*, user: User) -> Profile:
    """The user's settings (created with every notification on at first use)."""
    profile, _ = Profile.objects.get_or_create(user=user)
    return profile


def profile_update(*, user: User, **preferences: bool) -> Profile:
    """Turn notification kinds on or off (the names of :data:`PREFERENCES`)."""
    unknown = sorted(set(preferences) - set(PREFERENCES))
    if unknown:
        raise ServiceError(f"Unknown notification settings: {unknown}; choose from {list(PREFERENCES)}.")
    profile = profile_for(user=user)
    for name, value in preferences.items():
        setattr(profile, name, bool(value))
    profile.save(update_fields=list(preferences) or None)
    return profile


def event_record(
    *,
    kind: str,
    challenge: Challenge | None = None,
    submission: Submission | None = None,
    invitation: TeamInvitation | None = None,
) -> Event | None:
    """Record an event once (by key) and process it after commit; None when it was recorded before."""
    about = submission or invitation or challenge
    event, created = Event.objects.get_or_create(
        key=f"{kind}:{about.pk}",
        defaults={"kind": kind, "challenge": challenge, "submission": submission, "invitation": invitation},
    )
    if not created:
        return None
    enqueue_on_commit(PROCESS_EVENT, event.pk)
    return event


def submission_ended_record(*, submission: Submission) -> Event | None:
    """The event of a submission that has just been scored or failed."""
    kind = {
        SubmissionStatus.SCORED: Event.Kind.SUBMISSION_SCORED,
        SubmissionStatus.FAILED: Event.Kind.SUBMISSION_FAILED,
    }.get(submission.status)
    if kind is None:
        return None
    return event_record(kind=kind, challenge=submission.challenge, submission=submission)


def _absolute(path: str) -> str:
    return settings.SITE_URL + path


def event_payload(*, event: Event) -> dict:
    """The JSON body of the event's webhook deliveries."""
    challenge = event.challenge
    payload = {
        "id": event.key,
        "event": event.kind,
        "created": event.created.isoformat(),
        "challenge": {"slug": challenge.slug, "title": challenge.title, "url": _absolute(challenge.get_absolute_url())},
    }
    if event.submission_id:
        submission = event.submission
        runs = list(submission.runs.values_list("status", flat=True))
        payload["submission"] = {
            "id": submission.pk,
            "method_name": submission.method_name,
            "team": submission.team.name,
            "kind": submission.kind,
            "status": submission.status,
            "error_message": submission.error_message,
            "runs_expected": submission.runs_expected,
            "runs_succeeded": runs.count("succeeded"),
            "url": _absolute(submission.get_absolute_url()),
        }
    return payload


def _recipients(event: Event) -> list[User]:
    """Active users with an address who want this kind of event: the invitee, the submitting team, or every
    contestant."""
    if event.invitation_id:
        users = User.objects.filter(pk=event.invitation.invitee_id)
    elif event.submission_id:
        users = User.objects.filter(membership__team_id=event.submission.team_id)
    else:
        teams = Submission.objects.filter(challenge_id=event.challenge_id).values("team_id")
        users = User.objects.filter(pk__in=Membership.objects.filter(team_id__in=teams).values("user_id"))
    if event.challenge_id and event.challenge.visibility != Visibility.PUBLIC:
        # A private challenge is its hosts' business: a team member who may not see it (a host's baseline entered
        # it with a team a contestant shares) is not mailed its title and link.
        users = users.filter(hosted_challenges=event.challenge_id)
    preference = PREFERENCE_OF[event.kind]
    wanted = Q(profile__isnull=True) | Q(**{f"profile__{preference}": True})
    return list(users.filter(wanted, is_active=True).exclude(email="").distinct().order_by("pk"))


def _message(event: Event) -> tuple[str, str]:
    """(subject, body) of the event's mail."""
    challenge = event.challenge
    settings_url = _absolute(reverse("account"))
    if event.kind == Event.Kind.TEAM_INVITED:
        invitation = event.invitation
        team, inviter = invitation.team.name, invitation.invited_by.username
        subject = f"[varboard] {inviter} invited you to the team “{team}”"
        text = (
            f"{inviter} invited you to join the team “{team}”. You become a member only if you accept; "
            f"accept or decline it on your account page:\n{settings_url}\n"
        )
    elif event.kind == Event.Kind.BOARD_REVEALED:
        subject = f"[varboard] {challenge.title}: the private board is revealed"
        text = (
            f"The hosts of “{challenge.title}” have revealed its private board.\n"
            f"{_absolute(challenge.get_absolute_url())}?board=private\n"
        )
    else:
        submission = event.submission
        verb = "was scored" if event.kind == Event.Kind.SUBMISSION_SCORED else "failed"
        subject = f"[varboard] {challenge.title}: submission {submission.pk} {verb}"
        text = f"Submission {submission.pk} (“{submission.method_name}”) to “{challenge.title}” {verb}.\n"
        if submission.error_message:
            text += f"\n{submission.error_message}\n"
        text += f"\n{_absolute(submission.get_absolute_url())}\n"
    return subject, f"{text}\nYou can turn these e-mails off on your account page: {settings_url}\n"


def event_process(*, event_id: int) -> int:
    """Mail the event's recipients and create its webhook deliveries, once; how many mails were sent."""
    with transaction.atomic():
        event = (
            Event.objects.select_for_update(of=("self",))
            .select_related("challenge", "submission__team", "invitation__team", "invitation__invited_by")
            .filter(pk=event_id, processed_at__isnull=True)
            .first()
        )
        if event is None:
            return 0
        if event.challenge_id:  # a team's event (an invitation) is nobody's webhook business
            deliveries_create(event=event, payload=event_payload(event=event))
        subject, body = _message(event)
        mails = [(subject, body, settings.DEFAULT_FROM_EMAIL, [user.email]) for user in _recipients(event)]
        try:
            sent = send_mass_mail(mails, fail_silently=False) if mails else 0
        except (OSError, smtplib.SMTPException) as exc:  # the mail server: retried by the task
            raise PlatformError(f"could not send the mails of {event.key}: {exc}") from exc
        event.processed_at = timezone.now()
        event.save(update_fields=["processed_at"])
    return sent


def reveals_record_due(*, now=None) -> int:
    """Events for private boards revealed by a phase with ``auto_reveal`` closing (no host acted), and their
    boards' recomputation (:func:`services.entries.selection_on_public_board`)."""
    now = now or timezone.now()
    due = (
        Phase.objects.filter(auto_reveal=True, closes_at__lte=now, challenge__public_fraction__lt=1)
        .exclude(challenge__events__kind=Event.Kind.BOARD_REVEALED)
        .values_list("challenge_id", flat=True)
    )
    recorded = 0
    for challenge in Challenge.objects.filter(pk__in=list(due)):
        if not board_private_revealed(challenge=challenge, now=now):  # a later phase is still open
            continue
        with transaction.atomic():
            if event_record(kind=Event.Kind.BOARD_REVEALED, challenge=challenge) is not None:
                recorded += 1
                report_request(challenge_id=challenge.pk)  # the public board may show the teams' choices now
    return recorded


def notifications_heal(*, now=None, publisher: dispatch.Publisher | None = None) -> int:
    """Resend events and webhook deliveries left behind (their task was lost) when the scoring queue is empty;
    ``publisher``: the janitor pass's (its first refusal ends the pass's publishing)."""
    now = now or timezone.now()
    publisher = publisher or dispatch.Publisher()
    stale_before = now - timedelta(seconds=settings.VARBOARD["REQUEUE_AFTER_S"])
    events = list(
        Event.objects.filter(processed_at__isnull=True, created__lt=stale_before).values_list("pk", flat=True)
    )
    deliveries = list(
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING, next_attempt_at__lt=stale_before
        ).values_list("pk", flat=True)
    )
    if not (events or deliveries) or (dispatch.queue_lengths(["scoring"]) or {}).get("scoring") != 0:
        return 0
    return sum(
        publisher.send(task_name, (pk,), queue="scoring")
        for task_name, ids in ((PROCESS_EVENT, events), (DELIVER_WEBHOOK, deliveries))
        for pk in ids
    )
