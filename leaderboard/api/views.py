"""REST API views: an input serializer, one service call, an output serializer."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated, IsAuthenticatedOrReadOnly
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from ..choices import SubmissionKind
from ..downloads import dataset_download
from ..models import Run, Submission
from ..selectors import (
    challenge_list_visible,
    runs_for_challenge,
    submission_can_see_details,
    submission_list_for,
    submission_readable,
)
from ..services.boards import board_scope
from ..services.challenges import DatasetUpload, challenge_create, challenge_update
from ..services.submissions import (
    submission_cancel,
    submission_create_predictions,
    submission_create_recipe,
    submission_select_final,
)
from ..uploads import read_dataset_upload, read_prediction_uploads, read_recipe_upload
from .filters import ChallengeFilter, RunFilter, SubmissionFilter, filtered
from .host_views import ChallengeHostActions, ChallengeMovingActions, ScoringProgramActions
from .inputs import StrictQuery, takes_query
from .parsers import BoundedJSONParser
from .permissions import IsHostOrReadOnly
from .renderers import CSVRenderer
from .report_schema import BOARD_PARAMETER, FORMAT_PARAMETER, RUN_FILTERS, SUBMISSION_FILTERS
from .schema import error_responses
from .serializers import (
    ChallengeCreateSerializer,
    ChallengeSerializer,
    ChallengeUpdateSerializer,
    RunDetailSerializer,
    RunSerializer,
    SelectSerializer,
    SubmissionCreateSerializer,
    SubmissionSerializer,
)


@extend_schema_view(
    list=extend_schema(description="Challenges you can see: every public one, and the private ones you host."),
    retrieve=extend_schema(description="One challenge: its settings, dataset, phases and hosts."),
)
class ChallengeViewSet(
    StrictQuery,
    ChallengeHostActions,
    ChallengeMovingActions,
    ScoringProgramActions,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Challenges: anyone reads public ones; signed-in users host new ones; hosts change theirs."""

    lookup_field = "slug"
    serializer_class = ChallengeSerializer
    permission_classes = [IsAuthenticatedOrReadOnly, IsHostOrReadOnly]
    parser_classes = [MultiPartParser, FormParser, BoundedJSONParser]
    filterset_class = ChallengeFilter
    ordering_fields = ["created", "title"]

    def get_queryset(self):
        return (
            challenge_list_visible(user=self.request.user)
            .select_related("dataset")
            .prefetch_related("hosts", "phases")
            .order_by("-created")
        )

    @extend_schema(request={"multipart/form-data": ChallengeCreateSerializer}, responses={201: ChallengeSerializer})
    def create(self, request):
        """Host a new challenge (signed-in users): its settings and dataset, validated before anything is stored."""
        incoming = ChallengeCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = dict(incoming.validated_data)
        main = read_dataset_upload(data.pop("dataset"))
        test = data.pop("test_dataset", None)
        test = read_dataset_upload(test, field="test_dataset") if test is not None else None
        labels = data.pop("test_labels", None)
        labels = read_dataset_upload(labels, field="test_labels") if labels is not None else None
        upload = DatasetUpload(
            data=main.data,
            filename=main.name,
            id_column=data.pop("id_column"),
            label_column=data.pop("label_column"),
            test_column=data.pop("test_column", None) or None,
            test_data=test.data if test else None,
            test_filename=test.name if test else None,
            test_labels_data=labels.data if labels else None,
            test_labels_filename=labels.name if labels else None,
            feature_columns=tuple(data.pop("feature_columns", ()) or ()) or None,
        )
        challenge = challenge_create(created_by=request.user, dataset=upload, slug=data.pop("slug", None), **data)
        return Response(
            ChallengeSerializer(challenge, context={"request": request}).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(request=ChallengeUpdateSerializer, responses=ChallengeSerializer)
    def partial_update(self, request, slug=None):
        """Change a challenge's settings (its hosts): send only the fields to change; each change is audited."""
        challenge = self.get_object()
        incoming = ChallengeUpdateSerializer(challenge, data=request.data, partial=True)
        incoming.is_valid(raise_exception=True)
        challenge = challenge_update(challenge=challenge, user=request.user, **incoming.validated_data)
        return Response(ChallengeSerializer(challenge, context={"request": request}).data)

    @takes_query(
        SUBMISSION_FILTERS,
        paged=True,
        methods=["GET"],
        responses=SubmissionSerializer(many=True),
        description="Your teams' submissions to this challenge (hosts: all of them).",
    )
    @extend_schema(
        methods=["POST"],
        request={"multipart/form-data": SubmissionCreateSerializer},
        responses={202: SubmissionSerializer, **error_responses(409, 429)},
        description="Submit predictions (one file, or k files from k seeds: each file is a run) or "
        "a training recipe. Everything is validated before anything is stored.",
    )
    @action(
        detail=True,
        methods=["get", "post"],
        permission_classes=[IsAuthenticatedOrReadOnly],
        parser_classes=[MultiPartParser, FormParser],
        filter_backends=[],
    )
    def submissions(self, request, slug=None):
        challenge = self.get_object()
        if request.method == "GET":
            queryset = submission_list_for(user=request.user, challenge=challenge).prefetch_related("runs")
            page = self.paginate_queryset(filtered(SubmissionFilter, request, queryset))
            data = SubmissionSerializer(page, many=True, context={"request": request}).data
            return self.get_paginated_response(data)
        incoming = SubmissionCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        common = dict(
            challenge=challenge,
            user=request.user,
            method_name=data["method_name"],
            description=data["description"],
            team_id=data["team"],
        )
        if data["kind"] == SubmissionKind.PREDICTIONS:
            submission = submission_create_predictions(files=read_prediction_uploads(data["files"]), **common)
        else:
            submission = submission_create_recipe(
                recipe=read_recipe_upload(data["recipe"]), hyperparameters=data["hyperparameters"], **common
            )
        return Response(
            SubmissionSerializer(submission, context={"request": request}).data, status=status.HTTP_202_ACCEPTED
        )

    @takes_query(
        [FORMAT_PARAMETER, BOARD_PARAMETER, *RUN_FILTERS],
        paged=True,
        responses={(200, "application/json"): RunSerializer(many=True), (200, "text/csv"): OpenApiTypes.STR},
        description="Every run of every entry, with its seeds, split id and scores on the board you "
        "read: enough to recompute that board. Logs are on the submission endpoint "
        "(own team, hosts).",
    )
    @action(
        detail=True,
        methods=["get"],
        renderer_classes=[JSONRenderer, BrowsableAPIRenderer, CSVRenderer],
        filter_backends=[],
    )
    def runs(self, request, slug=None):
        challenge = self.get_object()
        context = {
            "request": request,
            "scope": board_scope(challenge=challenge, user=request.user, board=request.GET.get("board")),
        }
        queryset = filtered(RunFilter, request, runs_for_challenge(challenge=challenge, user=request.user))
        if request.accepted_renderer.format == "csv":
            return Response(RunSerializer(queryset, many=True, context=context).data)
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(RunSerializer(page, many=True, context=context).data)


@extend_schema(responses={(200, "text/csv"): OpenApiTypes.STR})
class ChallengeDownloadView(APIView):
    """Public parts of the dataset (train, test inputs, sample submission); hidden labels for hosts only."""

    permission_classes = [IsAuthenticatedOrReadOnly]

    def get(self, request, slug: str, part: str):
        challenge = get_object_or_404(challenge_list_visible(user=request.user), slug=slug)
        return dataset_download(challenge=challenge, part=part, user=request.user)


class SubmissionViewSet(StrictQuery, mixins.RetrieveModelMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """A submission: status, progress and per-run scores; logs and errors for its team and the hosts."""

    serializer_class = SubmissionSerializer
    filterset_class = SubmissionFilter
    ordering_fields = ["created"]

    def get_queryset(self):
        if self.action == "list":
            return submission_list_for(user=self.request.user).prefetch_related("runs").order_by("-created")
        visible = challenge_list_visible(user=self.request.user)
        return (
            Submission.objects.filter(challenge__in=visible)
            .select_related("challenge", "team", "submitted_by")
            .prefetch_related("runs")
        )

    def get_object(self):
        """The submission, or 404 where the reader may not open it (unscored and off the board, or moderated):
        its page, its runs, its cancel and its selection alike, so no answer tells it from a missing one."""
        submission = super().get_object()
        if not submission_readable(user=self.request.user, submission=submission):
            raise Http404
        return submission

    def retrieve(self, request, pk=None):
        return Response(self.get_serializer(self.get_object()).data)

    @extend_schema(request=None, responses=SubmissionSerializer)
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def cancel(self, request, pk=None):
        submission = submission_cancel(submission=self.get_object(), user=request.user)
        return Response(self.get_serializer(submission).data)

    @extend_schema(
        request=SelectSerializer,
        responses={200: SubmissionSerializer, **error_responses(409)},
        description="Choose this submission for the private board (`selected=false` un-chooses it); "
        "a team chooses at most the challenge's `final_entries`.",
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def select(self, request, pk=None):
        incoming = SelectSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        submission = submission_select_final(
            submission=self.get_object(), user=request.user, selected=incoming.validated_data["selected"]
        )
        return Response(self.get_serializer(submission).data)

    @extend_schema(responses=RunDetailSerializer)
    @action(detail=True, methods=["get"], url_path=r"runs/(?P<index>\d+)")
    def run(self, request, pk=None, index=None):
        submission = self.get_object()
        if not submission_can_see_details(user=request.user, submission=submission):
            raise PermissionDenied("Run logs are visible to the submitting team and the hosts only.")
        run = get_object_or_404(
            Run.objects.select_related("submission__challenge"), submission=submission, index=int(index)
        )
        return Response(RunDetailSerializer(run, context={"request": request}).data)
