"""Input and output serializers. Inputs only check shapes and types; services decide."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from evaluation.seeds import SOURCES

from ..choices import SubmissionKind
from ..models import Challenge, Dataset, Run, Submission
from ..selectors import submission_can_see_details, user_is_host
from ..services.challenges import CHALLENGE_FIELDS


class DatasetSerializer(serializers.ModelSerializer):
    class Meta:
        model = Dataset
        fields = ["id_column", "label_column", "feature_columns", "task", "classes", "n_train", "n_test", "version"]


class ChallengeSerializer(serializers.ModelSerializer):
    hosts = serializers.SlugRelatedField(many=True, read_only=True, slug_field="username")
    dataset = DatasetSerializer(read_only=True)
    downloads = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    class Meta:
        model = Challenge
        fields = ["slug", "url", *CHALLENGE_FIELDS, "hosts", "dataset", "downloads", "created"]
        read_only_fields = fields

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "string"}})
    def get_downloads(self, challenge: Challenge) -> dict:
        request = self.context.get("request")
        if not hasattr(challenge, "dataset"):
            return {}
        parts = ["train"]
        if challenge.dataset.test_inputs_file:
            parts += ["test_inputs", "sample_submission"]
        if request is not None and user_is_host(user=request.user, challenge=challenge):
            parts.append("hidden_labels")
        return {part: self._absolute(reverse("api-challenge-download", kwargs={"slug": challenge.slug, "part": part}))
                for part in parts}

    def get_url(self, challenge: Challenge) -> str:
        return self._absolute(challenge.get_absolute_url())

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class ChallengeCreateSerializer(serializers.ModelSerializer):
    """A new challenge: its settings plus the dataset upload (multipart)."""

    slug = serializers.SlugField(required=False, max_length=60)
    higher_is_better = serializers.BooleanField(required=False, allow_null=True, default=None)
    # Explicit defaults: in multipart forms an omitted boolean would otherwise read as False.
    allow_predictions = serializers.BooleanField(required=False, default=True)
    allow_recipes = serializers.BooleanField(required=False, default=False)
    stratify = serializers.BooleanField(required=False, default=True)
    randomize_sources = serializers.ListField(child=serializers.ChoiceField(choices=SOURCES), required=False)
    dataset = serializers.FileField(write_only=True, help_text="CSV or Parquet: an id column, features, a label.")
    test_dataset = serializers.FileField(write_only=True, required=False,
                                         help_text="Optional hidden test rows (same columns), kept from contestants; "
                                                   "with `test_labels`, the test inputs only.")
    test_labels = serializers.FileField(write_only=True, required=False,
                                        help_text="Hidden labels of `test_dataset` (id and label columns).")
    id_column = serializers.CharField(write_only=True, default="id")
    label_column = serializers.CharField(write_only=True, default="label")
    test_column = serializers.CharField(write_only=True, required=False, allow_blank=True,
                                        help_text="A 0/1 column marking the hidden test rows in `dataset`.")
    feature_columns = serializers.ListField(child=serializers.CharField(), required=False, write_only=True)

    class Meta:
        model = Challenge
        fields = ["slug", *CHALLENGE_FIELDS, "dataset", "test_dataset", "test_labels", "id_column", "label_column",
                  "test_column", "feature_columns"]


class ChallengeUpdateSerializer(serializers.ModelSerializer):
    randomize_sources = serializers.ListField(child=serializers.ChoiceField(choices=SOURCES), required=False)

    class Meta:
        model = Challenge
        fields = list(CHALLENGE_FIELDS)


class RunSerializer(serializers.ModelSerializer):
    submission = serializers.IntegerField(source="submission_id", read_only=True)
    method_name = serializers.CharField(source="submission.method_name", read_only=True)
    team = serializers.CharField(source="submission.team.name", read_only=True)
    kind = serializers.CharField(source="submission.kind", read_only=True)

    class Meta:
        model = Run
        fields = ["submission", "method_name", "team", "kind", "index", "status", "seeds", "split_id",
                  "test_score", "valid_score", "hyperparameters", "duration_s", "device"]
        read_only_fields = fields


class RunDetailSerializer(RunSerializer):
    """With the log and error: for the submitting team and the hosts."""

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "error_message", "log", "hpo_trials", "fingerprint", "attempts",
                  "started_at", "finished_at"]
        read_only_fields = fields


class SubmissionSerializer(serializers.ModelSerializer):
    challenge = serializers.SlugRelatedField(read_only=True, slug_field="slug")
    team = serializers.CharField(source="team.name", read_only=True)
    submitted_by = serializers.CharField(source="submitted_by.username", read_only=True)
    progress = serializers.SerializerMethodField()
    runs = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = ["id", "url", "challenge", "team", "submitted_by", "kind", "method_name", "description", "status",
                  "progress", "runs_expected", "error_message", "created", "started_at", "finished_at", "runs"]
        read_only_fields = fields

    @extend_schema_field({"type": "object", "properties": {"finished": {"type": "integer"},
                                                            "succeeded": {"type": "integer"},
                                                            "failed": {"type": "integer"},
                                                            "expected": {"type": "integer"},
                                                            "fraction": {"type": "number"}}})
    def get_progress(self, submission: Submission) -> dict:
        runs = list(submission.runs.all())
        succeeded = sum(r.status == "succeeded" for r in runs)
        failed = sum(r.status == "failed" for r in runs)
        expected = submission.runs_expected or len(runs) or 1
        return {"finished": succeeded + failed, "succeeded": succeeded, "failed": failed, "expected": expected,
                "fraction": (succeeded + failed) / expected}

    @extend_schema_field(RunDetailSerializer(many=True))
    def get_runs(self, submission: Submission) -> list:
        request = self.context.get("request")
        detailed = request is not None and submission_can_see_details(user=request.user, submission=submission)
        serializer = RunDetailSerializer if detailed else RunSerializer
        return serializer(submission.runs.all(), many=True).data

    def get_url(self, submission: Submission) -> str:
        request = self.context.get("request")
        path = submission.get_absolute_url()
        return request.build_absolute_uri(path) if request is not None else path

    def to_representation(self, submission):
        data = super().to_representation(submission)
        request = self.context.get("request")
        if request is None or not submission_can_see_details(user=request.user, submission=submission):
            for private in ("error_message", "description", "submitted_by"):
                data.pop(private, None)
        return data


class SubmissionCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SubmissionKind.choices, default=SubmissionKind.PREDICTIONS)
    method_name = serializers.CharField(max_length=120)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    team = serializers.IntegerField(required=False, allow_null=True, default=None,
                                    help_text="Team id; your personal team when omitted.")
    files = serializers.ListField(child=serializers.FileField(), required=False, default=list,
                                  help_text="Prediction CSV files, one per seed run (each file is a run).")
    recipe = serializers.FileField(required=False, help_text="A recipe .py file (kind=recipe).")
    hyperparameters = serializers.JSONField(required=False, default=dict)

    def validate(self, attrs):
        if attrs["kind"] == SubmissionKind.PREDICTIONS and not attrs.get("files"):
            raise serializers.ValidationError({"files": "Upload at least one predictions file."})
        if attrs["kind"] == SubmissionKind.RECIPE and not attrs.get("recipe"):
            raise serializers.ValidationError({"recipe": "Upload the recipe file."})
        return attrs
