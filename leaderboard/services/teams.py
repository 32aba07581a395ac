"""Teams: a user alone is a team of one; others join a team by accepting an invitation.

Nobody is made a member without their consent: a member invites (``team_invite``), and the
invitee accepts or declines (``invitation_decide``) on their account page or through the API. The
invitee is mailed about the invitation (``services.notifications``; each user can turn it off).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import Event, Membership, Team, TeamInvitation
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
            Membership.objects.get_or_create(team=invitation.team, user=user)
    return invitation


def invitation_cancel(*, invitation: TeamInvitation, user: User) -> TeamInvitation:
    """A member of the team withdraws a pending invitation."""
    if not invitation.team.members.filter(pk=user.pk).exists():
        raise NotAllowed("Only members of the team can cancel its invitations.")
    updated = TeamInvitation.objects.filter(pk=invitation.pk, status=TeamInvitation.Status.PENDING).update(
        status=TeamInvitation.Status.CANCELLED, decided_at=timezone.now())
    if not updated:
        raise ServiceError("Only a pending invitation can be cancelled.")
    invitation.refresh_from_db()
    return invitation


def team_for_submission(*, user: User, team_id: int | None) -> Team:
    """The team a user submits for: the named team (if a member) or their personal team."""
    if team_id is None:
        return team_personal_for(user=user)
    team = Team.objects.filter(pk=team_id, membership__user=user).first()
    if team is None:
        raise NotAllowed(f"You are not a member of team {team_id}.")
    return team
