"""REST endpoints of the statistical report: leaderboard, one comparison, state of the art.

Served from the cached ``Report.data`` (computed by the ``scoring`` queue; computed here,
synchronously, when it is missing or was made with other settings); see ``caching`` for
how the leaderboard stays cheap. The leaderboard leaves out each entry's ``run_scores``
(``/runs/`` has every run); the compare endpoint includes them. With ``n``, ``gamma``,
``alpha`` or ``statistic`` differing from the challenge's, the report is recomputed on the
fly, cached per report version, and throttled per client on a cache miss (each miss costs a
full report computation).
"""

from __future__ import annotations

import hashlib

from django.conf import settings as django_settings
from django.core.cache import cache
from django.http import HttpResponse, HttpResponseNotModified, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.permissions import IsAuthenticatedOrReadOnly
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.report import SECTION_PAIRS

from ..choices import Board
from ..models import Challenge, Report
from ..selectors import challenge_list_visible, submission_id_readable
from ..services.boards import board_scope
from ..services.errors import NotFound
from ..services.metrics import primary_metric
from ..services.paging import entries_page, page_limit, page_offset
from ..services.reports import (
    OVERRIDABLE,
    build_report_data,
    report_data,
    report_failure,
    report_with_overrides_key,
    section_pair,
)
from ..throttles import ClientScopedRateThrottle
from .caching import CACHE_SECONDS, HOT_FIELDS, MICRO_CACHE, leaderboard_cache_key, microcache_seconds
from .inputs import ChoiceField, refuse_unknown_query
from .paging import whole
from .renderers import CSVRenderer
from .report_schema import (
    BOARD_PARAMETER,
    FORMAT_PARAMETER,
    OVERRIDE_PARAMETERS,
    PAGING_PARAMETERS,
    CompareQuerySerializer,
    ComparisonSerializer,
    EntrySerializer,
    LeaderboardSerializer,
    ReportQuerySerializer,
    ReportSettingsSerializer,
    SotaSerializer,
)

__all__ = ["MICRO_CACHE", "CompareView", "LeaderboardView", "SotaView"]


#: Each report endpoint's query parameters: its schema's, and the only ones it takes (``refuse_unknown_query``).
LEADERBOARD_PARAMETERS = [*OVERRIDE_PARAMETERS, *PAGING_PARAMETERS, FORMAT_PARAMETER, BOARD_PARAMETER]
COMPARE_PARAMETERS = [
    OpenApiParameter("a", whole(1), required=True, description="Submission id of entry A."),
    OpenApiParameter("b", whole(1), required=True, description="Submission id of entry B."),
    *OVERRIDE_PARAMETERS,
    BOARD_PARAMETER,
]
SOTA_PARAMETERS = [*OVERRIDE_PARAMETERS, BOARD_PARAMETER]


class ReportViewMixin:
    permission_classes = [IsAuthenticatedOrReadOnly]
    throttle_scope = "report_recompute"  # VARBOARD_RECOMPUTE_RATE, on cache misses of overridden reports
    query_parameters: list[OpenApiParameter] = []

    def initial(self, request, *args, **kwargs):
        """A query parameter the endpoint does not take is a 400 naming it, before anything is computed."""
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        refuse_unknown_query(request.query_params, self.query_parameters)

    def get_challenge(self, slug: str) -> Challenge:
        return get_object_or_404(challenge_list_visible(user=self.request.user), slug=slug)

    def get_overrides(self, challenge: Challenge, serializer_class=ReportQuerySerializer) -> tuple[dict, dict]:
        """(validated query, overrides that differ from the challenge's settings); 400 names the parameter."""
        if serializer_class is ReportQuerySerializer and not any(k in self.request.query_params for k in OVERRIDABLE):
            return {}, {}  # the hot path: no serializer to build
        query = serializer_class(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        overrides = {
            key: value
            for key, value in query.validated_data.items()
            if key in OVERRIDABLE and value != getattr(challenge, OVERRIDABLE[key])
        }
        return query.validated_data, overrides

    def get_board(self, challenge: Challenge) -> str:
        """The board asked for (``?board=``), once ``services.boards`` has said this viewer may read it."""
        return board_scope(
            challenge=challenge, user=self.request.user, board=self.request.query_params.get("board")
        ).board

    def get_report(self, challenge: Challenge, overrides: dict, board: str = Board.PUBLIC) -> tuple[dict, dict]:
        """(report data, metadata) of ``board`` from the cache, or computed on the fly for overrides."""
        if overrides:
            key = report_with_overrides_key(challenge=challenge, overrides=overrides, board=board)
            data = cache.get(key)
            if data is None:
                throttle = ClientScopedRateThrottle()
                if not throttle.allow_request(self.request, self):
                    raise Throttled(
                        wait=throttle.wait(),
                        detail="Too many recomputations with other "
                        "n/gamma/alpha/statistic values; use the challenge's settings or wait.",
                    )
                data = build_report_data(challenge=challenge, overrides=overrides, board=board)
                cache.set(key, data, timeout=600)
            return data, {"computed_at": None, "recompute_pending": False, "recompute_failure": None}
        report, data = report_data(challenge=challenge, board=board)
        return data, {
            "computed_at": report.computed_at,
            "recompute_pending": report.recompute_pending,
            "recompute_failure": report_failure(report),
            "inputs_version": report.inputs_version,
        }


# Column order of an entry in JSON and CSV (PostgreSQL's jsonb does not keep the report's key order).
ENTRY_KEY_ORDER = (
    "submission_id",
    "method_name",
    "team",
    "kind",
    "version",
    "versions",
    "rank",
    "rank_display",
    "public_rank",
    "rank_change",
    "tied",
    "groups",
    "ranking_value",
    "runs_succeeded",
    "runs_expected",
    "k_runs",
    "mean",
    "boo_n",
    "median",
    "std",
    "rank_interval",
    "runs_needed_for_decision",
    "too_few_runs",
    "compared",
    "excluded_reason",
    "in_progress",
    "created",
    "estimate",
    "low",
    "high",
    "se",
    "n",
    "source",
)


def _ordered(row: dict) -> dict:
    """The entry with its keys (and its nested intervals' keys) in ENTRY_KEY_ORDER, others after them."""
    rank = {key: i for i, key in enumerate(ENTRY_KEY_ORDER)}
    keys = sorted(row, key=lambda key: (rank.get(key, len(rank)), key))
    return {key: _ordered(row[key]) if isinstance(row[key], dict) else row[key] for key in keys}


def csv_row(row: dict) -> dict:
    """An entry as a CSV row: its secondary metrics keyed by name (columns ``secondary.<name>.mean.low``, ...)."""
    out = {key: value for key, value in row.items() if key not in ("run_scores", "secondary")}
    out["secondary"] = {
        value["name"]: {key: item for key, item in value.items() if key != "name"} for value in row.get("secondary", ())
    }
    return _ordered(out)


@extend_schema(
    parameters=LEADERBOARD_PARAMETERS,
    responses={
        (200, "application/json"): LeaderboardSerializer,
        (200, "text/csv"): OpenApiTypes.STR,
        304: OpenApiResponse(description="Not modified: the `ETag` sent in `If-None-Match` still holds."),
    },
    description="The statistical leaderboard: per entry the runs, mean and Boo_n with intervals, median, std, "
    "significance groups, rank interval and the runs a decision still needs, section by section "
    "(recipes on seed-paired runs, predictions through the paired bootstrap over test examples). "
    "Served from the cached report; recomputed on the fly when `n`, `gamma`, `alpha` or "
    "`statistic` differ from the challenge's. Paged: `limit` entries (default 50) from `offset`, "
    "or around a submission (`around`), or matching a team or method name (`q`); `paging` says "
    "where the page sits. `?format=csv` streams one row per entry, every entry. "
    "`?board=private`: the private board (hosts until the reveal; 403 otherwise), with each "
    "entry's rank on the public board and its rank change.",
)
class LeaderboardView(ReportViewMixin, APIView):
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CSVRenderer]
    query_parameters = LEADERBOARD_PARAMETERS

    def dispatch(self, request, *args, **kwargs):
        """Answer anonymous GETs from the micro-cache before DRF (or the database) is involved."""
        ttl = microcache_seconds()
        anonymous = (
            "HTTP_AUTHORIZATION" not in request.META and django_settings.SESSION_COOKIE_NAME not in request.COOKIES
        )
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
        board = Board.PUBLIC if "board" not in request.query_params else self.get_board(challenge)
        _, overrides = self.get_overrides(challenge)
        renderer = request.accepted_renderer
        if isinstance(renderer, CSVRenderer):  # every entry, streamed
            data, _ = self.get_report(challenge, overrides, board)
            rows = [csv_row(row) for row in data["entries"]]
            return StreamingHttpResponse(renderer.stream(rows), content_type="text/csv; charset=utf-8")
        paging = self.get_paging()
        if overrides or board != Board.PUBLIC or isinstance(renderer, BrowsableAPIRenderer):
            return Response(self.payload(challenge, overrides, *self.get_report(challenge, overrides, board), paging))
        return self.cached_response(challenge, renderer, paging)

    def get_paging(self) -> dict:
        """``limit``, ``offset``, ``q``, ``around`` of the query (services.paging); 400 names a bad one."""
        params = self.request.query_params
        try:
            paging = {"limit": page_limit(params.get("limit")), "query": params.get("q", "")[:100]}
        except ValueError as exc:
            raise ValidationError({"limit": str(exc)}) from None
        for name in ("offset", "around"):
            try:
                value = page_offset(name, params.get(name))
            except ValueError as exc:
                raise ValidationError({name: str(exc)}) from None
            if value is not None:
                paging[name] = value
        return paging

    @staticmethod
    def payload(challenge: Challenge, overrides: dict, data: dict, meta: dict, paging: dict | None = None) -> dict:
        """The board's settings and sections, and one page of its entries (:func:`services.paging.entries_page`)."""
        sections = [
            {key: value for key, value in section.items() if key not in SECTION_PAIRS} for section in data["sections"]
        ]
        page = entries_page(data["entries"], **(paging or {}))
        rows = {row["submission_id"]: row for row in data["entries"]}
        primary = primary_metric(challenge)
        return {
            "challenge": challenge.slug,
            "board": data.get("board", Board.PUBLIC),
            "feedback": data.get("feedback"),
            "metric": primary.name,
            "metric_label": primary.label,
            "higher_is_better": challenge.higher_is_better,
            "secondary_metrics": data["settings"].get("secondary_metrics", []),
            "computed_at": meta["computed_at"],
            "recompute_pending": meta["recompute_pending"],
            "recompute_failure": meta["recompute_failure"],
            "overrides": overrides,
            "settings": data["settings"],
            "sections": sections,
            "paging": page.as_dict(),
            "entries": [
                _ordered({key: value for key, value in rows[sid].items() if key != "run_scores"}) for sid in page.ids
            ],
        }

    def cached_response(self, challenge: Challenge, renderer, paging: dict) -> HttpResponse:
        """Rendered bytes of the page asked for, cached under the report's version and the challenge's settings."""
        page_key = repr(sorted(paging.items()))
        try:
            report = challenge.report
        except Report.DoesNotExist:
            report = None
        cached = None
        if report is not None and report.computed_at is not None:
            cached = cache.get(
                leaderboard_cache_key(
                    challenge,
                    renderer.format,
                    report.inputs_version,
                    report.computed_at,
                    report.recompute_pending,
                    page_key,
                    failed_at=report.failed_at,
                )
            )
        if cached is None:
            data, meta = self.get_report(challenge, {})
            body = renderer.render(
                self.payload(challenge, {}, data, meta, paging), renderer.media_type, {"request": self.request}
            )
            cached = (body, f'"{hashlib.sha256(body).hexdigest()[:32]}"')
            key = leaderboard_cache_key(
                challenge,
                renderer.format,
                meta["inputs_version"],
                meta["computed_at"],
                meta["recompute_pending"],
                page_key,
                failed_at=(meta["recompute_failure"] or {}).get("at"),
            )
            cache.set(key, cached, CACHE_SECONDS)
        body, etag = cached
        content_type = f"{renderer.media_type}; charset={renderer.charset}" if renderer.charset else renderer.media_type
        return self.bytes_response(self.request, body, content_type, etag)


@extend_schema(
    parameters=COMPARE_PARAMETERS,
    responses={
        200: inline_serializer(
            "CompareResponse",
            fields={
                "challenge": serializers.CharField(),
                "section": serializers.CharField(),
                "design": serializers.CharField(),
                "settings": ReportSettingsSerializer(),
                "a": EntrySerializer(),
                "b": EntrySerializer(),
                "comparison": ComparisonSerializer(allow_null=True),
                "reason": serializers.CharField(allow_null=True),
            },
        )
    },
    description="One comparison in full: P(A>B), its percentile-bootstrap interval, the multiplicity-adjusted "
    "p-value, the γ decision and verdict, with both entries. On a large board the report stores "
    "each entry's comparisons with its neighbours, the leader and its frontier; any other pair of "
    "compared recipe entries is decided on demand, as one of the section's pairs (docs/scale.md). "
    "`comparison` is null (with `reason`) when an entry is left out of comparisons.",
)
class CompareView(ReportViewMixin, APIView):
    query_parameters = COMPARE_PARAMETERS

    def get(self, request, slug: str):
        challenge = self.get_challenge(slug)
        query, overrides = self.get_overrides(challenge, CompareQuerySerializer)
        data, _ = self.get_report(challenge, overrides, self.get_board(challenge))
        rows = {row["submission_id"]: row for row in data["entries"]}
        for name in ("a", "b"):
            if query[name] not in rows or not submission_id_readable(
                user=request.user, challenge=challenge, submission_id=query[name]
            ):
                raise NotFound(f"Submission {query[name]} ({name}) is not on this leaderboard.", field=name)
        a, b = rows[query["a"]], rows[query["b"]]
        if a["kind"] != b["kind"]:
            raise ValidationError(
                {
                    "b": f"a is a {a['kind']} entry and b a {b['kind']} entry: they are scored on "
                    "different test data and are not compared."
                }
            )
        section = next(s for s in data["sections"] if s["kind"] == a["kind"])
        comparison, reason = section_pair(
            challenge=challenge, section=section, a=a, b=b, overrides=overrides, board=data.get("board", Board.PUBLIC)
        )
        if comparison is None and reason is None:
            left_out = [row for row in (a, b) if not row["compared"]]
            reason = (
                "; ".join(
                    f"{row['method_name']} (submission {row['submission_id']}): {row['excluded_reason']}"
                    for row in left_out
                )
                or "not compared"
            )
        return Response(
            {
                "challenge": challenge.slug,
                "section": section["kind"],
                "design": section["design"],
                "settings": data["settings"],
                "a": a,
                "b": b,
                "comparison": comparison,
                "reason": reason,
            }
        )


@extend_schema(
    parameters=SOTA_PARAMETERS,
    responses={
        200: inline_serializer(
            "SotaResponse",
            fields={
                "challenge": serializers.CharField(),
                "board": ChoiceField(choices=Board.choices),
                "metric": serializers.CharField(),
                "higher_is_better": serializers.BooleanField(),
                "computed_at": serializers.DateTimeField(allow_null=True),
                "m_note": serializers.CharField(allow_null=True, help_text="What m counts."),
                "sota": SotaSerializer(many=True),
            },
        )
    },
    description="The multiplicity-adjusted state of the art (Møllersen & Holsbø), per section: the raw best "
    "mean, the adjusted estimate and conservative bound, m (every entry ever scored on that test "
    "data) and the method (exact binomial for accuracy, normal approximation otherwise). It is about the highest "
    "mean: beaten_by names the entries the board's verdicts on P(A>B) show beating that entry (null when none).",
)
class SotaView(ReportViewMixin, APIView):
    query_parameters = SOTA_PARAMETERS

    def get(self, request, slug: str):
        challenge = self.get_challenge(slug)
        _, overrides = self.get_overrides(challenge)
        board = self.get_board(challenge)
        data, meta = self.get_report(challenge, overrides, board)
        sota = [{"kind": section["kind"], **section["sota"]} for section in data["sections"]]
        return Response(
            {
                "challenge": challenge.slug,
                "board": board,
                "metric": primary_metric(challenge).name,
                "higher_is_better": challenge.higher_is_better,
                "computed_at": meta["computed_at"],
                "m_note": data["settings"].get("m_note"),
                "sota": sota,
            }
        )
