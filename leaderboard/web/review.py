"""The submission page's review parts: downloads of what was submitted (hosts and the team), the moderation
in force (shown to the team with its reason), and the hosts' moderation form."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from ..choices import Moderation
from ..downloads import submission_download
from ..models import Submission
from ..selectors import submission_moderation, submission_readable_get, user_is_host
from ..services.errors import ServiceError
from ..services.moderation import submission_moderate, submission_restore, team_moderate, team_restore
from .forms import in_words


def review_context(request, submission: Submission, can_see: bool) -> dict:
    """What the submission page adds: ``files`` (prediction files, for the download links), ``moderation``
    (the moderation in force, for its team and the hosts), ``can_moderate`` and ``moderation_states``."""
    if not can_see:
        return {"files": [], "moderation": None, "can_moderate": False}
    return {
        "files": list(submission.prediction_files.all()),
        "moderation": submission_moderation(submission=submission),
        "can_moderate": user_is_host(user=request.user, challenge=submission.challenge),
        "moderation_states": Moderation.choices,
    }


def readable_submission_or_404(request, pk: int, *related: str) -> Submission:
    """The submission a form acts on, or 404 alike for none and another team's hidden entry
    (:func:`selectors.submission_readable_get`)."""
    submission = submission_readable_get(user=request.user, pk=pk, related=("challenge", *related))
    if submission is None:
        raise Http404("No submission here.")
    return submission


def submission_download_view(request, pk: int):
    """The recipe, a prediction file (``?file=<index>``) or all of them zipped: hosts and the team (404 else)."""
    try:
        return submission_download(
            submission=readable_submission_or_404(request, pk, "team"), user=request.user, file=request.GET.get("file")
        )
    except ServiceError as exc:
        return HttpResponseBadRequest(in_words(exc.message), content_type="text/plain; charset=utf-8")


@require_POST
@login_required
def submission_moderate_view(request, pk: int):
    """The hosts' form: ``action`` ``moderate`` (``state``, ``reason``, ``scope`` entry or team) or ``restore``
    (``scope``); one service call, its refusal shown as a message."""
    submission = readable_submission_or_404(request, pk, "team")
    post = request.POST
    team_wide = post.get("scope") == "team"
    try:
        if post.get("action") == "restore":
            if team_wide:
                team_restore(
                    challenge=submission.challenge,
                    team=submission.team,
                    user=request.user,
                    reason=post.get("reason", ""),
                )
            else:
                submission_restore(submission=submission, user=request.user, reason=post.get("reason", ""))
            done = "Restored: back on the boards at the next report update."
        else:
            common = {"user": request.user, "state": post.get("state", ""), "reason": post.get("reason", "")}
            if team_wide:
                team_moderate(challenge=submission.challenge, team=submission.team, **common)
            else:
                submission_moderate(submission=submission, **common)
            done = f"{'Team' if team_wide else 'Entry'} {Moderation(common['state']).label.lower()}: off the boards."
    except ServiceError as exc:
        messages.error(request, in_words(exc.message))
    else:
        messages.success(request, done)
    return redirect(submission)
