"""Server-rendered pages. Each view reads through ``selectors``, writes through one service call,
and turns a ``ServiceError`` into a form error naming the problem exactly as the service does."""

from __future__ import annotations

import dataclasses

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import BadRequest, PermissionDenied
from django.db.models import Count, Exists, F, OuterRef, Q, prefetch_related_objects
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from ..choices import (
    RUN_ENDED,
    SUBMISSION_ACTIVE,
    Board,
    Correction,
    RunStatus,
    SubmissionKind,
    SubmissionStatus,
    Visibility,
)
from ..downloads import dataset_download
from ..models import Challenge, Dataset, EntryProvenance, Registration, Submission
from ..selectors import (
    challenge_list_visible,
    challenge_provenance,
    challenges_with_entry_count,
    challenges_with_phase_span,
    phase_in_force,
    report_stored_ranks,
    submission_can_see_details,
    submission_list_for,
    submission_readable,
    submissions_readable,
    suite_list_visible,
    user_is_host,
    user_team_in_challenge,
    user_teams,
)
from ..services.accounts import account_signup
from ..services.boards import BoardNotFound, BoardScope, board_scope
from ..services.challenges import challenge_create, challenge_update, challenge_warnings
from ..services.entries import entry_history
from ..services.errors import NotAllowed, ServiceError
from ..services.paging import PAGE_SIZE, page_limit
from ..services.queues import challenge_queue_waits, submission_queue_wait
from ..services.reports import report_data, section_family_size, section_pair
from ..services.submissions import (
    final_candidate_refusal,
    submission_cancel,
    submission_create_predictions,
    submission_create_recipe,
)
from ..services.teams import team_personal_for
from ..throttles import SignupThrottle, too_many
from ..upload_handlers import upload_refusal
from ..uploads import read_prediction_uploads, read_recipe_upload
from . import charts
from .forms import (
    ChallengeCreateForm,
    ChallengeSettingsForm,
    SignupForm,
    SubmissionForm,
    add_service_error,
    in_words,
    show_upload_refusal,
)
from .pagecache import anonymous_page_microcache
from .presenters import entry_label, imported_source, leaderboard_for_page, pair_for_display, ranks_apart
from .review import readable_submission_or_404, review_context
from .upload_stash import keep_uploads, kept_uploads, stash_drop

LOG_TAIL_LINES = 40


def _visible_challenge(request, slug: str) -> Challenge:
    """The challenge if the user may see it; private challenges are a 404 for non-hosts."""
    return get_object_or_404(challenge_list_visible(user=request.user), slug=slug)


def _scope(request, challenge: Challenge) -> BoardScope:
    """The viewer's board (``?board=``) as ``services.boards`` allows it: 403 (hidden), 404 (no private board)
    or 400 (not a board's name) otherwise."""
    try:
        return board_scope(challenge=challenge, user=request.user, board=request.GET.get("board"))
    except NotAllowed as exc:
        raise PermissionDenied(exc.message) from None
    except BoardNotFound as exc:
        raise Http404(exc.message) from None
    except ServiceError as exc:
        raise BadRequest(exc.message) from None


# --------------------------------------------------------------------------- home, accounts


def home(request):
    challenges = (
        challenges_with_entry_count(challenges_with_phase_span(challenge_list_visible(user=request.user)))
        .annotate(
            # no dataset and imported entries: results made elsewhere, no submissions
            imported_results=~Exists(Dataset.objects.filter(challenge=OuterRef("pk")))
            & Exists(EntryProvenance.objects.filter(submission__challenge=OuterRef("pk"))),
        )
        .order_by(F("closes_at").desc(nulls_first=True), "-created")
    )
    return render(request, "home.html", {"challenges": challenges, "now": timezone.now()})


def signup(request):
    if request.user.is_authenticated:
        return redirect("home")
    form = SignupForm(request.POST or None)
    throttle = SignupThrottle()
    if request.method == "POST" and (wait := throttle.blocked(request)) is not None:
        return too_many(wait, "sign-ups")
    if request.method == "POST" and form.is_valid():
        user = form.save()
        throttle.record(request)
        active = account_signup(
            user=user, verify_url=lambda signed: request.build_absolute_uri(reverse("verify-email", args=[signed]))
        )
        if not active:
            messages.success(request, f"Almost done: we sent a confirmation link to {user.email}.")
            return redirect("login")
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(
            request,
            f"Welcome, {user.username}. You submit as your personal team "
            f"“{user.username}” unless you choose another team.",
        )
        return redirect("home")
    return render(request, "registration/signup.html", {"form": form})


# --------------------------------------------------------------------------- challenges


NEW_CHALLENGE = "challenge-create"  # the host form's kept files (``upload_stash``)


@login_required
def challenge_new(request):
    refusal = upload_refusal(request)
    kept = kept_uploads(request, scope=NEW_CHALLENGE, fields=ChallengeCreateForm.kept_fields)
    form = ChallengeCreateForm(request.POST or None, request.FILES or None, kept=kept)
    if refusal is not None:  # an upload over a limit, stopped while it streamed
        show_upload_refusal(form, refusal)
        return render(request, "challenges/new.html", {"form": form}, status=400)
    if request.method == "POST" and form.is_valid():
        # A draft first: its hosts check the data (and the planner's k) on the preview, then publish it.
        try:
            kwargs = form.service_kwargs()  # reads the files: one over its limit, or a kept one swept, is refused
            publish = kwargs.get("visibility") == Visibility.PUBLIC
            challenge = challenge_create(created_by=request.user, **{**kwargs, "visibility": Visibility.PRIVATE})
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            stash_drop(request, form.kept_fields)
            messages.success(
                request,
                f"Challenge “{challenge.title}” created as a draft only you can see. Check the "
                + ("data below, then publish it." if publish else "data below."),
            )
            for warning in challenge_warnings(challenge=challenge, user=request.user):
                messages.warning(request, warning)
            return redirect("challenge-preview", slug=challenge.slug)
    if form.is_bound:
        keep_uploads(request, form, scope=NEW_CHALLENGE)  # a browser cannot re-fill a file input
    return render(request, "challenges/new.html", {"form": form})


def _download_parts(challenge: Challenge, is_host: bool) -> list[tuple[str, str]]:
    dataset = getattr(challenge, "dataset", None)
    if dataset is None:
        return []
    parts = [("train", f"Training data ({dataset.n_train} rows)")]
    if dataset.test_inputs_file:
        parts += [("test_inputs", f"Test inputs ({dataset.n_test} rows)"), ("sample_submission", "Sample submission")]
        if is_host:
            parts.append(("hidden_labels", "Hidden test labels (hosts only)"))
    return parts


@anonymous_page_microcache  # anonymous GETs served from memory for LEADERBOARD_MICROCACHE_S (pagecache.py)
def challenge_detail(request, slug: str):
    challenge = _visible_challenge(request, slug)
    scope = _scope(request, challenge)
    is_host = user_is_host(user=request.user, challenge=challenge)
    form = refusal = None
    if request.user.is_authenticated:
        personal = team_personal_for(user=request.user)
        refusal = upload_refusal(request)
        form = SubmissionForm(
            request.POST or None,
            request.FILES or None,
            challenge=challenge,
            teams=user_teams(user=request.user).order_by("-is_personal", "name"),
            default_team=personal,
            kept=kept_uploads(request, scope=_submission_scope(challenge), fields=SubmissionForm.kept_fields),
        )
        if refusal is not None:  # files over a limit, stopped while they streamed
            show_upload_refusal(form, refusal)
        elif request.method == "POST":
            submission = _submit(request, challenge, form) if form.is_valid() else None
            if submission is not None:
                stash_drop(request, form.kept_fields)
                messages.success(request, f"Submission “{submission.method_name}” received; it is queued.")
                return redirect(submission)
            keep_uploads(request, form, scope=_submission_scope(challenge))
    elif request.method == "POST":
        return redirect_to_login(request.get_full_path())
    prefetch_related_objects([challenge], "phases")  # read by phase_in_force and the rules list
    in_force = phase_in_force(challenge=challenge)
    is_open = in_force.open
    registration = (
        Registration.objects.filter(challenge=challenge, user=request.user).first()
        if request.user.is_authenticated
        else None
    )
    my_submissions = (
        submission_list_for(user=request.user, challenge=challenge)
        .annotate(
            runs_finished=Count("runs", filter=Q(runs__status__in=RUN_ENDED), distinct=True),
            runs_failed=Count("runs", filter=Q(runs__status=RunStatus.FAILED), distinct=True),
        )
        .order_by("-created")[:50]
    )
    board = leaderboard_for_page(challenge, scope.board, **_page_request(request, my_submissions))
    my_submissions = _with_score_and_rank(request, challenge, scope, list(my_submissions))  # after: reads its report
    return render(
        request,
        "challenges/detail.html",
        {
            "challenge": challenge,
            "dataset": getattr(challenge, "dataset", None),
            "is_host": is_host,
            "is_open": is_open,
            "in_force": in_force,
            "downloads": _download_parts(challenge, is_host),
            "board": board,
            "scope": scope,
            "phases": challenge.phases.all(),
            "suites": suite_list_visible(user=request.user).filter(challenges=challenge).order_by("title"),
            "queue_waits": challenge_queue_waits(challenge=challenge),
            "registration": registration,
            "join": _join_state(challenge, registration),
            "imported": imported_source(
                challenge_provenance(challenge=challenge, user=request.user), has_dataset=not challenge.results_only
            ),
            "form": form,
            # A closed challenge shows no form; a refused POST still shows the service's reason on it.
            "show_form": form is not None and (is_open or form.is_bound),
            "my_submissions": my_submissions,
            # "Your submissions" ticks final entries for the team the user takes part with, until the reveal.
            # Said in words above the ticks (a title is out of a phone reader's reach): why some rows have none.
            "finals_refused": any(getattr(s, "final_refusal", None) for s in my_submissions),
            "finals_team": (
                user_team_in_challenge(user=request.user, challenge=challenge)
                if scope.has_private and not scope.revealed and request.user.is_authenticated
                else None
            ),
        },
        status=400 if refusal is not None else 404 if board.get("around_missing") else 200,
    )


def _with_score_and_rank(request, challenge: Challenge, scope: BoardScope, submissions: list) -> list:
    """Each submission's public-board score as published (``BoardScope.submission_score``) and its rank on the
    stored public report, as ``shown_score`` and ``public_rank``."""
    if not submissions:
        return submissions
    public = scope if scope.board == Board.PUBLIC else board_scope(challenge=challenge, user=request.user)
    ranks = report_stored_ranks(challenge=challenge, board=Board.PUBLIC)
    prefetch_related_objects(submissions, "runs", "phase")
    for submission in submissions:
        # The ticks follow the choice's own rule: a public-only phase's entry is never offered (a newcomer's finding:
        # its tick was offered, and refused on saving).
        submission.final_refusal = final_candidate_refusal(submission)
        scored = submission.status == SubmissionStatus.SCORED
        submission.shown_score = (
            public.submission_score(submission.pk, list(submission.runs.all()), submission.kind) if scored else None
        )
        submission.public_rank = ranks.get(submission.pk)
    return submissions


def _join_state(challenge: Challenge, registration: Registration | None) -> dict:
    """``needed``: the user must still register (accept the rules); ``pending``: registered, not yet approved."""
    asks = bool(challenge.rules or challenge.registration_required)
    done = registration is not None and not (challenge.rules and not registration.rules_accepted_at)
    return {"needed": asks and not done, "pending": done and registration.status != "approved"}


def _page_request(request, my_submissions) -> dict:
    """The reader's page of the board: ``?q=`` (team or method), ``?around=`` (a submission id), ``?offset=``,
    ``?limit=``; the reader's own submissions centre the heat map. Malformed numbers fall back to the defaults."""

    def number(name, default=None):
        try:
            return int(request.GET.get(name, ""))
        except ValueError:
            return default

    try:
        limit = page_limit(request.GET.get("limit"))
    except ValueError:
        limit = PAGE_SIZE
    return {
        "query": request.GET.get("q", "")[:100],
        "around": number("around"),
        "offset": max(0, number("offset", 0)),
        "limit": limit,
        "mine": tuple(s.pk for s in my_submissions),
    }


def _submit(request, challenge: Challenge, form: SubmissionForm) -> Submission | None:
    data = form.cleaned_data
    common = dict(
        challenge=challenge,
        user=request.user,
        method_name=data["method_name"],
        description=data.get("description", ""),
        team_id=data["team"].pk,
    )
    try:
        if data["kind"] == SubmissionKind.PREDICTIONS:
            return submission_create_predictions(files=read_prediction_uploads(data.get("files") or []), **common)
        recipe = read_recipe_upload(data["recipe"])  # the one chosen, or the one kept (``upload_stash``)
        return submission_create_recipe(recipe=recipe, hyperparameters=data.get("hyperparameters") or {}, **common)
    except ServiceError as exc:
        add_service_error(form, exc)
        return None


def _submission_scope(challenge: Challenge) -> str:
    """Whose kept recipe this is (``upload_stash``): the submission form of this challenge."""
    return f"challenge:{challenge.pk}"


def challenge_download(request, slug: str, part: str):
    challenge = _visible_challenge(request, slug)
    return dataset_download(challenge=challenge, part=part, user=request.user)


@login_required
def challenge_edit(request, slug: str):
    challenge = _visible_challenge(request, slug)
    if not user_is_host(user=request.user, challenge=challenge):
        raise PermissionDenied("Only the challenge's hosts can change it.")
    form = ChallengeSettingsForm(request.POST or None, instance=challenge)
    if request.method == "POST" and form.is_valid():
        # The form has written its values onto ``challenge``; the service compares against the stored row.
        stored = Challenge.objects.get(pk=challenge.pk)
        try:
            challenge_update(challenge=stored, user=request.user, **form.changed_challenge_fields())
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            messages.success(request, "Settings saved.")
            for warning in challenge_warnings(challenge=stored, user=request.user):
                messages.warning(request, warning)
            return redirect(stored)
    context = {
        "challenge": challenge,
        "form": form,
        "frozen": form.frozen,
        "program_max_failures": settings.VARBOARD["PROGRAM_MAX_FAILURES"],
    }
    return render(request, "challenges/edit.html", context)


# --------------------------------------------------------------------------- the statistical leaderboard
#
# The report (``report_data``) is a JSON document computed from the stored runs; these helpers only
# arrange it for the templates: rows per section, charts as inline SVG (``leaderboard.web.charts``, which
# escapes every text it draws), verdicts in words. No statistic is computed here.


def challenge_compare(request, slug: str):
    """Two entries side by side: their runs, P(A>B) with its interval, the verdict in words."""
    challenge = _visible_challenge(request, slug)
    scope = _scope(request, challenge)
    context = {"challenge": challenge, "problem": None, "a": None, "b": None, "pair": None, "scope": scope}
    try:
        _, data = report_data(challenge=challenge, board=scope.board)
    except ServiceError as exc:
        context["problem"] = exc.message
        return render(request, "challenges/compare.html", context, status=503)
    # a stored row a host hid or its team cancelled since the board was computed: not this reader's to open
    readable = set(submissions_readable(user=request.user, challenge=challenge).values_list("pk", flat=True))
    rows = {row["submission_id"]: row for row in data["entries"] if row["submission_id"] in readable}
    context.update(
        settings=data["settings"],
        correction=Correction(data["settings"]["correction"]).label,
        confidence_pct=100 * data["settings"]["confidence"],
        choices=[
            (section["label"], [(sid, entry_label(rows[sid])) for sid in section["entries"] if sid in rows])
            for section in data["sections"]
        ],
    )
    if "a" not in request.GET and "b" not in request.GET:
        return render(request, "challenges/compare.html", context)
    try:
        a, b = rows[int(request.GET.get("a", ""))], rows[int(request.GET.get("b", ""))]
    except (KeyError, ValueError):
        context["problem"] = "Choose two entries of this leaderboard."
        return render(request, "challenges/compare.html", context, status=400)
    context.update(a=a, b=b, a_label=entry_label(a), b_label=entry_label(b))
    if a["submission_id"] == b["submission_id"]:
        context["problem"] = "Choose two different entries."
    elif a["kind"] != b["kind"]:
        context["problem"] = (
            f"{entry_label(a)} is a {a['kind']} entry and {entry_label(b)} a {b['kind']} entry: they are "
            "scored on different test data, so the leaderboard does not compare them."
        )
    else:
        section = next(s for s in data["sections"] if s["kind"] == a["kind"])
        context["section"] = section
        context["family_size"] = section_family_size(section)
        pair, reason = section_pair(challenge=challenge, section=section, a=a, b=b, board=scope.board)
        context["pair"] = None if pair is None else pair_for_display(slug, pair, winner_first=False)
        if context["pair"] is None:
            context["problem"] = (
                reason
                or "; ".join(
                    f"{entry_label(row)} is not compared: {row['excluded_reason']}"
                    for row in (a, b)
                    if not row["compared"]
                )
                or "These entries are not compared."
            )
        else:
            pair = context["pair"]
            context["verdict"] = pair["words"]
            context["bar"] = {key: 100 * pair[key] for key in ("p", "low", "high") if pair[key] is not None}
            context["bar"]["gamma"] = 100 * data["settings"]["gamma"]
            context["ranks_apart"] = ranks_apart(a, b)
            # a prediction section ranks by the mean over the test examples, whatever the board's statistic
            boo_n = data["settings"]["statistic"] == "boo_n" and a["kind"] == SubmissionKind.RECIPE
            context["statistic"] = "Boo_n" if boo_n else "mean"
    context["strip_svg"] = mark_safe(
        charts.strip_plot(
            {entry_label(a): a["run_scores"], entry_label(b): b["run_scores"]},
            title="Every run of both entries",
            id_prefix="strip-compare",
        )
    )
    context["curves_svg"] = mark_safe(
        charts.boo_n_curve(
            {entry_label(a): a["boo_n_curve"], entry_label(b): b["boo_n_curve"]}, id_prefix="boon-compare"
        )
    )
    return render(request, "challenges/compare.html", context)


# --------------------------------------------------------------------------- submissions


def submission_detail(request, pk: int):
    visible = challenge_list_visible(user=request.user)
    submission = get_object_or_404(
        Submission.objects.filter(challenge__in=visible).select_related("challenge", "team", "submitted_by"), pk=pk
    )
    can_see = submission_can_see_details(user=request.user, submission=submission)
    if not submission_readable(user=request.user, submission=submission):  # unscored, or moderated by a host
        raise Http404("No submission here.")
    scope = _scope(request, submission.challenge)
    runs = list(submission.runs.all())
    for run in runs:
        run.log_tail = "\n".join(run.log.splitlines()[-LOG_TAIL_LINES:]) if can_see else ""
        run.shown = scope.run_scores(run)
    finished = sum(run.status in RUN_ENDED for run in runs)
    expected = submission.runs_expected or len(runs) or 1
    return render(
        request,
        "submissions/detail.html",
        {
            "queue_wait": submission_queue_wait(submission=submission),
            "submission": submission,
            "challenge": submission.challenge,
            "runs": runs,
            "can_see": can_see,
            "active": submission.status in SUBMISSION_ACTIVE,
            "finished": finished,
            "succeeded": sum(run.status == RunStatus.SUCCEEDED for run in runs),
            "expected": expected,
            "percent": round(100 * finished / expected, 1),
            "scope": scope,
            "score": scope.submission_score(submission.pk, runs, submission.kind),
            "other_board": _other_board_score(scope, submission, runs),
            "history": entry_history(submission=submission, user=request.user),
            "rank": report_stored_ranks(challenge=submission.challenge, board=scope.board).get(submission.pk),
            "is_member": can_see and user_teams(user=request.user).filter(pk=submission.team_id).exists(),
            **review_context(request, submission, can_see),
        },
    )


def _other_board_score(scope: BoardScope, submission: Submission, runs: list) -> dict | None:
    """The submission's score and rank on the board the page does not show, once the viewer may read both (after
    the reveal, or a host): Kaggle's public and private scores side by side."""
    if not scope.sees_private:
        return None
    other = dataclasses.replace(scope, board=Board.PUBLIC if scope.board == Board.PRIVATE else Board.PRIVATE)
    score = other.submission_score(submission.pk, runs, submission.kind)
    if score is None:
        return None
    rank = report_stored_ranks(challenge=submission.challenge, board=other.board).get(submission.pk)
    return {"board": other.board, "score": score, "rank": rank}


@require_POST
@login_required
def submission_cancel_view(request, pk: int):
    submission = readable_submission_or_404(request, pk)
    try:
        submission_cancel(submission=submission, user=request.user)
    except ServiceError as exc:
        messages.error(request, in_words(exc.message))
    else:
        messages.success(request, "Submission cancelled.")
    return redirect(submission)
