"""Account pages: the profile (API tokens, e-mail notifications, invitations), teams and invitations,
and the hosts' webhooks of a challenge.

Each view reads through selectors, writes through one service call, and shows a ``ServiceError``'s
message as it is.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from ..models import Membership, TeamInvitation, Webhook
from ..selectors import (
    challenge_list_visible,
    challenges_hosted_by,
    invitations_pending_for,
    team_invitations_visible,
    user_is_host,
    user_teams,
    user_teams_counted,
)
from ..services.accounts import token_create, token_list, token_revoke
from ..services.errors import ServiceError
from ..services.notifications import PREFERENCES, profile_for, profile_update
from ..services.teams import invitation_cancel, invitation_decide, team_create, team_invite, team_personal_for
from ..services.webhooks import webhook_create, webhook_delete, webhook_rotate_secret
from .forms import NotificationsForm, TeamCreateForm, TeamInviteForm, WebhookForm, add_service_error, in_words


def _token_action(request) -> str | None:
    """Create or revoke a token as the POST asks; the new token's secret (shown once) or None."""
    try:
        if request.POST.get("action") == "revoke":
            token_revoke(user=request.user, token_key=request.POST.get("token_key", ""))
            messages.success(request, "Token revoked.")
        elif request.POST.get("action") == "create":
            return token_create(user=request.user)[1]
    except ServiceError as exc:
        messages.error(request, in_words(exc.message))
    return None


@login_required
def account(request):
    """The profile: API tokens (a new one's secret shown once), notifications, invitations, hosted challenges."""
    profile = profile_for(user=request.user)
    new_token = None
    form = NotificationsForm(initial={name: getattr(profile, name) for name in PREFERENCES})
    if request.method == "POST":
        if request.POST.get("action") == "notifications":
            form = NotificationsForm(request.POST)
            if form.is_valid():
                profile_update(user=request.user, **form.cleaned_data)
                messages.success(request, "Notification settings saved.")
                return redirect("account")
        else:
            new_token = _token_action(request)
    return render(
        request,
        "account/profile.html",
        {
            "tokens": token_list(user=request.user),
            "new_token": new_token,
            "notifications_form": form,
            "invitations": invitations_pending_for(user=request.user),
            "hosted": challenges_hosted_by(user=request.user),
        },
    )


@login_required
def teams(request):
    """Your teams, their members and invitations; create a team, invite someone (they accept or decline)."""
    team_personal_for(user=request.user)
    mine = user_teams(user=request.user)
    shared = mine.filter(is_personal=False)
    action = request.POST.get("action")
    create_form = TeamCreateForm(request.POST if action == "create" else None, prefix="create")
    invite_form = TeamInviteForm(request.POST if action == "invite" else None, teams=shared, prefix="member")
    if request.method == "POST" and _team_action(request, create_form, invite_form):
        return redirect("teams")
    members = Membership.objects.select_related("user").order_by("user__username")
    pending = TeamInvitation.objects.filter(status=TeamInvitation.Status.PENDING).select_related("invitee")
    return render(
        request,
        "teams/list.html",
        {
            "teams": user_teams_counted(user=request.user)
            .prefetch_related(
                Prefetch("membership_set", queryset=members, to_attr="memberships"),
                Prefetch("invitations", queryset=pending, to_attr="pending"),
            )
            .order_by("-is_personal", "name"),
            "create_form": create_form,
            "member_form": invite_form,
            "has_shared": shared.exists(),
            "invitations": invitations_pending_for(user=request.user),
        },
    )


def _team_action(request, create_form: TeamCreateForm, invite_form: TeamInviteForm) -> bool:
    try:
        if create_form.is_bound and create_form.is_valid():
            team = team_create(name=create_form.cleaned_data["name"], creator=request.user)
            messages.success(request, f"Team “{team.name}” created.")
            return True
        if invite_form.is_bound and invite_form.is_valid():
            username = invite_form.cleaned_data["username"].strip()
            user = get_user_model().objects.filter(username=username).first()
            if user is None:
                invite_form.add_error("username", f"There is no user named “{username}”.")
                return False
            team = invite_form.cleaned_data["team"]
            team_invite(team=team, user=user, invited_by=request.user)
            messages.success(request, f"{user.username} is invited to “{team.name}”; they join when they accept.")
            return True
    except ServiceError as exc:
        add_service_error(create_form if create_form.is_bound else invite_form, exc)
    return False


@require_POST
@login_required
def invitation_view(request, pk: int):
    """Accept, decline (the invitee) or cancel (a member of the team) an invitation: one the user may read (404 for
    any other, as the API answers; looked up among all, an invitation id that exists answered a refusal and one that
    does not 404)."""
    invitation = get_object_or_404(team_invitations_visible(user=request.user), pk=pk)
    action = request.POST.get("action")
    try:
        if action == "cancel":
            invitation_cancel(invitation=invitation, user=request.user)
            messages.success(request, f"The invitation of {invitation.invitee.username} is cancelled.")
        else:
            invitation_decide(invitation=invitation, user=request.user, accept=action == "accept")
            messages.success(
                request,
                f"You joined “{invitation.team.name}”."
                if action == "accept"
                else f"You declined to join “{invitation.team.name}”.",
            )
    except ServiceError as exc:
        messages.error(request, in_words(exc.message))
    target = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(target if target and safe else "teams")


@login_required
def challenge_webhooks(request, slug: str):
    """The hosts' webhooks of a challenge: register a URL (its secret is shown), rotate, delete, recent deliveries."""
    challenge = get_object_or_404(challenge_list_visible(user=request.user), slug=slug)
    if not user_is_host(user=request.user, challenge=challenge):
        raise PermissionDenied("Only the challenge's hosts can manage its webhooks.")
    form = WebhookForm(request.POST if request.POST.get("action") == "create" else None)
    if request.method == "POST":
        try:
            if form.is_bound:
                if form.is_valid():
                    webhook_create(challenge=challenge, user=request.user, url=form.cleaned_data["url"])
                    messages.success(request, "Webhook registered; copy its secret to verify the signatures.")
                    return redirect("challenge-webhooks", slug=slug)
            else:
                webhook = get_object_or_404(Webhook, challenge=challenge, pk=request.POST.get("webhook"))
                if request.POST.get("action") == "rotate":
                    webhook_rotate_secret(webhook=webhook, user=request.user)
                    messages.success(request, "The webhook has a new secret.")
                else:
                    webhook_delete(webhook=webhook, user=request.user)
                    messages.success(request, "Webhook deleted.")
                return redirect("challenge-webhooks", slug=slug)
        except ServiceError as exc:
            add_service_error(form, exc)
    return render(
        request,
        "challenges/webhooks.html",
        {
            "challenge": challenge,
            "form": form,
            "webhooks": challenge.webhooks.prefetch_related("deliveries__event"),
        },
    )


class LogoutPage(auth_views.LogoutView):
    """Log out on POST (Django's view, a CSRF-checked form); a GET (a typed address, an old link) gets a page
    with that form instead of Django's blank 405, which a browser showed as "This page isn't working"."""

    http_method_names = ["get", "post", "options"]

    def get(self, request, *args, **kwargs):
        return render(request, "registration/logout.html")
