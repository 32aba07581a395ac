"""Challenge actions beyond reading and submitting: reveal, phases, registration, audit log, rescoring.

Mixed into ``ChallengeViewSet`` (same URL prefix, ``/api/challenges/{slug}/…``). Each action is an
input serializer, one service call and an output serializer; the services check who may act.
"""

from __future__ import annotations

from django.http import FileResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated, IsAuthenticatedOrReadOnly
from rest_framework.response import Response

from ..choices import Visibility
from ..models import Phase, Registration
from ..selectors import user_is_host
from ..services.bundles import bundle_export_file, bundle_import
from ..services.challenges import challenge_reveal
from ..services.phases import phase_create, phase_update
from ..services.programs import program_remove, program_resume, program_state, program_upload
from ..services.registrations import registration_decide, registration_decide_allowed, registration_register
from ..services.rescoring import challenge_rescore
from ..services.results_import import challenge_create_results_only
from ..uploads import read_dataset_upload, read_upload, upload_file
from .inputs import ChoiceField, StrictInput, takes_query
from .paging import page_of
from .parsers import BoundedJSONParser
from .schema import error_responses
from .serializers import (
    AuditEntrySerializer,
    ChallengeSerializer,
    DecideSerializer,
    PhaseSerializer,
    RegisterSerializer,
    RegistrationSerializer,
    ReportVersionSerializer,
    RescoreSerializer,
)

HOSTS_ONLY = "Only the challenge's hosts can see this."


class ChallengeHostActions:
    """``reveal``, ``phases``, ``register``, ``registrations``, ``audit``, ``rescore``, ``report-versions``."""

    def _hosted(self, request):
        challenge = self.get_object()
        if not user_is_host(user=request.user, challenge=challenge):
            raise PermissionDenied(HOSTS_ONLY)
        return challenge

    @extend_schema(
        request=None,
        responses=ChallengeSerializer,
        description="Reveal the private board (hosts): from now on everyone sees both boards. "
        "Revealing ends the challenge: every open phase closes now, and later "
        "submissions are refused.",
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def reveal(self, request, slug=None):
        challenge = challenge_reveal(challenge=self.get_object(), user=request.user)
        return Response(ChallengeSerializer(challenge, context={"request": request}).data)

    @takes_query(paged=True, methods=["GET"], responses=PhaseSerializer(many=True))
    @extend_schema(
        methods=["POST"], request=PhaseSerializer, responses={201: PhaseSerializer}, description="Add a phase (hosts)."
    )
    @action(
        detail=True,
        methods=["get", "post"],
        permission_classes=[IsAuthenticatedOrReadOnly],
        parser_classes=[BoundedJSONParser, FormParser, MultiPartParser],
        filter_backends=[],
    )
    def phases(self, request, slug=None):
        challenge = self.get_object()
        if request.method == "GET":
            return page_of(self, request, challenge.phases.all(), PhaseSerializer)
        incoming = PhaseSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        phase = phase_create(challenge=challenge, user=request.user, **incoming.validated_data)
        return Response(PhaseSerializer(phase).data, status=201)

    @extend_schema(request=PhaseSerializer, responses=PhaseSerializer, description="Change a phase (hosts).")
    @action(
        detail=True,
        methods=["patch"],
        url_path=r"phases/(?P<phase_id>\d+)",
        permission_classes=[IsAuthenticated],
        parser_classes=[BoundedJSONParser, FormParser, MultiPartParser],
    )
    def phase(self, request, slug=None, phase_id=None):
        phase = get_object_or_404(Phase, challenge=self.get_object(), pk=int(phase_id))
        incoming = PhaseSerializer(phase, data=request.data, partial=True)
        incoming.is_valid(raise_exception=True)
        return Response(PhaseSerializer(phase_update(phase=phase, user=request.user, **incoming.validated_data)).data)

    @extend_schema(
        request=RegisterSerializer,
        responses=RegistrationSerializer,
        description="Take part: accept the challenge's rules (and, where required, ask the hosts).",
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def register(self, request, slug=None):
        incoming = RegisterSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        registration = registration_register(
            challenge=self.get_object(), user=request.user, accept_rules=incoming.validated_data["accept_rules"]
        )
        return Response(RegistrationSerializer(registration).data)

    @takes_query(paged=True, responses=RegistrationSerializer(many=True), description="Registrations (hosts).")
    @action(detail=True, methods=["get"], permission_classes=[IsAuthenticated], filter_backends=[])
    def registrations(self, request, slug=None):
        challenge = self._hosted(request)
        rows = challenge.registrations.select_related("user", "decided_by").order_by("created", "pk")
        return page_of(self, request, rows, RegistrationSerializer)

    @extend_schema(
        request=DecideSerializer,
        responses=RegistrationSerializer,
        description="Approve or reject a registration (hosts).",
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"registrations/(?P<registration_id>\d+)/decide",
        permission_classes=[IsAuthenticated],
    )
    def decide(self, request, slug=None, registration_id=None):
        challenge = self.get_object()
        registration_decide_allowed(challenge=challenge, user=request.user)  # before the lookup: no existence oracle
        registration = get_object_or_404(Registration, challenge=challenge, pk=int(registration_id))
        incoming = DecideSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        registration = registration_decide(
            registration=registration, user=request.user, approve=incoming.validated_data["approve"]
        )
        return Response(RegistrationSerializer(registration).data)

    @takes_query(
        paged=True,
        responses=AuditEntrySerializer(many=True),
        description="The audit log of host actions: who changed which setting or file, when (hosts).",
    )
    @action(detail=True, methods=["get"], permission_classes=[IsAuthenticated], filter_backends=[])
    def audit(self, request, slug=None):
        challenge = self._hosted(request)
        page = self.paginate_queryset(challenge.audit_entries.select_related("actor"))
        return self.get_paginated_response(AuditEntrySerializer(page, many=True).data)

    @takes_query(
        paged=True,
        responses=ReportVersionSerializer(many=True),
        description="Reports kept from before each rescore (hosts). `data` is the report as it was stored: "
        "a section's comparisons are `comparisons` (rows) in reports stored before the table "
        "layout, `comparison_table` (one list per column) since (docs/scale.md).",
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="report-versions",
        permission_classes=[IsAuthenticated],
        filter_backends=[],
    )
    def report_versions(self, request, slug=None):
        challenge = self._hosted(request)
        page = self.paginate_queryset(challenge.report_versions.all())
        return self.get_paginated_response(ReportVersionSerializer(page, many=True).data)

    @extend_schema(
        request={"multipart/form-data": RescoreSerializer},
        responses={
            202: inline_serializer(
                "RescoreResult",
                fields={
                    "queued": serializers.IntegerField(help_text="Prediction submissions queued for rescoring."),
                    "recipes_left": serializers.IntegerField(help_text="Recipe submissions, not rescored."),
                },
            ),
            **error_responses(409),
        },
        description="Correct the hidden labels and/or the metric, then rescore every prediction "
        "submission (hosts); earlier reports are kept.",
    )
    @action(
        detail=True,
        methods=["post"],
        permission_classes=[IsAuthenticated],
        parser_classes=[MultiPartParser, FormParser, BoundedJSONParser],
    )
    def rescore(self, request, slug=None):
        challenge = self.get_object()
        incoming = RescoreSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        phase = get_object_or_404(Phase, challenge=challenge, pk=data["phase"]) if data["phase"] else None
        labels = None
        if data.get("hidden_labels") is not None:
            upload = read_dataset_upload(data["hidden_labels"], field="hidden_labels")
            labels = (upload.name, upload.data)
        result = challenge_rescore(
            challenge=challenge, user=request.user, phase=phase, hidden_labels=labels, metric=data["metric"] or None
        )
        return Response(result, status=202)


class ScoringProgramUploadSerializer(StrictInput, serializers.Serializer):
    program = serializers.FileField(help_text="The scoring program: one Python file (docs/scoring-programs.md).")


class ProgramMetricSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    primary = serializers.BooleanField()


class ScoringProgramSerializer(serializers.Serializer):
    status = ChoiceField(
        choices=["", "checking", "ok", "failed", "suspended"],
        help_text='"" no program; "checking" queued or running on the sample submission; "ok"; "failed"; '
        '"suspended" after failing on several teams\' files (POST .../resume/).',
    )
    metrics = ProgramMetricSerializer(many=True, help_text="What the program declared (after a successful check).")
    error = serializers.CharField(help_text="Why the check failed (may quote the hidden labels: hosts only).")
    checked_at = serializers.DateTimeField(allow_null=True)
    failures = serializers.IntegerField(
        help_text="Contestants' files the program failed on since its last check (all teams together)."
    )


class ScoringProgramActions:
    """``{slug}/scoring-program``: a host's scoring program (``services.programs``)."""

    @extend_schema(
        methods=["GET"],
        request=None,
        responses=ScoringProgramSerializer,
        description="The scoring program's check (hosts): status, declared metrics, error, when checked.",
    )
    @extend_schema(
        methods=["PUT"],
        request={"multipart/form-data": ScoringProgramUploadSerializer},
        responses={202: ScoringProgramSerializer, **error_responses(409, 429)},
        description="Upload the challenge's scoring program (hosts; before the first submission): it is "
        "checked on the sample submission by a worker (status `checking`, then `ok` or `failed`).",
    )
    @extend_schema(
        methods=["DELETE"],
        request=None,
        responses={200: ScoringProgramSerializer},
        description="Remove the scoring program (hosts; before the first submission): the built-in metric scores.",
    )
    @action(
        detail=True,
        methods=["get", "put", "delete"],
        url_path="scoring-program",
        permission_classes=[IsAuthenticated],
        parser_classes=[MultiPartParser, FormParser],
    )
    def scoring_program(self, request, slug=None):
        challenge = self.get_object()
        status = 200
        if request.method == "PUT":
            incoming = ScoringProgramUploadSerializer(data=request.data)
            incoming.is_valid(raise_exception=True)
            upload = read_upload(incoming.validated_data["program"], kind="program", field="program")
            challenge = program_upload(challenge=challenge, user=request.user, data=upload.data, filename=upload.name)
            status = 202
        elif request.method == "DELETE":
            challenge = program_remove(challenge=challenge, user=request.user)
        return Response(
            ScoringProgramSerializer(program_state(challenge=challenge, user=request.user)).data, status=status
        )

    @extend_schema(
        request=None,
        responses={202: ScoringProgramSerializer, **error_responses(400, 429)},
        description="Check the scoring program again (hosts), after a suspension or teams blocked by their "
        "failures: it takes their submissions once the check passes, its failure counts from zero.",
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="scoring-program/resume",
        url_name="scoring-program-resume",
        permission_classes=[IsAuthenticated],
    )
    def scoring_program_resume(self, request, slug=None):
        challenge = program_resume(challenge=self.get_object(), user=request.user)
        return Response(
            ScoringProgramSerializer(program_state(challenge=challenge, user=request.user)).data, status=202
        )


class ResultsOnlySerializer(StrictInput, serializers.Serializer):
    title = serializers.CharField(max_length=200)
    slug = serializers.SlugField(required=False, max_length=60, help_text="Default: made from the title.")
    description = serializers.CharField(required=False, default="")
    metric = serializers.CharField(default="accuracy", help_text="What the imported per-instance scores measure.")
    higher_is_better = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Default: the metric's own direction; one that contradicts the metric is refused.",
    )
    visibility = ChoiceField(choices=Visibility.choices, default=Visibility.PUBLIC)


class BundleImportSerializer(StrictInput, serializers.Serializer):
    bundle = serializers.FileField(help_text="A zip exported by GET /api/challenges/{slug}/bundle/.")
    slug = serializers.SlugField(required=False, max_length=60, help_text="Default: the bundle's own slug.")
    title = serializers.CharField(required=False, max_length=200, help_text="Default: the bundle's own title.")


class ChallengeMovingActions:
    """``results-only`` and ``bundle`` (create), ``{slug}/bundle`` (export): challenges without a dataset, and
    challenges moved between servers as one zip (``services.bundles``)."""

    @extend_schema(
        request=ResultsOnlySerializer,
        responses={201: ChallengeSerializer},
        operation_id="challenges_results_only",
        description="Host a results-only challenge (no dataset, no submissions): its entries are imported "
        "with POST /api/challenges/{slug}/imports/.",
    )
    @action(
        detail=False,
        methods=["post"],
        url_path="results-only",
        permission_classes=[IsAuthenticated],
        parser_classes=[BoundedJSONParser, FormParser, MultiPartParser],
    )
    def results_only(self, request):
        incoming = ResultsOnlySerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        challenge = challenge_create_results_only(
            created_by=request.user,
            title=data["title"],
            slug=data.get("slug"),
            description=data["description"],
            metric=data["metric"],
            higher_is_better=data["higher_is_better"],
            visibility=data["visibility"],
        )
        return Response(ChallengeSerializer(challenge, context={"request": request}).data, status=201)

    @extend_schema(
        request={"multipart/form-data": BundleImportSerializer},
        responses={201: ChallengeSerializer},
        operation_id="challenges_bundle_import",
        description="Create a challenge, hosted by you, from a bundle (all or nothing).",
    )
    @action(
        detail=False,
        methods=["post"],
        url_path="bundle",
        permission_classes=[IsAuthenticated],
        parser_classes=[MultiPartParser, FormParser],
    )
    def bundle_import(self, request):
        incoming = BundleImportSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        bundle = upload_file(data["bundle"], kind="bundle", field="bundle")  # read where it lies, never whole
        challenge = bundle_import(data=bundle, user=request.user, slug=data.get("slug"), title=data.get("title"))
        return Response(ChallengeSerializer(challenge, context={"request": request}).data, status=201)

    @extend_schema(
        request=None,
        responses={(200, "application/zip"): OpenApiTypes.BINARY, **error_responses(400)},
        operation_id="challenges_bundle_export",
        description="The challenge as a bundle (hosts; audit-logged): manifest.json and data/.",
    )
    @action(detail=True, methods=["get"], url_path="bundle", permission_classes=[IsAuthenticated])
    def bundle_export(self, request, slug=None):
        challenge = self.get_object()
        archive = bundle_export_file(challenge=challenge, user=request.user)
        return FileResponse(
            archive, as_attachment=True, filename=f"{challenge.slug}-bundle.zip", content_type="application/zip"
        )
