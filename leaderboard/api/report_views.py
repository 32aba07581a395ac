"""REST endpoints of the statistical report: leaderboard, one comparison, state of the art.

Served from the cached ``Report.data`` (computed by the ``scoring`` queue; computed here,
synchronously, when it is missing or was made with other settings). Two layers keep the
leaderboard cheap to serve:

* its rendered bytes are cached (Django cache) under the report's version and the
  challenge's settings, so a hit costs one narrow query;
* when ``VARBOARD["LEADERBOARD_MICROCACHE_S"]`` is set (seconds; absent or 0: off),
  anonymous GETs are answered from a process-local micro-cache with no query at all.
  A new report, or a challenge turned private, then reaches anonymous readers at most
  that long after it happened (reports are debounced by 1 s anyway). It is off by
  default because tests reuse slugs with new data within a second.
The leaderboard leaves out each entry's ``run_scores`` (``/runs/`` has every run); the
compare endpoint includes them.
With ``n``, ``gamma``, ``alpha`` or ``statistic`` differing from the challenge's, the
report is recomputed on the fly and not cached.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict

from django.conf import settings as django_settings
from django.core.cache import cache
from django.http import HttpResponse, HttpResponseNotModified
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound, Throttled, ValidationError
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.permissions import IsAuthenticatedOrReadOnly
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.report import flip_comparison

from ..choices import RankingStatistic, SubmissionKind
from ..models import Challenge, Report
from ..selectors import challenge_list_visible
from ..services.report_builder import build_report_data, report_current, report_settings_key
from .renderers import CSVRenderer

CACHE_SECONDS = 300


class MicroCache:
    """A small process-local LRU of rendered responses that expire after a few seconds."""

    def __init__(self, size: int = 256):
        self.size = size
        self.items: OrderedDict = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key):
        item = self.items.get(key)
        return item[1] if item is not None and item[0] > time.monotonic() else None

    def put(self, key, value, ttl: float) -> None:
        with self.lock:
            self.items[key] = (time.monotonic() + ttl, value)
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


MICRO_CACHE = MicroCache()


def microcache_seconds() -> float:
    return float(django_settings.VARBOARD.get("LEADERBOARD_MICROCACHE_S", 0) or 0)


# ------------------------------------------------------------------------ input
class ReportQuerySerializer(serializers.Serializer):
    """Optional overrides of the challenge's statistical settings."""

    n = serializers.IntegerField(required=False, min_value=1, max_value=1000, help_text="Boo_n pool size.")
    gamma = serializers.FloatField(required=False, help_text="Threshold of a meaningful P(A>B), in (0.5, 1).")
    alpha = serializers.FloatField(required=False, help_text="Significance level, in (0, 0.5].")
    statistic = serializers.ChoiceField(required=False, choices=RankingStatistic.choices,
                                        help_text="Ranking statistic.")

    def validate_gamma(self, value: float) -> float:
        if not 0.5 < value < 1.0:
            raise serializers.ValidationError("gamma must be strictly between 0.5 and 1.")
        return value

    def validate_alpha(self, value: float) -> float:
        if not 0.0 < value <= 0.5:
            raise serializers.ValidationError("alpha must be in (0, 0.5].")
        return value


class CompareQuerySerializer(ReportQuerySerializer):
    a = serializers.IntegerField(min_value=1, help_text="Submission id of entry A.")
    b = serializers.IntegerField(min_value=1, help_text="Submission id of entry B.")

    def validate(self, attrs):
        if attrs["a"] == attrs["b"]:
            raise serializers.ValidationError({"b": "a and b must be different submissions."})
        return attrs


# ----------------------------------------------------------------------- output (schema)
def _interval(name: str, **extra):
    return inline_serializer(name, fields={"estimate": serializers.FloatField(allow_null=True),
                                           "low": serializers.FloatField(allow_null=True),
                                           "high": serializers.FloatField(allow_null=True), **extra})


class EntrySerializer(serializers.Serializer):
    submission_id = serializers.IntegerField()
    method_name = serializers.CharField()
    team = serializers.CharField()
    kind = serializers.ChoiceField(choices=SubmissionKind.choices)
    created = serializers.CharField()
    in_progress = serializers.BooleanField()
    runs_succeeded = serializers.IntegerField()
    runs_expected = serializers.IntegerField()
    k_runs = serializers.IntegerField()
    rank = serializers.IntegerField(allow_null=True, help_text="Null when the entry is not compared.")
    rank_display = serializers.CharField(allow_null=True, help_text='"=2" marks a tie.')
    tied = serializers.BooleanField()
    ranking_value = serializers.FloatField(allow_null=True)
    mean = _interval("ReportMean", se=serializers.FloatField(allow_null=True),
                     source=serializers.ChoiceField(choices=["runs", "test examples"]))
    boo_n = _interval("ReportBooN", n=serializers.IntegerField())
    median = serializers.FloatField(allow_null=True)
    std = serializers.FloatField(allow_null=True)
    groups = serializers.CharField(help_text="Significance-group letters; entries sharing one are tied.")
    rank_interval = inline_serializer("ReportRankInterval", allow_null=True, fields={
        "rank": serializers.IntegerField(), "low": serializers.IntegerField(), "high": serializers.IntegerField()})
    runs_needed_for_decision = serializers.IntegerField(allow_null=True)
    too_few_runs = serializers.BooleanField()
    compared = serializers.BooleanField()
    excluded_reason = serializers.CharField(allow_null=True)
    boo_n_curve = serializers.ListField(child=serializers.FloatField(allow_null=True))
    run_scores = serializers.ListField(child=serializers.FloatField(allow_null=True), required=False,
                                       help_text="Every run's test score (compare endpoint; on the leaderboard "
                                                 "see /runs/).")


class SotaSerializer(serializers.Serializer):
    kind = serializers.CharField(required=False)
    raw = serializers.FloatField(allow_null=True)
    estimate = serializers.FloatField(allow_null=True)
    bound = serializers.FloatField(allow_null=True, help_text="Conservative bound (lower, or upper for a loss).")
    bound_side = serializers.ChoiceField(choices=["lower", "upper"], allow_null=True)
    m = serializers.IntegerField()
    method = serializers.ChoiceField(choices=["binomial", "normal"], allow_null=True)
    alpha = serializers.FloatField()
    n = serializers.IntegerField(allow_null=True)
    se = serializers.FloatField(allow_null=True)
    submission_id = serializers.IntegerField(allow_null=True)
    note = serializers.CharField(allow_null=True)


class ComparisonSerializer(serializers.Serializer):
    section = serializers.CharField()
    a = serializers.IntegerField()
    b = serializers.IntegerField()
    a_name = serializers.CharField()
    b_name = serializers.CharField()
    p = serializers.FloatField(allow_null=True, help_text="P(A>B).")
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    pvalue = serializers.FloatField(allow_null=True, help_text="Multiplicity-adjusted p-value.")
    pvalue_raw = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField()
    meaningful = serializers.BooleanField()
    reverse = inline_serializer("ReportReverse", fields={"significant": serializers.BooleanField(),
                                                         "meaningful": serializers.BooleanField()})
    verdict = serializers.ChoiceField(choices=["a_better", "b_better", "not_significant", "not_meaningful",
                                               "not_significant_after_correction"])
    better = serializers.IntegerField(allow_null=True)


class SectionSerializer(serializers.Serializer):
    kind = serializers.CharField()
    label = serializers.CharField()
    design = serializers.CharField()
    entries = serializers.ListField(child=serializers.IntegerField())
    compared = serializers.ListField(child=serializers.IntegerField())
    leader_group = serializers.ListField(child=serializers.IntegerField())
    paired_runs = serializers.ListField(child=serializers.IntegerField(), allow_null=True)
    n_examples = serializers.IntegerField(allow_null=True)
    sota = SotaSerializer()


class LeaderboardSerializer(serializers.Serializer):
    challenge = serializers.CharField()
    metric = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    computed_at = serializers.DateTimeField(allow_null=True)
    recompute_pending = serializers.BooleanField()
    overrides = serializers.DictField()
    settings = serializers.DictField()
    sections = SectionSerializer(many=True)
    entries = EntrySerializer(many=True)


OVERRIDE_PARAMETERS = [
    OpenApiParameter("n", int, description="Boo_n pool size (default: the challenge's)."),
    OpenApiParameter("gamma", float, description="γ of the decision rule, in (0.5, 1)."),
    OpenApiParameter("alpha", float, description="Significance level, in (0, 0.5]."),
    OpenApiParameter("statistic", str, enum=list(RankingStatistic.values), description="Ranking statistic."),
]
FORMAT_PARAMETER = OpenApiParameter("format", str, enum=["json", "csv"])
OVERRIDES = ("n", "gamma", "alpha", "statistic")
# What the cached leaderboard needs of a challenge and its report: one narrow query.
HOT_FIELDS = ("slug", "metric", "higher_is_better", "boo_n", "gamma", "alpha", "bootstrap_resamples",
              "ranking_statistic", "correction", "k_runs", "master_seed", "visibility",
              "report__inputs_version", "report__computed_at", "report__recompute_pending")


# ------------------------------------------------------------------------ views
class ReportRecomputeThrottle(ScopedRateThrottle):
    """At most VARBOARD_RECOMPUTE_RATE (default 30/min) uncached recomputations per user or address."""

    scope = "report_recompute"

    def get_cache_key(self, request, view):
        ident = request.user.pk if request.user and request.user.is_authenticated else self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}

    def allow_request(self, request, view):
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super(ScopedRateThrottle, self).allow_request(request, view)

    def get_rate(self):
        return django_settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"].get(self.scope, "30/min")


class ReportViewMixin:
    permission_classes = [IsAuthenticatedOrReadOnly]

    def get_challenge(self, slug: str) -> Challenge:
        return get_object_or_404(challenge_list_visible(user=self.request.user), slug=slug)

    def get_overrides(self, challenge: Challenge, serializer_class=ReportQuerySerializer) -> tuple[dict, dict]:
        """(validated query, overrides that differ from the challenge's settings); 400 names the parameter."""
        if serializer_class is ReportQuerySerializer and not any(k in self.request.query_params for k in OVERRIDES):
            return {}, {}  # the hot path: no serializer to build
        query = serializer_class(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        current = {"n": challenge.boo_n, "gamma": challenge.gamma, "alpha": challenge.alpha,
                   "statistic": challenge.ranking_statistic}
        overrides = {key: value for key, value in query.validated_data.items()
                     if key in current and value != current[key]}
        return query.validated_data, overrides

    def get_report(self, challenge: Challenge, overrides: dict) -> tuple[dict, dict]:
        """(report data, metadata) from the cache, or computed on the fly for overrides."""
        if overrides:
            # Recomputed on the fly for other n/γ/α/statistic: cached per report version, and
            # throttled per client on a miss (each one costs a full report computation).
            version = report_current(challenge=challenge).inputs_version
            digest = hashlib.sha256(f"{version}:{sorted(overrides.items())}".encode()).hexdigest()[:32]
            key = f"varboard:override:{challenge.pk}:{digest}"
            data = cache.get(key)
            if data is None:
                throttle = ReportRecomputeThrottle()
                if not throttle.allow_request(self.request, self):
                    raise Throttled(wait=throttle.wait(), detail="Too many recomputations with other "
                                    "n/gamma/alpha/statistic values; use the challenge's settings or wait.")
                data = build_report_data(challenge=challenge, overrides=overrides)
                cache.set(key, data, timeout=600)
            return data, {"computed_at": None, "recompute_pending": False}
        report = report_current(challenge=challenge)
        return report.data, {"computed_at": report.computed_at, "recompute_pending": report.recompute_pending,
                             "inputs_version": report.inputs_version}


# Column order of an entry in JSON and CSV (PostgreSQL's jsonb does not keep the report's key order).
ENTRY_KEY_ORDER = ("submission_id", "method_name", "team", "kind", "rank", "rank_display", "tied", "groups",
                   "ranking_value", "runs_succeeded", "runs_expected", "k_runs", "mean", "boo_n", "median", "std",
                   "rank_interval", "runs_needed_for_decision", "too_few_runs", "compared", "excluded_reason",
                   "in_progress", "created", "estimate", "low", "high", "se", "n", "source")


def _ordered(row: dict) -> dict:
    """The entry with its keys (and its nested intervals' keys) in ENTRY_KEY_ORDER, others after them."""
    rank = {key: i for i, key in enumerate(ENTRY_KEY_ORDER)}
    keys = sorted(row, key=lambda key: (rank.get(key, len(rank)), key))
    return {key: _ordered(row[key]) if isinstance(row[key], dict) else row[key] for key in keys}


@extend_schema(
    parameters=[*OVERRIDE_PARAMETERS, FORMAT_PARAMETER],
    responses={200: LeaderboardSerializer, (200, "text/csv"): OpenApiTypes.STR},
    description="The statistical leaderboard: per entry the runs, mean and Boo_n with intervals, median, std, "
                "significance groups, rank interval and the runs a decision still needs, section by section "
                "(recipes on seed-paired runs, predictions through the paired bootstrap over test examples). "
                "Served from the cached report; recomputed on the fly when `n`, `gamma`, `alpha` or "
                "`statistic` differ from the challenge's. `?format=csv` gives one row per entry.")
class LeaderboardView(ReportViewMixin, APIView):
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CSVRenderer]

    def dispatch(self, request, *args, **kwargs):
        """Answer anonymous GETs from the micro-cache before DRF (or the database) is involved."""
        ttl = microcache_seconds()
        anonymous = ("HTTP_AUTHORIZATION" not in request.META
                     and django_settings.SESSION_COOKIE_NAME not in request.COOKIES)
        key = None
        if ttl > 0 and anonymous and request.method == "GET":
            key = (kwargs.get("slug"), request.META.get("QUERY_STRING", ""), request.META.get("HTTP_ACCEPT", ""))
            hit = MICRO_CACHE.get(key)
            if hit is not None:
                return self.bytes_response(request, *hit)
        response = super().dispatch(request, *args, **kwargs)
        cacheable = getattr(response, "cached_body", None)
        if key is not None and cacheable is not None and response.status_code == 200:
            MICRO_CACHE.put(key, cacheable, ttl)
        return response

    @staticmethod
    def bytes_response(request, body: bytes, content_type: str, etag: str) -> HttpResponse:
        if etag in request.headers.get("If-None-Match", ""):
            return HttpResponseNotModified(headers={"ETag": etag})
        response = HttpResponse(body, content_type=content_type, headers={"ETag": etag, "Vary": "Accept"})
        response.cached_body = (body, content_type, etag)
        return response

    def get(self, request, slug: str):
        visible = challenge_list_visible(user=request.user).select_related("report").only(*HOT_FIELDS)
        challenge = get_object_or_404(visible, slug=slug)
        _, overrides = self.get_overrides(challenge)
        renderer = request.accepted_renderer
        if overrides or isinstance(renderer, BrowsableAPIRenderer):
            return Response(self.payload(challenge, overrides, *self.get_report(challenge, overrides)))
        return self.cached_response(challenge, renderer)

    @staticmethod
    def payload(challenge: Challenge, overrides: dict, data: dict, meta: dict) -> dict:
        sections = [{key: value for key, value in section.items() if key != "comparisons"}
                    for section in data["sections"]]
        return {"challenge": challenge.slug, "metric": challenge.metric,
                "higher_is_better": challenge.higher_is_better, "computed_at": meta["computed_at"],
                "recompute_pending": meta["recompute_pending"], "overrides": overrides,
                "settings": data["settings"], "sections": sections,
                "entries": [_ordered({key: value for key, value in row.items() if key != "run_scores"})
                            for row in data["entries"]]}

    @staticmethod
    def cache_key(challenge: Challenge, renderer, version: str, computed_at, pending: bool) -> str:
        raw = f"{challenge.pk}:{version}:{computed_at.isoformat()}:{pending}:{report_settings_key(challenge)}"
        return f"varboard:leaderboard:{renderer.format}:{hashlib.sha256(raw.encode()).hexdigest()[:32]}"

    def cached_response(self, challenge: Challenge, renderer) -> HttpResponse:
        """Rendered bytes, cached under the report's version and the challenge's settings."""
        try:
            report = challenge.report
        except Report.DoesNotExist:
            report = None
        cached = None
        if report is not None and report.computed_at is not None:
            cached = cache.get(self.cache_key(challenge, renderer, report.inputs_version, report.computed_at,
                                              report.recompute_pending))
        if cached is None:
            data, meta = self.get_report(challenge, {})
            body = renderer.render(self.payload(challenge, {}, data, meta), renderer.media_type,
                                   {"request": self.request})
            cached = (body, f'"{hashlib.sha256(body).hexdigest()[:32]}"')
            key = self.cache_key(challenge, renderer, meta["inputs_version"], meta["computed_at"],
                                 meta["recompute_pending"])
            cache.set(key, cached, CACHE_SECONDS)
        body, etag = cached
        content_type = f"{renderer.media_type}; charset={renderer.charset}" if renderer.charset else renderer.media_type
        return self.bytes_response(self.request, body, content_type, etag)


@extend_schema(
    parameters=[OpenApiParameter("a", int, required=True, description="Submission id of entry A."),
                OpenApiParameter("b", int, required=True, description="Submission id of entry B."),
                *OVERRIDE_PARAMETERS],
    responses={200: inline_serializer("CompareResponse", fields={
        "challenge": serializers.CharField(), "section": serializers.CharField(),
        "design": serializers.CharField(), "settings": serializers.DictField(),
        "a": EntrySerializer(), "b": EntrySerializer(),
        "comparison": ComparisonSerializer(allow_null=True),
        "reason": serializers.CharField(allow_null=True)})},
    description="One comparison in full: P(A>B), its percentile-bootstrap interval, the multiplicity-adjusted "
                "p-value, the γ decision and verdict, with both entries. `comparison` is null (with `reason`) "
                "when an entry is left out of comparisons.")
class CompareView(ReportViewMixin, APIView):
    def get(self, request, slug: str):
        challenge = self.get_challenge(slug)
        query, overrides = self.get_overrides(challenge, CompareQuerySerializer)
        data, _ = self.get_report(challenge, overrides)
        rows = {row["submission_id"]: row for row in data["entries"]}
        for name in ("a", "b"):
            if query[name] not in rows:
                raise NotFound(f"Submission {query[name]} ({name}) is not on this leaderboard.")
        a, b = rows[query["a"]], rows[query["b"]]
        if a["kind"] != b["kind"]:
            raise ValidationError({"b": f"a is a {a['kind']} entry and b a {b['kind']} entry: they are scored on "
                                        "different test data and are not compared."})
        section = next(s for s in data["sections"] if s["kind"] == a["kind"])
        comparison, reason = None, None
        for pair in section["comparisons"]:
            if {pair["a"], pair["b"]} == {a["submission_id"], b["submission_id"]}:
                comparison = pair if pair["a"] == a["submission_id"] else flip_comparison(pair)
        if comparison is None:
            left_out = [row for row in (a, b) if not row["compared"]]
            reason = "; ".join(f"{row['method_name']} (submission {row['submission_id']}): "
                               f"{row['excluded_reason']}" for row in left_out) or "not compared"
        return Response({"challenge": challenge.slug, "section": section["kind"], "design": section["design"],
                         "settings": data["settings"], "a": a, "b": b, "comparison": comparison, "reason": reason})


@extend_schema(
    parameters=OVERRIDE_PARAMETERS,
    responses={200: inline_serializer("SotaResponse", fields={
        "challenge": serializers.CharField(), "metric": serializers.CharField(),
        "higher_is_better": serializers.BooleanField(), "computed_at": serializers.DateTimeField(allow_null=True),
        "sota": SotaSerializer(many=True)})},
    description="The multiplicity-adjusted state of the art (Møllersen & Holsbø), per section: the raw best "
                "mean, the adjusted estimate and conservative bound, m (every entry ever scored on that test "
                "data) and the method (exact binomial for accuracy, normal approximation otherwise).")
class SotaView(ReportViewMixin, APIView):
    def get(self, request, slug: str):
        challenge = self.get_challenge(slug)
        _, overrides = self.get_overrides(challenge)
        data, meta = self.get_report(challenge, overrides)
        sota = [{"kind": section["kind"], **section["sota"]} for section in data["sections"]]
        return Response({"challenge": challenge.slug, "metric": challenge.metric,
                         "higher_is_better": challenge.higher_is_better, "computed_at": meta["computed_at"],
                         "sota": sota})
