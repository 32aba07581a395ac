"""What a challenge's hosts do with the entries: download what was submitted, and moderate entries and teams.

``GET /api/submissions/{id}/download/`` (hosts and the submitting team; 404 for anyone else),
``GET|POST|DELETE /api/submissions/{id}/moderation/`` and ``POST|DELETE
/api/challenges/{slug}/teams/{team_id}/moderation/`` (hosts; the team reads its own). Each is one
call of ``leaderboard.downloads`` or ``leaderboard.services.moderation``.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated, IsAuthenticatedOrReadOnly
from rest_framework.response import Response
from rest_framework.views import APIView

from ..choices import Moderation
from ..downloads import SUBMISSION_CONTENT_TYPES, submission_download
from ..models import Submission, Team
from ..selectors import (
    challenge_list_visible,
    submission_can_see_details,
    submission_moderation,
    submission_readable_get,
)
from ..services.moderation import (
    REASON_MAX,
    moderation_allowed,
    submission_moderate,
    submission_restore,
    team_moderate,
    team_restore,
)
from .inputs import ChoiceField, StrictInput, StrictQuery, takes_query
from .paging import whole

FILE_PARAMETER = OpenApiParameter(
    "file",
    whole(),
    required=False,
    description="A prediction file's index (0 to k-1). Without it: the recipe, the one prediction file, or "
    "all of them as one zip archive.",
)
REASON_PARAMETER = OpenApiParameter(
    "reason", OpenApiTypes.STR, required=False, description="Why the moderation is undone (kept in the audit log)."
)


class ModerateSerializer(StrictInput, serializers.Serializer):
    state = ChoiceField(choices=Moderation.choices, help_text="`disqualified` or `hidden`.")
    reason = serializers.CharField(max_length=REASON_MAX, help_text="Why; the entry's team reads it.")


class ModerationSerializer(serializers.Serializer):
    """The moderation in force on an entry (``state`` null: none)."""

    state = ChoiceField(choices=Moderation.choices, allow_null=True)
    reason = serializers.CharField(allow_blank=True)
    scope = ChoiceField(
        choices=["entry", "team"],
        allow_null=True,
        help_text="`entry`: this submission's own; `team`: its team's on the challenge.",
    )
    moderated_at = serializers.DateTimeField(allow_null=True)


class TeamModerationSerializer(serializers.Serializer):
    team = serializers.CharField(source="team.name")
    team_id = serializers.IntegerField()
    state = ChoiceField(choices=Moderation.choices)
    reason = serializers.CharField()
    moderated_at = serializers.DateTimeField()


def _submission(request, pk: int) -> Submission:
    """A submission the user may open (404 otherwise: a hidden one looks like none)."""
    submission = submission_readable_get(user=request.user, pk=pk, related=("challenge", "team"))
    if submission is None:
        raise Http404("No submission here.")
    return submission


def _moderation_of(submission: Submission) -> dict:
    return submission_moderation(submission=submission) or {
        "state": None,
        "reason": "",
        "scope": None,
        "moderated_at": None,
    }


class SubmissionDownloadView(StrictQuery, APIView):
    """A submission's files as submitted, for the challenge's hosts and the submitting team (404 for anyone
    else, signed in or not: the files' existence is theirs)."""

    permission_classes = [IsAuthenticatedOrReadOnly]

    @takes_query(
        [FILE_PARAMETER],
        responses={(200, media): OpenApiTypes.BINARY for media in SUBMISSION_CONTENT_TYPES.values()},
        description="Download what was submitted: the recipe, a prediction file (`file`), or all the "
        "prediction files as a zip archive. Hosts and the submitting team only (404 for "
        "anyone else); each download is recorded in the challenge's audit log.",
    )
    def get(self, request, pk: int):
        return submission_download(
            submission=_submission(request, pk), user=request.user, file=request.query_params.get("file")
        )


class SubmissionModerationView(APIView):
    """Disqualify or hide one entry (a submission), or restore it (hosts); its team reads the state."""

    permission_classes = [IsAuthenticated]

    def get_permissions(self):
        return [IsAuthenticatedOrReadOnly()] if self.request.method == "GET" else super().get_permissions()

    @extend_schema(
        responses=ModerationSerializer,
        description="The moderation in force on this submission (its own, else its team's): the "
        "hosts and the submitting team.",
    )
    def get(self, request, pk: int):
        submission = _submission(request, pk)
        if not submission_can_see_details(user=request.user, submission=submission):
            raise Http404("No submission here.")
        return Response(ModerationSerializer(_moderation_of(submission)).data)

    @extend_schema(
        request=ModerateSerializer,
        responses=ModerationSerializer,
        description="Disqualify or hide this submission (hosts), with a reason: it leaves the public "
        "and the private board, and its team reads the state and the reason.",
    )
    def post(self, request, pk: int):
        submission = _submission(request, pk)
        moderation_allowed(challenge=submission.challenge, user=request.user)
        incoming = ModerateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        submission = submission_moderate(submission=submission, user=request.user, **incoming.validated_data)
        return Response(ModerationSerializer(_moderation_of(submission)).data)

    @extend_schema(
        parameters=[REASON_PARAMETER],
        responses={200: ModerationSerializer},
        description="Restore this submission (hosts): undo its own moderation.",
    )
    def delete(self, request, pk: int):
        submission = submission_restore(
            submission=_submission(request, pk), user=request.user, reason=request.query_params.get("reason", "")
        )
        return Response(ModerationSerializer(_moderation_of(submission)).data)


class TeamModerationView(APIView):
    """Disqualify or hide a whole team on a challenge, or restore it (hosts)."""

    permission_classes = [IsAuthenticated]

    def _target(self, request, slug: str, team_id: int):
        """The challenge and the team, once the requester is one of its hosts: the team looked up first answered a
        contestant 404 for a team id that does not exist and 403 for one that does. Among the teams with a submission
        on the challenge (its hosts read them all): anyone may host a challenge of their own, and a team looked up
        among all of them was named in the refusal ("Team 'Secret' has no submission ...", tests/platform/
        test_leaks_v7.py), every team's name by its id."""
        challenge = get_object_or_404(challenge_list_visible(user=request.user), slug=slug)
        moderation_allowed(challenge=challenge, user=request.user)
        entered = Team.objects.filter(pk__in=Submission.objects.filter(challenge=challenge).values("team_id"))
        return challenge, get_object_or_404(entered, pk=team_id)

    @extend_schema(
        request=ModerateSerializer,
        responses=TeamModerationSerializer,
        description="Disqualify or hide every entry of the team on this challenge, later ones too "
        "(hosts), with a reason its members read.",
    )
    def post(self, request, slug: str, team_id: int):
        challenge, team = self._target(request, slug, team_id)
        incoming = ModerateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        moderation = team_moderate(challenge=challenge, team=team, user=request.user, **incoming.validated_data)
        return Response(TeamModerationSerializer(moderation).data)

    @extend_schema(
        parameters=[REASON_PARAMETER], responses={204: None}, description="Restore the team on this challenge (hosts)."
    )
    def delete(self, request, slug: str, team_id: int):
        challenge, team = self._target(request, slug, team_id)
        team_restore(challenge=challenge, team=team, user=request.user, reason=request.query_params.get("reason", ""))
        return Response(status=status.HTTP_204_NO_CONTENT)
