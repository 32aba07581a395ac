"""Teams: a user alone is a team of one; others join a team by accepting an invitation.

Nobody is made a member without their consent: a member invites (``team_invite``), and the
invitee accepts or declines (``invitation_decide``) on their account page or through the API. The
invitee is mailed about the invitation (``services.notifications``; each user can turn it off).

Teams are global (one team may enter many challenges), so "one team per person per challenge" (as
on Kaggle) is enforced where a team enters a challenge: a team may submit to a challenge only while
none of its members takes part in it with another team (has submitted there, or is in a team that
has), and an invitation is refused when accepting it would put the invitee in two teams of one
challenge. Otherwise a person could make a fresh team per probe and read a new Ladder release each
time (issue 21).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from ..choices import SubmissionStatus
from ..models import Challenge, Event, Membership, Submission, Team, TeamInvitation
from .errors import NotAllowed, ServiceError
from .notifications import event_record


def team_personal_for(*, user: User) -> Team:
    """The user's personal team (created on first use).

    Concurrent first submissions of one user lock the user's row, so exactly one personal
    team is created (two would each have their own quota).
    """
    team = Team.objects.filter(is_personal=True, membership__user=user).first()
    if team is not None:
        return team
    with transaction.atomic():
        User.objects.select_for_update().get(pk=user.pk)
        team = Team.objects.filter(is_personal=True, membership__user=user).first()
        if team is not None:
            return team
        name = user.username
        suffix = 1
        while Team.objects.filter(name=name).exists():
            suffix += 1
            name = f"{user.username}-{suffix}"
        team = Team.objects.create(name=name, is_personal=True)
        Membership.objects.create(team=team, user=user)
    return team


def team_create(*, name: str, creator: User) -> Team:
    name = name.strip()
    if not name:
        raise ServiceError("A team needs a name.", field="name")
    try:
        with transaction.atomic():
            team = Team.objects.create(name=name)
            Membership.objects.create(team=team, user=creator)
    except IntegrityError:
        raise ServiceError(f"A team named {name!r} exists already.", field="name") from None
    return team


def team_invite(*, team: Team, user: User, invited_by: User) -> TeamInvitation:
    """Invite ``user`` to ``team`` (members only): they join only when they accept it."""
    if team.is_personal:
        raise ServiceError("A personal team has exactly one member; create a team to invite others.", field="team")
    if not team.members.filter(pk=invited_by.pk).exists():
        raise NotAllowed("Only members of a team can invite others to it.")
    if team.members.filter(pk=user.pk).exists():
        raise ServiceError(f"{user.username} is a member of “{team.name}” already.", field="username")
    try:
        with transaction.atomic():
            invitation = TeamInvitation.objects.create(team=team, invitee=user, invited_by=invited_by)
            event_record(kind=Event.Kind.TEAM_INVITED, invitation=invitation)  # mailed after commit
            return invitation
    except IntegrityError:
        raise ServiceError(f"{user.username} has been invited to “{team.name}” already.", field="username") from None


def invitation_decide(*, invitation: TeamInvitation, user: User, accept: bool) -> TeamInvitation:
    """The invitee accepts (and becomes a member) or declines a pending invitation."""
    if invitation.invitee_id != user.pk:
        raise NotAllowed("Only the invited user can accept or decline an invitation.")
    with transaction.atomic():
        invitation = TeamInvitation.objects.select_for_update().get(pk=invitation.pk)
        if invitation.status != TeamInvitation.Status.PENDING:
            raise ServiceError(f"This invitation is {invitation.status} already.")
        invitation.status = TeamInvitation.Status.ACCEPTED if accept else TeamInvitation.Status.DECLINED
        invitation.decided_at = timezone.now()
        invitation.save(update_fields=["status", "decided_at"])
        if accept:
            _check_no_second_team(team=invitation.team, users=[user], joining=True)
            Membership.objects.get_or_create(team=invitation.team, user=user)
    return invitation


def invitation_cancel(*, invitation: TeamInvitation, user: User) -> TeamInvitation:
    """A member of the team withdraws a pending invitation."""
    if not invitation.team.members.filter(pk=user.pk).exists():
        raise NotAllowed("Only members of the team can cancel its invitations.")
    updated = TeamInvitation.objects.filter(pk=invitation.pk, status=TeamInvitation.Status.PENDING).update(
        status=TeamInvitation.Status.CANCELLED, decided_at=timezone.now()
    )
    if not updated:
        raise ServiceError("Only a pending invitation can be cancelled.")
    invitation.refresh_from_db()
    return invitation


def _challenge_named(challenge: Challenge, user: User) -> str:
    """The challenge as a refusal names it to ``user``: its title where they may see it, else "a challenge" (a team's
    entry to a private challenge, a host's baseline say, is no other member's business: selectors.submission_list_for)."""
    from ..selectors import challenge_list_visible

    if challenge_list_visible(user=user).filter(pk=challenge.pk).exists():
        return f"“{challenge.title}”"
    return "a challenge you cannot see"


def team_leave(*, team: Team, user: User) -> Team | None:
    """``user`` leaves ``team``; an empty team with no submissions is deleted. Returns the team, or None.

    A personal team cannot be left, nor a team that has entered a challenge (a submission not
    cancelled): leaving then joining another team would be a second team in that challenge (issue 21).
    """
    if team.is_personal:
        raise ServiceError("A personal team cannot be left: it is you.", field="team")
    with transaction.atomic():
        Team.objects.select_for_update().get(pk=team.pk)
        if not Membership.objects.filter(team=team, user=user).exists():
            raise NotAllowed(f"You are not a member of “{team.name}”.")
        entered = (
            Submission.objects.filter(team=team)
            .exclude(status=SubmissionStatus.CANCELLED)
            .select_related("challenge")
            .first()
        )
        if entered is not None:
            raise ServiceError(
                f"“{team.name}” has entered {_challenge_named(entered.challenge, user)}: a team's members cannot "
                "leave it once it has submitted (one team per person per challenge).",
                field="team",
            )
        Membership.objects.filter(team=team, user=user).delete()
        if not Membership.objects.filter(team=team).exists() and not Submission.objects.filter(team=team).exists():
            team.delete()  # an empty team with no entries (cancelled ones keep it, as a record)
            return None
    return team


def team_for_submission(*, user: User, team_id: int | None, challenge: Challenge | None = None) -> Team:
    """The team a user submits for: the named team (if a member) or their personal team.

    With ``challenge``, the team must be the only team each of its members takes part in there.
    """
    if team_id is None:
        team = team_personal_for(user=user)
    else:
        team = Team.objects.filter(pk=team_id, membership__user=user).first()
        if team is None:
            raise NotAllowed(f"You are not a member of team {team_id}.")
    if challenge is not None:
        _check_no_second_team(team=team, users=list(team.members.all()), challenge=challenge, requester=user)
    return team


def team_lock_for_entry(*, team: Team, user: User, challenge: Challenge) -> None:
    """Inside a transaction: lock the team and every member's user row, then check the one-team rule again.

    :func:`team_for_submission` checks early, for a clear error before any file is read; this
    repeats it under the locks, so that two first submissions racing for two teams that share a
    member cannot both get in. Rows are locked in primary-key order (no deadlock).
    """
    Team.objects.select_for_update().get(pk=team.pk)
    ids = set(team.members.values_list("pk", flat=True)) | {user.pk}
    members = list(User.objects.select_for_update().filter(pk__in=ids).order_by("pk"))
    _check_no_second_team(team=team, users=members, challenge=challenge, requester=user)


def _check_no_second_team(
    *,
    team: Team,
    users: list[User],
    challenge: Challenge | None = None,
    joining: bool = False,
    requester: User | None = None,
) -> None:
    """NotAllowed when one of ``users`` takes part, with another team, in a challenge ``team`` enters.

    A person takes part in a challenge with a team once they have submitted there for it, or
    belong to it while it has submissions there (cancelled ones aside). ``challenge``: the one
    ``team`` is entering now; otherwise every challenge ``team`` has submitted to. ``requester``,
    the member submitting: their own other team is named first, to them ("You take part ...
    Submit with ..."); another member's is named without advising a team the requester is not in.
    """
    ids = [u.pk for u in users]
    entered = Submission.objects.exclude(status=SubmissionStatus.CANCELLED)
    if challenge is not None:
        challenges = [challenge.pk]
    else:
        challenges = list(entered.filter(team=team).values_list("challenge_id", flat=True).distinct())
    if not challenges or not ids:
        return

    def first_other(user_ids: list[int]) -> Submission | None:
        return (
            entered.filter(challenge_id__in=challenges)
            .filter(Q(submitted_by_id__in=user_ids) | Q(team__membership__user_id__in=user_ids))
            .exclude(team=team)
            .select_related("team", "challenge", "submitted_by")
            .order_by("created")
            .first()
        )

    mine = first_other([requester.pk]) if requester is not None and requester.pk in ids else None
    other = mine or first_other(ids)
    if other is None:
        return
    person = (
        other.submitted_by
        if other.submitted_by_id in ids
        else User.objects.filter(pk__in=ids, membership__team=other.team).first()
    )
    yours = joining or len(ids) == 1 or person is None or mine is not None
    who = "You take" if yours else f"{person.username} takes"
    advice = f" Submit with “{other.team.name}” there." if yours or requester is None else ""
    # Another member's other team is named to its members only: who is in it, and that it entered (an entry still
    # queued or failed, which nobody else may open), are no business of the submitter (tests/platform/test_leaks_v7.py)
    theirs = yours or other.team.membership_set.filter(user=requester).exists()
    with_team = f"the team “{other.team.name}”" if theirs else "another team"
    raise NotAllowed(
        f"{who} part in {_challenge_named(other.challenge, requester or users[0])} with {with_team} already: a person "
        f"is in one team per challenge (as on Kaggle), so “{team.name}” cannot "
        f"{'be joined' if joining else 'submit there'} while that holds.{advice}"
    )
