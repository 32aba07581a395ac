"""Pages and actions of competition integrity: log-in and password-reset throttling, e-mail confirmation, the
private board's reveal, registration and rules, final selection, and the hosts' audit page.

Each view reads through selectors, writes through one service call, and shows a ``ServiceError``'s
message as it is.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from ..models import Registration
from ..selectors import challenge_list_visible, user_is_host, user_teams
from ..services.accounts import account_verify
from ..services.challenges import challenge_reveal
from ..services.errors import ServiceError
from ..services.paging import whole_number
from ..services.registrations import registration_decide, registration_register
from ..services.submissions import submission_finals_choose, submission_select_final
from ..throttles import FailedLoginThrottle, PasswordResetThrottle, too_many
from .forms import in_words
from .review import readable_submission_or_404


class ThrottledLoginView(auth_views.LoginView):
    """Django's log-in page; failed attempts are throttled per address and per username (429, Retry-After)."""

    redirect_authenticated_user = True

    def post(self, request, *args, **kwargs):
        wait = FailedLoginThrottle().blocked(request, request.POST.get("username"))
        if wait is not None:
            return too_many(wait, "failed log-ins")
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        FailedLoginThrottle().record(self.request, self.request.POST.get("username"))
        return super().form_invalid(form)


class ThrottledPasswordResetView(auth_views.PasswordResetView):
    """Django's password reset (a signed one-time link by mail); requests are throttled per address and e-mail."""

    def post(self, request, *args, **kwargs):
        throttle = PasswordResetThrottle()
        wait = throttle.blocked(request, request.POST.get("email"))
        if wait is not None:
            return too_many(wait, "password-reset requests")
        throttle.record(request, request.POST.get("email"))
        return super().post(request, *args, **kwargs)


def verify_email(request, signed: str):
    try:
        user = account_verify(signed=signed)
    except ServiceError as exc:
        messages.error(request, in_words(exc.message))
        return redirect("signup")
    messages.success(request, f"Account {user.username} confirmed; log in.")
    return redirect("login")


def _challenge(request, slug: str):
    return get_object_or_404(challenge_list_visible(user=request.user), slug=slug)


def _act(request, action, success: str):
    """Run one service call; its ServiceError becomes a message on the page the user comes back to."""
    try:
        action()
    except ServiceError as exc:
        messages.error(request, in_words(exc.message))
    else:
        messages.success(request, success)


@require_POST
@login_required
def challenge_reveal_view(request, slug: str):
    challenge = _challenge(request, slug)
    _act(request, lambda: challenge_reveal(challenge=challenge, user=request.user), "The private board is revealed.")
    return redirect(f"{challenge.get_absolute_url()}?board=private")


@require_POST
@login_required
def challenge_register_view(request, slug: str):
    challenge = _challenge(request, slug)
    _act(
        request,
        lambda: registration_register(
            challenge=challenge, user=request.user, accept_rules=request.POST.get("accept_rules") == "on"
        ),
        "Registered." if not challenge.registration_required else "Registered; the hosts will review it.",
    )
    return redirect(f"{challenge.get_absolute_url()}#submit")


@require_POST
@login_required
def submission_select_view(request, pk: int):
    submission = readable_submission_or_404(request, pk, "phase")
    selected = request.POST.get("selected") != "false"
    _act(
        request,
        lambda: submission_select_final(submission=submission, user=request.user, selected=selected),
        "Chosen for the private board." if selected else "No longer chosen for the private board.",
    )
    wanted = request.POST.get("next") or ""
    safe = url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(wanted if wanted and safe else submission.get_absolute_url())  # never off the site


@require_POST
@login_required
def challenge_finals_view(request, slug: str):
    """ "Your submissions": the ticked ones become the team's final entries, all at once."""
    challenge = _challenge(request, slug)
    team = get_object_or_404(user_teams(user=request.user), pk=next(iter(_ids(request.POST.getlist("team"))), None))
    _act(
        request,
        lambda: submission_finals_choose(
            challenge=challenge,
            team=team,
            user=request.user,
            submission_ids=_ids(request.POST.getlist("final")),
            among=_ids(request.POST.getlist("listed")),
        ),
        "Final entries saved.",
    )
    return redirect(f"{challenge.get_absolute_url()}#my-submissions")


def _ids(values) -> list[int]:
    return [number for value in values if (number := whole_number(value)) is not None]


@login_required
def challenge_audit(request, slug: str):
    """The hosts' page: the audit log, registrations to approve, reports kept from before each rescore."""
    challenge = _challenge(request, slug)
    if not user_is_host(user=request.user, challenge=challenge):
        raise PermissionDenied("Only the challenge's hosts can read its audit log.")
    if request.method == "POST":
        registration = get_object_or_404(Registration, challenge=challenge, pk=request.POST.get("registration"))
        _act(
            request,
            lambda: registration_decide(
                registration=registration, user=request.user, approve=request.POST.get("approve") == "true"
            ),
            "Registration updated.",
        )
        return redirect("challenge-audit", slug=slug)
    return render(
        request,
        "challenges/audit.html",
        {
            "challenge": challenge,
            "entries": challenge.audit_entries.select_related("actor")[:500],
            "registrations": challenge.registrations.select_related("user", "decided_by"),
            "versions": challenge.report_versions.only("board", "computed_at", "archived_at", "reason"),
        },
    )
