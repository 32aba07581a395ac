"""REST endpoints beyond one leaderboard: variance studies, imported results, benchmark suites.

Each view is an input serializer, one service call and an output, as in ``views``; service
errors become HTTP errors through the project's exception handler.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticatedOrReadOnly
from rest_framework.response import Response
from rest_framework.views import APIView

from evaluation.imports import FORMATS

from ..models import EntryProvenance, ResultsImport, Submission, Suite, VarianceStudy
from ..selectors import challenge_list_visible, submission_readable, suite_list_visible, variance_studies_readable
from ..services.results_import import (
    results_import_create,
    results_import_files,
    results_import_list,
    results_instance_list,
)
from ..services.suites import suite_board, suite_create
from ..services.variance_studies import variance_study_allowed, variance_study_create, variance_study_shown
from ..uploads import read_prediction_uploads, read_upload
from .beyond_schema import (
    ResultsImportOutSerializer,
    SuiteBoardSerializer,
    SuiteSummarySerializer,
    VarianceStudySerializer,
)
from .inputs import ChoiceField, StrictInput, StrictQuery, takes_query
from .paging import StrictLimitOffsetPagination
from .parsers import BoundedJSONParser


def study_data(study: VarianceStudy, user) -> dict:
    """The study as ``user`` may read it: its result follows the challenge's boards (``variance_study_shown``)."""
    runs = list(study.runs.values_list("status", flat=True))
    return {
        "id": study.pk,
        "challenge": study.challenge.slug,
        "submission": study.submission_id,
        "method_name": study.submission.method_name,
        "k_runs": study.k_runs,
        "sources": study.sources,
        "searches_hyperparameters": study.searches_hyperparameters,
        "status": study.status,
        "runs": {"total": len(runs), **{s: runs.count(s) for s in ("queued", "running", "succeeded", "failed")}},
        "created": study.created,
        "finished_at": study.finished_at,
        **variance_study_shown(study=study, user=user),
    }


class VarianceStudyCreateSerializer(StrictInput, serializers.Serializer):
    submission = serializers.IntegerField(help_text="The recipe entry to study.")
    k_runs = serializers.IntegerField(default=5, min_value=2, max_value=100)
    sources = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Sources to vary one at a time (default: all that apply).",
    )


class ChallengeScopedView(StrictQuery, APIView):
    """A view under ``/api/challenges/{slug}/``: the challenge, if the user may see it."""

    permission_classes = [IsAuthenticatedOrReadOnly]
    pagination_class = StrictLimitOffsetPagination  # lists: {count, next, previous, results}, as every list of the API

    def challenge(self, slug):
        return get_object_or_404(challenge_list_visible(user=self.request.user), slug=slug)

    def validated(self, serializer_class) -> dict:
        incoming = serializer_class(data=self.request.data)
        incoming.is_valid(raise_exception=True)
        return incoming.validated_data

    def paginated(self, rows, shown) -> Response:
        """One page (``?limit=&offset=``) of ``rows``, each as ``shown(row)``."""
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, self.request, view=self)
        return paginator.get_paginated_response([shown(row) for row in page])


class VarianceStudyListView(ChallengeScopedView):
    """A challenge's variance studies; its hosts start new ones."""

    @takes_query(paged=True, responses=VarianceStudySerializer(many=True))
    def get(self, request, slug: str):
        studies = variance_studies_readable(user=request.user, challenge=self.challenge(slug))
        return self.paginated(studies, lambda study: study_data(study, request.user))

    @extend_schema(
        request=VarianceStudyCreateSerializer,
        responses={201: VarianceStudySerializer},
        description="Rerun a recipe entry varying each source of randomness alone, then all jointly "
        "(k runs each); hosts only.",
    )
    def post(self, request, slug: str):
        challenge = self.challenge(slug)
        variance_study_allowed(challenge=challenge, user=request.user)  # before the lookup: no existence oracle
        data = self.validated(VarianceStudyCreateSerializer)
        submission = get_object_or_404(Submission, pk=data["submission"], challenge=challenge)
        study = variance_study_create(
            submission=submission, user=request.user, k_runs=data["k_runs"], sources=data.get("sources")
        )
        return Response(study_data(study, request.user), status=status.HTTP_201_CREATED)


class VarianceStudyDetailView(APIView):
    """One study: its runs' progress and, once they have ended, the standard deviation by source."""

    permission_classes = [IsAuthenticatedOrReadOnly]

    @extend_schema(responses=VarianceStudySerializer)
    def get(self, request, pk: int):
        visible = challenge_list_visible(user=request.user)
        study = get_object_or_404(
            VarianceStudy.objects.select_related("challenge", "submission"), pk=pk, challenge__in=visible
        )
        if not submission_readable(user=request.user, submission=study.submission):  # as the submission's page
            raise Http404
        return Response(study_data(study, request.user))


class ResultsImportSerializer(StrictInput, serializers.Serializer):
    format = ChoiceField(choices=FORMATS)
    files = serializers.ListField(child=serializers.FileField(), allow_empty=False)
    models = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="One model name per file (lm-eval-jsonl, solved-ids)."
    )
    metric = serializers.CharField(required=False, help_text="lm-evaluation-harness metric (default: acc, ...).")
    instances = serializers.FileField(required=False, help_text="Every instance id, one per line (solved-ids).")
    team = serializers.CharField(required=False, default="Imported results")
    source = ChoiceField(choices=EntryProvenance.Source.choices, default=EntryProvenance.Source.SELF_REPORTED)
    link = serializers.URLField(required=False, default="")
    note = serializers.CharField(required=False, default="")


def import_data(batch: ResultsImport) -> dict:
    return {
        "id": batch.pk,
        "challenge": batch.challenge.slug,
        "format": batch.format,
        "files": batch.original_names,
        "metric": batch.metric,
        "binary": batch.binary,
        "models": batch.model_names,
        "instances": len(batch.instance_ids),
        "created": batch.created,
    }


class ResultsImportView(ChallengeScopedView):
    """Per-instance results produced elsewhere, imported into a results-only challenge (hosts only)."""

    parser_classes = [MultiPartParser, FormParser, BoundedJSONParser]

    @takes_query(paged=True, responses=ResultsImportOutSerializer(many=True))
    def get(self, request, slug: str):
        return self.paginated(results_import_list(challenge=self.challenge(slug), user=request.user), import_data)

    @extend_schema(
        request={"multipart/form-data": ResultsImportSerializer},
        responses={201: ResultsImportOutSerializer},
        description="Import a generic CSV (model, instance_id, score or correct), lm-evaluation-harness "
        "per-sample JSONL files or lists of solved instance ids; each model becomes an entry "
        "with its provenance, compared instance by instance.",
    )
    def post(self, request, slug: str):
        challenge = self.challenge(slug)
        data = self.validated(ResultsImportSerializer)
        uploads = read_prediction_uploads(data["files"], per="import")
        files = results_import_files(uploads, data.get("models") or [None] * len(uploads))
        instances = None
        if data.get("instances") is not None:
            instances = results_instance_list(read_upload(data["instances"], kind="prediction", field="instances").data)
        batch = results_import_create(
            challenge=challenge,
            user=request.user,
            files=files,
            format=data["format"],
            metric=data.get("metric"),
            instances=instances,
            team_name=data["team"],
            source=data["source"],
            link=data["link"],
            note=data["note"],
        )
        return Response(import_data(batch), status=status.HTTP_201_CREATED)


class SuiteCreateSerializer(StrictInput, serializers.Serializer):
    title = serializers.CharField(max_length=200)
    slug = serializers.SlugField(required=False, max_length=60)
    description = serializers.CharField(required=False, default="")
    challenges = serializers.ListField(child=serializers.SlugField(), min_length=2, help_text="Slugs of the tasks.")
    normalization = ChoiceField(choices=Suite.Normalization.choices, default=Suite.Normalization.MINMAX)
    rope = serializers.FloatField(default=0.01, min_value=0.0, max_value=0.5)


class SuiteListView(ChallengeScopedView):
    """Benchmark suites; a signed-in user groups challenges they can see into a new one."""

    @takes_query(paged=True, responses=SuiteSummarySerializer(many=True), operation_id="suites_list")
    def get(self, request):
        """Benchmark suites whose challenges you can all see."""
        suites = suite_list_visible(user=request.user).prefetch_related("challenges")
        return self.paginated(
            suites, lambda s: {"slug": s.slug, "title": s.title, "tasks": [c.slug for c in s.challenges.all()]}
        )

    @extend_schema(request=SuiteCreateSerializer, responses={201: SuiteSummarySerializer}, operation_id="suites_create")
    def post(self, request):
        """Group challenges you can see into a new suite (signed-in users)."""
        data = self.validated(SuiteCreateSerializer)
        challenges = [self.challenge(slug) for slug in data["challenges"]]
        suite = suite_create(
            created_by=request.user,
            title=data["title"],
            slug=data.get("slug"),
            description=data["description"],
            challenges=challenges,
            normalization=data["normalization"],
            rope=data["rope"],
        )
        return Response(
            {"slug": suite.slug, "title": suite.title, "tasks": [c.slug for c in challenges]},
            status=status.HTTP_201_CREATED,
        )


class SuiteDetailView(APIView):
    """A suite's board: IQM with stratified-bootstrap intervals, profiles, P(X>Y), critical difference, Bayes."""

    permission_classes = [IsAuthenticatedOrReadOnly]

    @extend_schema(responses=SuiteBoardSerializer, operation_id="suites_board")
    def get(self, request, slug: str):
        suite = get_object_or_404(suite_list_visible(user=request.user), slug=slug)
        return Response(suite_board(suite=suite))
