"""Pages beyond one leaderboard: a variance study, a benchmark suite, importing results.

Views read through selectors and write through one service call, as in ``views``; the
charts are ``charts``' (forest plot, heatmap), fed with rows shaped like report rows.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import mark_safe

from evaluation.imports import FORMATS
from evaluation.report.coverage import SUITE_TASKS, coverage_notes

from ..choices import Visibility
from ..models import METRIC_CHOICES, EntryProvenance, Submission, Suite
from ..selectors import (
    challenge_list_visible,
    submission_id_readable,
    suite_list_visible,
    user_is_host,
    variance_studies_readable,
)
from ..services.errors import NotAllowed, ServiceError
from ..services.paging import whole_number
from ..services.results_import import (
    challenge_create_results_only,
    results_import_create,
    results_import_files,
    results_import_list,
    results_instance_list,
)
from ..services.suites import suite_board, suite_create
from ..services.variance_studies import variance_study_candidates, variance_study_create, variance_study_shown
from ..upload_handlers import upload_refusal
from ..uploads import read_prediction_uploads, read_upload
from . import charts
from .forms import MultipleFileField, add_service_error, show_upload_refusal


def _visible(request, slug):
    return get_object_or_404(challenge_list_visible(user=request.user), slug=slug)


# --------------------------------------------------------------------------- variance studies
class StudyForm(forms.Form):
    submission = forms.ModelChoiceField(queryset=Submission.objects.none(), label="Recipe entry")
    k_runs = forms.IntegerField(min_value=2, max_value=100, initial=5, label="Runs per source (k)")

    def __init__(self, *args, challenge=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["submission"].queryset = variance_study_candidates(challenge=challenge)


def variance_studies(request, slug: str):
    """A challenge's variance studies; its hosts start one for a recipe entry."""
    challenge = _visible(request, slug)
    is_host = user_is_host(user=request.user, challenge=challenge)
    form = StudyForm(request.POST or None, challenge=challenge) if is_host else None
    if request.method == "POST":
        if not is_host:
            raise PermissionDenied
        if form.is_valid():
            try:
                study = variance_study_create(
                    submission=form.cleaned_data["submission"], user=request.user, k_runs=form.cleaned_data["k_runs"]
                )
            except ServiceError as exc:
                add_service_error(form, exc)
            else:
                messages.success(request, f"Study queued: {study.runs.count()} runs.")
                return redirect("variance-study", slug=slug, pk=study.pk)
    studies = variance_studies_readable(user=request.user, challenge=challenge)
    return render(request, "studies/list.html", {"challenge": challenge, "studies": studies, "form": form})


def variance_study(request, slug: str, pk: int):
    """One study: each source's standard deviation with its interval and share (Bouthillier et al., Fig. 1)."""
    challenge = _visible(request, slug)
    study = get_object_or_404(variance_studies_readable(user=request.user, challenge=challenge), pk=pk)
    shown = variance_study_shown(study=study, user=request.user)  # what the boards let this reader see
    result = shown["result"] or {}
    chart = chart_narrow = None
    if result.get("available"):
        rows = [
            {"method_name": r["source"], "sd": {"estimate": r["sd"], "low": r["low"], "high": r["high"]}}
            for r in (*result["sources"], {**result["total"], "source": "all jointly"})
        ]
        title = "Standard deviation of the score, by source of variation"
        chart, chart_narrow = (
            mark_safe(charts.forest_plot(rows, statistic="sd", id_prefix=prefix, title=title, narrow=narrow))
            for prefix, narrow in (("study", False), ("studyn", True))
        )
    counts = {s: study.runs.filter(status=s).count() for s in ("queued", "running", "succeeded", "failed")}
    return render(
        request,
        "studies/detail.html",
        {
            "challenge": challenge,
            "study": study,
            "result": result,
            "chart": chart,
            "chart_narrow": chart_narrow,
            "counts": counts,
            "withheld": shown["result_withheld"],
            "coverage": _coverage("study.", study.k_runs),
        },
    )


def _coverage(prefix: str, k: int) -> list[dict]:
    """The measured coverage of a page's intervals at k runs (benchmarks/bench_coverage.py)."""
    return [{**n, "pct": f"{100 * n['coverage']:.0f}"} for n in coverage_notes(k, (prefix,))]


# --------------------------------------------------------------------------- suites
#: Suites on one page of ``/suites/``.
SUITES_PER_PAGE = 50


def suite_list(request):
    """The suites the reader may open (``selectors.suite_list_visible``: every challenge of it visible), newest
    first, a page at a time."""
    number = whole_number(request.GET.get("page") or "1")
    if not number:
        raise BadRequest(f"`page` must be a whole number from 1 (got {request.GET['page']!r}).")
    suites = suite_list_visible(user=request.user).prefetch_related("challenges")
    paginator = Paginator(suites.order_by("-created", "-pk"), SUITES_PER_PAGE, allow_empty_first_page=True)
    if number > paginator.num_pages:
        raise Http404(f"There is no page {number}: the suites you may open fill {paginator.num_pages} pages.")
    return render(request, "suites/list.html", {"page": paginator.page(number), "paginator": paginator})


def suite_detail(request, slug: str):
    """A suite's board across its challenges."""
    suite = get_object_or_404(suite_list_visible(user=request.user), slug=slug)
    board = suite_board(suite=suite)
    titles = {task["slug"]: task["title"] for task in board["tasks"]}
    for entry in board["left_out"]:
        entry["missing_titles"] = [titles[slug] for slug in entry["missing"]]
    names = [f"{e['method_name']} ({e['team']})" for e in board["entries"]]
    forest = forest_narrow = heatmap = None
    if board["entries"] and "iqm" in board["entries"][0]:
        title = "Interquartile mean over every run of every task"
        forest, forest_narrow = (
            mark_safe(
                charts.forest_plot(board["entries"], statistic="iqm", id_prefix=prefix, title=title, narrow=narrow)
            )
            for prefix, narrow in (("suite-iqm", False), ("suite-iqmn", True))
        )
    if board["probability_of_improvement"]:
        heatmap = mark_safe(
            charts.heatmap(
                board["probability_of_improvement"]["p"],
                names,
                id_prefix="suite-poi",
                title="Probability of improvement, P(row > column), over tasks",
            )
        )
    for pair in board["bayesian"]:
        pair["a_name"], pair["b_name"] = names[pair["a"]], names[pair["b"]]
    cd = board["critical_difference"]
    cd_chart = profile = None
    if cd:
        cd["ranked"] = sorted(zip(cd["average_rank"], names))
        cd["clique_names"] = [[names[i] for i in clique] for clique in cd["cliques"]]
        cd_chart = mark_safe(
            charts.critical_difference(cd["ranked"], cd["cd"], cd["clique_names"], id_prefix="suite-cd")
        )
    if board["profile"]:
        profile = mark_safe(charts.performance_profile(board["profile"], names, id_prefix="suite-profile"))
    runs = min((min(e["runs"].values()) for e in board["entries"]), default=5)
    return render(
        request,
        "suites/detail.html",
        {
            "suite": suite,
            "board": board,
            "names": names,
            "forest": forest,
            "forest_narrow": forest_narrow,
            "heatmap": heatmap,
            "cd_chart": cd_chart,
            "profile": profile,
            "coverage": _coverage("suite.", runs),
            "coverage_tasks": SUITE_TASKS,
        },
    )


class SuiteForm(forms.Form):
    """A suite of challenges the user can see, aggregated on one board."""

    title = forms.CharField(max_length=200)
    slug = forms.SlugField(required=False, max_length=60, help_text="Empty: made from the title.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    challenges = forms.ModelMultipleChoiceField(
        queryset=None, widget=forms.CheckboxSelectMultiple, help_text="At least two: the tasks of the suite."
    )
    normalization = forms.ChoiceField(choices=Suite.Normalization.choices, initial=Suite.Normalization.MINMAX)
    rope = forms.FloatField(
        initial=0.01,
        min_value=0,
        max_value=0.5,
        label="Region of practical equivalence",
        help_text="On the normalised scale, for the Bayesian signed-rank test.",
    )

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["challenges"].queryset = challenge_list_visible(user=user).order_by("title")


@login_required
def suite_new(request):
    """Group visible challenges into a suite (``suite_create`` decides)."""
    form = SuiteForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            suite = suite_create(
                created_by=request.user,
                title=data["title"],
                slug=data["slug"] or None,
                description=data["description"],
                challenges=list(data["challenges"]),
                normalization=data["normalization"],
                rope=data["rope"],
            )
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            messages.success(request, "The suite is created.")
            return redirect("suite-detail", slug=suite.slug)
    return render(request, "suites/new.html", {"form": form})


# --------------------------------------------------------------------------- importing results
class ResultsOnlyForm(forms.Form):
    """A challenge without a dataset: its entries are imported results."""

    title = forms.CharField(max_length=200)
    slug = forms.SlugField(required=False, max_length=60, help_text="Empty: made from the title.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}))
    metric = forms.ChoiceField(
        choices=METRIC_CHOICES, initial="accuracy", help_text="What the imported per-instance scores measure."
    )
    direction = forms.ChoiceField(
        choices=[("", "The metric's own"), ("higher", "Higher is better"), ("lower", "Lower is better")],
        required=False,
        help_text="Leave it at the metric's own: one that contradicts the metric is refused.",
    )
    visibility = forms.ChoiceField(
        choices=Visibility.choices,
        initial=Visibility.PRIVATE,
        help_text="Private: only you see it until you publish it.",
    )


@login_required
def challenge_new_results_only(request):
    """Host a results-only challenge (no dataset, no submissions), then import its results."""
    form = ResultsOnlyForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            challenge = challenge_create_results_only(
                created_by=request.user,
                title=data["title"],
                slug=data["slug"] or None,
                description=data["description"],
                metric=data["metric"],
                higher_is_better={"higher": True, "lower": False}.get(data["direction"]),
                visibility=data["visibility"],
            )
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            messages.success(request, "The challenge is created: import its first results.")
            return redirect("results-import", slug=challenge.slug)
    return render(request, "challenges/new_results_only.html", {"form": form, "formats": FORMATS})


class ImportForm(forms.Form):
    format = forms.ChoiceField(choices=[(f, f) for f in FORMATS])
    files = MultipleFileField()
    models = forms.CharField(required=False, help_text="Per-model formats: one model name per file, comma-separated.")
    metric = forms.CharField(required=False, help_text="lm-evaluation-harness metric (default: acc, exact_match, ...).")
    instances = forms.FileField(required=False, help_text="Solved ids: every instance id, one per line.")
    team = forms.CharField(initial="Imported results")
    source = forms.ChoiceField(choices=EntryProvenance.Source.choices)
    link = forms.URLField(required=False, assume_scheme="https")


@login_required
def results_import(request, slug: str):
    """Hosts of a results-only challenge import per-instance results produced elsewhere."""
    challenge = _visible(request, slug)
    try:
        imports = results_import_list(challenge=challenge, user=request.user)
    except NotAllowed as exc:
        raise PermissionDenied(exc.message) from None
    refusal = upload_refusal(request)
    form = ImportForm(request.POST or None, request.FILES or None)
    if refusal is not None:  # a file over its limit, stopped while it streamed
        show_upload_refusal(form, refusal)
        context = {"challenge": challenge, "form": form, "imports": imports}
        return render(request, "challenges/import.html", context, status=400)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            uploads = read_prediction_uploads(data["files"], per="import")
            names = [m.strip() for m in data["models"].split(",")] if data["models"] else [None] * len(uploads)
            instances = None
            if data["instances"]:
                instances = results_instance_list(
                    read_upload(data["instances"], kind="prediction", field="instances").data
                )
            batch = results_import_create(
                challenge=challenge,
                user=request.user,
                format=data["format"],
                metric=data["metric"] or None,
                files=results_import_files(uploads, names),
                instances=instances,
                team_name=data["team"],
                source=data["source"],
                link=data["link"],
            )
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            messages.success(
                request, f"Imported {len(batch.model_names)} model(s) on {len(batch.instance_ids)} instances."
            )
            return redirect(challenge.get_absolute_url())
    return render(
        request,
        "challenges/import.html",
        {"challenge": challenge, "form": form, "imports": imports},
    )


# --------------------------------------------------------------------------- the board over time
def board_history(request, slug: str):
    """The board over time: the current best entries' ranks since they arrived, an entry's own history
    (``?entry=``), and once the private board is readable, the public-to-private shake-up."""
    from ..services.history import BOARD_CHART_ENTRIES, history_board, history_entry, shakeup
    from ..services.reports import report_data
    from .views import _scope, _visible_challenge

    challenge = _visible_challenge(request, slug)
    scope = _scope(request, challenge)  # the viewer's board, 403 or 404 as the board pages answer
    _, data = report_data(challenge=challenge, board=scope.board)
    rows = {row["submission_id"]: row for row in data["entries"]}
    best = [row["submission_id"] for row in data["entries"] if row.get("rank") is not None][:BOARD_CHART_ENTRIES]
    labels = {sid: f"{row['method_name']} ({row['team']})" for sid, row in rows.items()}
    series = history_board(challenge=challenge, board=scope.board, scope=scope, entries=best)
    context = {
        "challenge": challenge,
        "scope": scope,
        "entry": None,
        "entry_rows": None,
        "shakeup": None,
        "board_chart": mark_safe(
            charts.rank_history(
                {labels[sid]: [(r["at"], r["rank"]) for r in rows_] for sid, rows_ in series.items()},
                title=f"Rank over time of the {len(series)} best entries",
                id_prefix="history-board",
            )
        ),
    }
    entry = request.GET.get("entry")
    if entry:
        sid = whole_number(entry)
        if sid not in rows or not submission_id_readable(user=request.user, challenge=challenge, submission_id=sid):
            raise Http404("No such entry on this board.")
        own = history_entry(challenge=challenge, submission_id=int(entry), scope=scope)
        context.update(
            entry=rows[int(entry)],
            entry_rows=own.get(scope.board, []),
            entry_chart=mark_safe(
                charts.rank_history(
                    {labels[int(entry)]: [(r["at"], r["rank"]) for r in own.get(scope.board, [])]},
                    title="This entry's rank over time",
                    id_prefix="history-entry",
                )
            ),
        )
    if scope.sees_private:
        _, public = report_data(challenge=challenge)
        _, private = report_data(challenge=challenge, board="private")
        points = shakeup(public=public, private=private)
        if points:
            context["shakeup"] = mark_safe(charts.shakeup(points))
            context["shakeup_points"] = points
    return render(request, "challenges/history.html", context)
