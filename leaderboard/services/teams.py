"""Teams: a user alone is a team of one."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from ..models import Membership, Team
from .errors import NotAllowed, ServiceError


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


def team_add_member(*, team: Team, user: User, added_by: User) -> Membership:
    if team.is_personal:
        raise ServiceError("A personal team has exactly one member.")
    if not team.members.filter(pk=added_by.pk).exists():
        raise NotAllowed("Only members of a team can add members to it.")
    membership, _ = Membership.objects.get_or_create(team=team, user=user)
    return membership


def team_for_submission(*, user: User, team_id: int | None) -> Team:
    """The team a user submits for: the named team (if a member) or their personal team."""
    if team_id is None:
        return team_personal_for(user=user)
    team = Team.objects.filter(pk=team_id, membership__user=user).first()
    if team is None:
        raise NotAllowed(f"You are not a member of team {team_id}.")
    return team
