"""Teams and invitations, notification settings and the hosts' webhooks, over the API.

A member invites (``POST /api/teams/{id}/invitations/``); the invitee accepts or declines
(``POST /api/invitations/{id}/accept/`` or ``decline/``); nobody joins a team without consenting.
A member leaves with ``POST /api/teams/{id}/leave/`` while the team has not submitted.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from ..models import Membership, Profile, Team, TeamInvitation, Webhook, WebhookDelivery
from ..selectors import challenge_list_visible, team_invitations_visible, user_is_host, user_teams
from ..services.errors import NotAllowed, ServiceError
from ..services.notifications import PREFERENCES, profile_for, profile_update
from ..services.teams import (
    invitation_cancel,
    invitation_decide,
    team_create,
    team_invite,
    team_leave,
    team_personal_for,
)
from ..services.webhooks import webhook_create, webhook_delete
from .filters import InvitationFilter, filtered
from .inputs import StrictInput, StrictQuery, refuse_unknown_fields, takes_query
from .paging import StrictLimitOffsetPagination, page_of
from .report_schema import INVITATION_FILTERS
from .schema import error_responses


class TeamSerializer(StrictInput, serializers.ModelSerializer):
    members = serializers.SerializerMethodField()

    class Meta:
        model = Team
        fields = ["id", "name", "is_personal", "members", "created"]
        read_only_fields = ["id", "is_personal", "members", "created"]

    def get_members(self, team) -> list[str]:
        return [m.user.username for m in getattr(team, "memberships", team.membership_set.select_related("user"))]


class InvitationSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="team.name", read_only=True)
    team_id = serializers.IntegerField(read_only=True)
    invitee = serializers.CharField(source="invitee.username", read_only=True)
    invited_by = serializers.CharField(source="invited_by.username", read_only=True)

    class Meta:
        model = TeamInvitation
        fields = ["id", "team", "team_id", "invitee", "invited_by", "status", "created", "decided_at"]


class InviteSerializer(StrictInput, serializers.Serializer):
    username = serializers.CharField(max_length=150)


class NotificationSettingsSerializer(StrictInput, serializers.ModelSerializer):
    class Meta:
        model = Profile
        fields = list(PREFERENCES)


class WebhookSerializer(serializers.ModelSerializer):
    secret = serializers.CharField(read_only=True, help_text="Key of the Varboard-Signature HMAC-SHA256.")

    class Meta:
        model = Webhook
        fields = ["id", "url", "secret", "active", "created"]
        read_only_fields = ["id", "secret", "active", "created"]


class DeliverySerializer(serializers.ModelSerializer):
    event = serializers.CharField(source="event.key", read_only=True)

    class Meta:
        model = WebhookDelivery
        fields = ["id", "event", "status", "attempts", "response_status", "last_error", "created", "delivered_at"]


def _teams(user):
    members = Membership.objects.select_related("user").order_by("user__username")
    return user_teams(user=user).prefetch_related(Prefetch("membership_set", queryset=members, to_attr="memberships"))


class TeamListView(StrictQuery, APIView):
    """``GET /api/teams/``: your teams; ``POST``: create one (you are its first member)."""

    permission_classes = [IsAuthenticated]
    pagination_class = StrictLimitOffsetPagination

    @takes_query(paged=True, responses=TeamSerializer(many=True))
    def get(self, request):
        """Your teams, your personal team first."""
        team_personal_for(user=request.user)
        return page_of(self, request, _teams(request.user).order_by("-is_personal", "name"), TeamSerializer)

    @extend_schema(request=TeamSerializer, responses={201: TeamSerializer})
    def post(self, request):
        """Create a team; you are its first member."""
        incoming = TeamSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        team = team_create(name=incoming.validated_data["name"], creator=request.user)
        return Response(TeamSerializer(_teams(request.user).get(pk=team.pk)).data, status=201)


class TeamInviteView(APIView):
    """``POST /api/teams/{id}/invitations/``: invite a user by name (members only); they accept or decline.

    The team is looked up among the requester's own (404 for any other, as ``leave/``): looked up among every team,
    a team id that exists answered 403 (400 for a personal team) and one that does not 404, to anyone."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=InviteSerializer, responses={201: InvitationSerializer})
    def post(self, request, pk: int):
        team = get_object_or_404(user_teams(user=request.user), pk=pk)
        incoming = InviteSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        username = incoming.validated_data["username"].strip()
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise ServiceError(f"There is no user named {username!r}.", field="username")
        invitation = team_invite(team=team, user=user, invited_by=request.user)
        return Response(InvitationSerializer(invitation).data, status=201)


class TeamLeaveView(APIView):
    """``POST /api/teams/{id}/leave/``: leave a team (not your personal one, nor one that has submitted)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={204: None, **error_responses(400)})
    def post(self, request, pk: int):
        """Leave the team; it is deleted when it has no members and no submissions left."""
        team_leave(team=get_object_or_404(user_teams(user=request.user), pk=pk), user=request.user)
        return Response(status=204)


class InvitationListView(StrictQuery, APIView):
    """``GET /api/invitations/``: invitations to you and those your teams sent (``?status=pending``)."""

    permission_classes = [IsAuthenticated]
    pagination_class = StrictLimitOffsetPagination

    @takes_query(INVITATION_FILTERS, paged=True, responses=InvitationSerializer(many=True))
    def get(self, request):
        invitations = filtered(InvitationFilter, request, team_invitations_visible(user=request.user)).order_by(
            "-created"
        )
        return page_of(self, request, invitations, InvitationSerializer)


class InvitationActionView(APIView):
    """``POST /api/invitations/{id}/accept/``, ``decline/`` (the invitee) or ``cancel/`` (a member of the team)."""

    permission_classes = [IsAuthenticated]
    action: str = "accept"

    @extend_schema(request=None, responses=InvitationSerializer)
    def post(self, request, pk: int):
        invitation = get_object_or_404(team_invitations_visible(user=request.user), pk=pk)
        if self.action == "cancel":
            invitation = invitation_cancel(invitation=invitation, user=request.user)
        else:
            invitation = invitation_decide(invitation=invitation, user=request.user, accept=self.action == "accept")
        return Response(InvitationSerializer(invitation).data)


class NotificationSettingsView(APIView):
    """``GET /api/account/notifications/``: which e-mails you get; ``PATCH``: turn some off or on."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=NotificationSettingsSerializer)
    def get(self, request):
        """Which e-mails you get."""
        return Response(NotificationSettingsSerializer(profile_for(user=request.user)).data)

    @extend_schema(request=NotificationSettingsSerializer, responses=NotificationSettingsSerializer)
    def patch(self, request):
        """Turn some e-mails off or on: send only the fields to change."""
        incoming = NotificationSettingsSerializer(data=request.data, partial=True)
        incoming.is_valid(raise_exception=True)
        profile = profile_update(user=request.user, **incoming.validated_data)
        return Response(NotificationSettingsSerializer(profile).data)


def _hosted(request, slug: str):
    challenge = get_object_or_404(challenge_list_visible(user=request.user), slug=slug)
    if not user_is_host(user=request.user, challenge=challenge):
        raise NotAllowed("Only the challenge's hosts can manage its webhooks.")
    return challenge


class WebhookListView(StrictQuery, APIView):
    """``GET /api/challenges/{slug}/webhooks/``: the challenge's webhooks (hosts); ``POST``: register a URL."""

    permission_classes = [IsAuthenticated]
    pagination_class = StrictLimitOffsetPagination

    @takes_query(paged=True, responses=WebhookSerializer(many=True))
    def get(self, request, slug: str):
        """The challenge's webhooks (its hosts only)."""
        return page_of(self, request, _hosted(request, slug).webhooks.all(), WebhookSerializer)

    @extend_schema(request=WebhookSerializer, responses={201: WebhookSerializer})
    def post(self, request, slug: str):
        """Register a URL to receive the challenge's events, signed with HMAC-SHA256 (its hosts only)."""
        challenge = _hosted(request, slug)
        refuse_unknown_fields(request.data, WebhookSerializer())
        webhook = webhook_create(challenge=challenge, user=request.user, url=str(request.data.get("url", "")))
        return Response(WebhookSerializer(webhook).data, status=201)


class WebhookDetailView(StrictQuery, APIView):
    """``GET /api/challenges/{slug}/webhooks/{id}/``: its deliveries, latest first; ``DELETE``: remove it."""

    permission_classes = [IsAuthenticated]
    pagination_class = StrictLimitOffsetPagination

    @takes_query(paged=True, responses=DeliverySerializer(many=True), operation_id="challenges_webhooks_deliveries")
    def get(self, request, slug: str, pk: int):
        """A webhook and its recent deliveries (the challenge's hosts only)."""
        webhook = get_object_or_404(_hosted(request, slug).webhooks, pk=pk)
        return page_of(self, request, webhook.deliveries.select_related("event"), DeliverySerializer)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request, slug: str, pk: int):
        """Remove a webhook (the challenge's hosts only)."""
        webhook_delete(webhook=get_object_or_404(_hosted(request, slug).webhooks, pk=pk), user=request.user)
        return Response(status=204)
