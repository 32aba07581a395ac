"""Input and output serializers. Inputs only check shapes and types; services decide."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from evaluation.metrics import METRICS
from evaluation.seeds import SOURCES

from ..choices import SubmissionKind
from ..models import AuditEntry, Challenge, Dataset, Phase, Registration, ReportVersion, Run, Submission
from ..selectors import phase_in_force, private_board_revealed, submission_can_see_details, user_is_host
from ..services.boards import BoardScope, board_private_revealed, board_scope, board_submission_secondary
from ..services.challenges import CHALLENGE_FIELDS, challenge_warnings
from ..services.errors import ServiceError
from ..services.phases import FIRST_PHASE_FIELDS, PHASE_FIELDS
from ..services.queues import challenge_queue_waits, submission_queue_wait
from ..services.submissions import hyperparameters_size_check
from .inputs import ChoiceField, StrictInput
from .schema import JSONObjectField, LabelField


class HyperparametersField(JSONObjectField):
    """A recipe's hyperparameters; as JSON text (multipart), refused past their limit before it is parsed."""

    def to_internal_value(self, data):
        if isinstance(data, (str, bytes)):
            try:
                hyperparameters_size_check(len(data.encode() if isinstance(data, str) else data))
            except ServiceError as exc:
                raise serializers.ValidationError(exc.message) from None
        try:
            return super().to_internal_value(data)
        except RecursionError:
            raise serializers.ValidationError("Not usable JSON: its arrays or objects are nested too deeply.") from None


def secondary_metrics_field(**kwargs) -> serializers.ListField:
    """``secondary_metrics``: built-in metric names (the services check they fit the challenge)."""
    return serializers.ListField(
        child=ChoiceField(choices=sorted(METRICS)),
        help_text="Further metrics shown on the board with their intervals, each with its direction; the "
        "primary `metric` alone ranks. They take the primary's kind of predictions and fit the dataset.",
        **kwargs,
    )


SECONDARY_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "label": {"type": "string"},
            "higher_is_better": {"type": "boolean"},
            "mean": {
                "type": "object",
                "properties": {
                    "estimate": {"type": "number", "nullable": True},
                    "low": {"type": "number", "nullable": True},
                    "high": {"type": "number", "nullable": True},
                },
                "required": ["estimate", "low", "high"],
            },
        },
        "required": ["name", "label", "higher_is_better", "mean"],
    },
}


def scope_for(context: dict, challenge: Challenge) -> BoardScope:
    """The viewer's board scope on ``challenge`` (``context["scope"]``, or computed once per challenge)."""
    if context.get("scope") is not None:
        return context["scope"]
    scopes = context.setdefault("scopes", {})
    if challenge.pk not in scopes:
        request = context.get("request")
        scopes[challenge.pk] = board_scope(challenge=challenge, user=getattr(request, "user", None))
    return scopes[challenge.pk]


class PhaseSerializer(StrictInput, serializers.ModelSerializer):
    class Meta:
        model = Phase
        fields = ["id", *PHASE_FIELDS]


class PhaseInForceSerializer(serializers.Serializer):
    """:func:`leaderboard.selectors.phase_in_force`: the rule the page and the upload service follow too."""

    open = serializers.BooleanField(help_text="Whether a phase takes submissions now.")
    reason = serializers.CharField(allow_null=True, help_text="Why not (the upload service's words), or null.")
    upcoming = serializers.BooleanField(help_text="True when `phase` is the next phase to open (between phases).")
    phase = serializers.CharField(allow_null=True, help_text="The phase in force (open, next, or last closed).")
    opens_at = serializers.DateTimeField(allow_null=True)
    closes_at = serializers.DateTimeField(allow_null=True)
    daily_quota = serializers.IntegerField(allow_null=True, help_text="The phase's; 0: unlimited.")
    total_quota = serializers.IntegerField(allow_null=True, help_text="The phase's; 0: unlimited.")
    daily_file_quota = serializers.IntegerField(allow_null=True)
    total_file_quota = serializers.IntegerField(allow_null=True)


class FirstPhaseFields(serializers.Serializer):
    """Dates and quotas a challenge's create and update take for its first (only) phase (issue 24)."""

    opens_at = serializers.DateTimeField(required=False, allow_null=True)
    closes_at = serializers.DateTimeField(required=False, allow_null=True)
    daily_quota = serializers.IntegerField(
        required=False, min_value=0, help_text="Submissions per team per day (0: unlimited)."
    )
    total_quota = serializers.IntegerField(
        required=False, min_value=0, help_text="Submissions per team in total (0: unlimited)."
    )


class DatasetSerializer(serializers.ModelSerializer):
    feature_columns = serializers.ListField(child=serializers.CharField(), read_only=True)
    classes = serializers.ListField(
        child=LabelField(),
        read_only=True,
        help_text="The label's classes (classification), as the dataset spells them.",
    )

    class Meta:
        model = Dataset
        fields = ["id_column", "label_column", "feature_columns", "task", "classes", "n_train", "n_test", "version"]
        optional_fields = ["version"]  # hosts only (to_representation); the schema marks it not required

    def to_representation(self, dataset):
        data = super().to_representation(dataset)
        request = self.context.get("request")
        if request is None or not user_is_host(user=request.user, challenge=dataset.challenge):
            # A hash over the hidden labels too: with few test rows, guesses could be checked against it.
            data.pop("version", None)
        return data


class ChallengeSerializer(serializers.ModelSerializer):
    hosts = serializers.SlugRelatedField(many=True, read_only=True, slug_field="username")
    randomize_sources = serializers.ListField(child=ChoiceField(choices=SOURCES), read_only=True)
    secondary_metrics = secondary_metrics_field(read_only=True)
    dataset = serializers.SerializerMethodField()
    downloads = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    phases = PhaseSerializer(many=True, read_only=True)
    private_board_revealed = serializers.SerializerMethodField()
    in_force = serializers.SerializerMethodField(
        help_text="Whether the challenge takes submissions now, under which phase's dates and quotas."
    )
    warnings = serializers.SerializerMethodField(
        help_text="What the settings cost the board (e.g. k < 10n: Boo_n shown without an interval)."
    )
    queue_waits = serializers.SerializerMethodField(
        help_text="The queues this challenge's submissions wait on that no worker takes now "
        "(`queue`, `waiting`: what waits there, `message`); empty when workers take them all."
    )

    class Meta:
        model = Challenge
        fields = [
            "slug",
            "url",
            *CHALLENGE_FIELDS,
            "hosts",
            "dataset",
            "downloads",
            "created",
            "in_force",
            "phases",
            "private_revealed_at",
            "private_board_revealed",
            "warnings",
            "queue_waits",
        ]
        read_only_fields = fields

    @extend_schema_field(PhaseInForceSerializer)
    def get_in_force(self, challenge: Challenge) -> dict:
        return PhaseInForceSerializer(phase_in_force(challenge=challenge).as_dict()).data

    @extend_schema_field(
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "queue": {"type": "string"},
                    "waiting": {"type": "string"},
                    "message": {"type": "string"},
                },
            },
        }
    )
    def get_queue_waits(self, challenge: Challenge) -> list[dict]:
        return challenge_queue_waits(challenge=challenge)

    def get_warnings(self, challenge: Challenge) -> list[str]:
        request = self.context.get("request")
        return challenge_warnings(challenge=challenge, user=getattr(request, "user", None))

    @extend_schema_field(DatasetSerializer(allow_null=True))
    def get_dataset(self, challenge: Challenge) -> dict | None:
        dataset = getattr(challenge, "dataset", None)
        return None if dataset is None else DatasetSerializer(dataset, context=self.context).data

    def get_private_board_revealed(self, challenge: Challenge) -> bool:
        return challenge.public_fraction < 1 and board_private_revealed(challenge=challenge)

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "string"}})
    def get_downloads(self, challenge: Challenge) -> dict:
        request = self.context.get("request")
        if challenge.results_only:
            return {}
        parts = ["train"]
        if challenge.dataset.test_inputs_file:
            parts += ["test_inputs", "sample_submission"]
        if request is not None and user_is_host(user=request.user, challenge=challenge):
            parts.append("hidden_labels")
        return {
            part: self._absolute(reverse("api-challenge-download", kwargs={"slug": challenge.slug, "part": part}))
            for part in parts
        }

    def get_url(self, challenge: Challenge) -> str:
        return self._absolute(challenge.get_absolute_url())

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class ChallengeCreateSerializer(StrictInput, FirstPhaseFields, serializers.ModelSerializer):
    """A new challenge: its settings plus the dataset upload (multipart)."""

    slug = serializers.SlugField(required=False, max_length=60)
    higher_is_better = serializers.BooleanField(required=False, allow_null=True, default=None)
    # Explicit defaults: in multipart forms an omitted boolean would otherwise read as False.
    allow_predictions = serializers.BooleanField(required=False, default=True)
    allow_recipes = serializers.BooleanField(required=False, default=False)
    stratify = serializers.BooleanField(required=False, default=True)
    randomize_sources = serializers.ListField(child=ChoiceField(choices=SOURCES), required=False)
    secondary_metrics = secondary_metrics_field(required=False)
    dataset = serializers.FileField(write_only=True, help_text="CSV or Parquet: an id column, features, a label.")
    test_dataset = serializers.FileField(
        write_only=True,
        required=False,
        help_text="Optional hidden test rows (same columns), kept from contestants; "
        "with `test_labels`, the test inputs only.",
    )
    test_labels = serializers.FileField(
        write_only=True, required=False, help_text="Hidden labels of `test_dataset` (id and label columns)."
    )
    id_column = serializers.CharField(write_only=True, default="id")
    label_column = serializers.CharField(write_only=True, default="label")
    test_column = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        help_text="A 0/1 column marking the hidden test rows in `dataset`.",
    )
    feature_columns = serializers.ListField(child=serializers.CharField(), required=False, write_only=True)

    class Meta:
        model = Challenge
        fields = [
            "slug",
            *CHALLENGE_FIELDS,
            *FIRST_PHASE_FIELDS,
            "dataset",
            "test_dataset",
            "test_labels",
            "id_column",
            "label_column",
            "test_column",
            "feature_columns",
        ]


class ChallengeUpdateSerializer(StrictInput, FirstPhaseFields, serializers.ModelSerializer):
    randomize_sources = serializers.ListField(child=ChoiceField(choices=SOURCES), required=False)
    secondary_metrics = secondary_metrics_field(required=False)

    class Meta:
        model = Challenge
        fields = [*CHALLENGE_FIELDS, *FIRST_PHASE_FIELDS]


class RunSerializer(serializers.ModelSerializer):
    submission = serializers.IntegerField(source="submission_id", read_only=True)
    seeds = serializers.DictField(
        child=serializers.IntegerField(),
        read_only=True,
        help_text="The seed of each source of randomness (`contestant_file`: the file's "
        "index; `imported`: the import's id).",
    )
    hyperparameters = JSONObjectField(read_only=True)
    isolation = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text='The confinement the run executed under (e.g. "seccomp").',
    )
    method_name = serializers.CharField(source="submission.method_name", read_only=True)
    team = serializers.CharField(source="submission.team.name", read_only=True)
    kind = serializers.CharField(source="submission.kind", read_only=True)
    sandboxed = serializers.SerializerMethodField(
        help_text="False when the run executed without isolation (an operator's VARBOARD_ALLOW_UNSANDBOXED); "
        "null for prediction files and runs that have not executed."
    )
    test_score = serializers.SerializerMethodField(
        help_text="The score on the board you read: the public part of the hidden rows (with the challenge's "
        "feedback: exact, rounded, or none under the Ladder), or the private part on the private board."
    )
    public_score = serializers.SerializerMethodField()
    private_score = serializers.SerializerMethodField(help_text="Hosts, and everyone after the reveal.")
    secondary_scores = serializers.SerializerMethodField(
        help_text="The secondary metrics' scores on the board you read, by name, published as `test_score` is."
    )

    class Meta:
        model = Run
        fields = [
            "submission",
            "method_name",
            "team",
            "kind",
            "index",
            "status",
            "seeds",
            "split_id",
            "test_score",
            "public_score",
            "private_score",
            "secondary_scores",
            "valid_score",
            "hyperparameters",
            "duration_s",
            "device",
            "sandboxed",
            "isolation",
        ]
        read_only_fields = fields

    def get_sandboxed(self, run: Run) -> bool | None:
        return None if not run.isolation else not run.unsandboxed

    def _scores(self, run: Run) -> dict:
        scope = self.context.get("scope") or scope_for(self.context, run.submission.challenge)
        return scope.run_scores(run)

    def get_test_score(self, run: Run) -> float | None:
        return self._scores(run)["test_score"]

    def get_public_score(self, run: Run) -> float | None:
        return self._scores(run)["public_score"]

    def get_private_score(self, run: Run) -> float | None:
        return self._scores(run)["private_score"]

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "number", "nullable": True}})
    def get_secondary_scores(self, run: Run) -> dict:
        scope = self.context.get("scope") or scope_for(self.context, run.submission.challenge)
        return scope.run_secondary(run)


class RunDetailSerializer(RunSerializer):
    """With the log and error: for the submitting team and the hosts."""

    hpo_trials = serializers.ListField(
        child=JSONObjectField(), read_only=True, help_text="The hyperparameter search's trials (recipes that search)."
    )
    fingerprint = JSONObjectField(read_only=True, help_text="What the run executed with (library versions, ...).")

    class Meta(RunSerializer.Meta):
        fields = [
            *RunSerializer.Meta.fields,
            "error_message",
            "log",
            "hpo_trials",
            "fingerprint",
            "attempts",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields
        # A submission's runs: RunSerializer's fields for other teams, these too for its team and the hosts.
        optional_fields = fields[len(RunSerializer.Meta.fields) :]


class SubmissionSerializer(serializers.ModelSerializer):
    challenge = serializers.SlugRelatedField(read_only=True, slug_field="slug")
    team = serializers.CharField(source="team.name", read_only=True)
    submitted_by = serializers.CharField(source="submitted_by.username", read_only=True)
    progress = serializers.SerializerMethodField()
    runs = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    phase = serializers.CharField(source="phase.name", read_only=True, allow_null=True, default=None)
    score = serializers.SerializerMethodField(help_text="The submission's score as your board shows it.")
    secondary = serializers.SerializerMethodField(
        help_text="The secondary metrics as your board shows them: name, label, direction, mean and interval "
        "(the interval when the board lists the entry)."
    )
    queue_wait = serializers.SerializerMethodField(
        help_text="While queued: why it does not start (no worker takes its queue now); else null."
    )

    class Meta:
        model = Submission
        fields = [
            "id",
            "url",
            "challenge",
            "team",
            "submitted_by",
            "kind",
            "method_name",
            "description",
            "status",
            "progress",
            "runs_expected",
            "error_message",
            "created",
            "started_at",
            "finished_at",
            "phase",
            "selected_for_final",
            "score",
            "secondary",
            "queue_wait",
            "runs",
        ]
        read_only_fields = fields
        # its team and the hosts only; a team's choice of final entries is its own until the private board is revealed
        optional_fields = ["error_message", "description", "submitted_by", "selected_for_final"]

    def get_queue_wait(self, submission: Submission) -> str | None:
        return submission_queue_wait(submission=submission)

    def get_score(self, submission: Submission) -> float | None:
        scope = scope_for(self.context, submission.challenge)
        return scope.submission_score(submission.pk, list(submission.runs.all()), submission.kind)

    @extend_schema_field(SECONDARY_SCHEMA)
    def get_secondary(self, submission: Submission) -> list[dict]:
        scope = scope_for(self.context, submission.challenge)
        return board_submission_secondary(scope=scope, submission=submission, runs=list(submission.runs.all()))

    @extend_schema_field(
        {
            "type": "object",
            "properties": {
                "finished": {"type": "integer"},
                "succeeded": {"type": "integer"},
                "failed": {"type": "integer"},
                "expected": {"type": "integer"},
                "fraction": {"type": "number"},
            },
        }
    )
    def get_progress(self, submission: Submission) -> dict:
        runs = list(submission.runs.all())
        succeeded = sum(r.status == "succeeded" for r in runs)
        failed = sum(r.status == "failed" for r in runs)
        expected = submission.runs_expected or len(runs) or 1
        return {
            "finished": succeeded + failed,
            "succeeded": succeeded,
            "failed": failed,
            "expected": expected,
            "fraction": (succeeded + failed) / expected,
        }

    @extend_schema_field(RunDetailSerializer(many=True))
    def get_runs(self, submission: Submission) -> list:
        request = self.context.get("request")
        detailed = request is not None and submission_can_see_details(user=request.user, submission=submission)
        serializer = RunDetailSerializer if detailed else RunSerializer
        context = {**self.context, "scope": scope_for(self.context, submission.challenge)}
        return serializer(submission.runs.all(), many=True, context=context).data

    def get_url(self, submission: Submission) -> str:
        request = self.context.get("request")
        path = submission.get_absolute_url()
        return request.build_absolute_uri(path) if request is not None else path

    def to_representation(self, submission):
        data = super().to_representation(submission)
        request = self.context.get("request")
        if request is None or not submission_can_see_details(user=request.user, submission=submission):
            revealed = private_board_revealed(challenge=submission.challenge)  # the private board shows the choices
            for private in self.Meta.optional_fields:
                if not (private == "selected_for_final" and revealed):
                    data.pop(private, None)
        return data


class SubmissionCreateSerializer(StrictInput, serializers.Serializer):
    kind = ChoiceField(choices=SubmissionKind.choices, default=SubmissionKind.PREDICTIONS)
    method_name = serializers.CharField(max_length=120)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    team = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="Team id; your personal team when omitted."
    )
    files = serializers.ListField(
        child=serializers.FileField(allow_empty_file=True),  # an empty file is refused by name, by the service
        required=False,
        default=list,
        help_text="Prediction CSV files, one per seed run (each file is a run).",
    )
    recipe = serializers.FileField(required=False, allow_empty_file=True, help_text="A recipe .py file (kind=recipe).")
    hyperparameters = HyperparametersField(
        required=False,
        default=dict,
        help_text='Fixed hyperparameters of the recipe (kind=recipe), e.g. {"C": 0.5}; at most 64 KB as JSON.',
    )

    def validate(self, attrs):
        if attrs["kind"] == SubmissionKind.PREDICTIONS and not attrs.get("files"):
            raise serializers.ValidationError({"files": "Upload at least one predictions file."})
        if attrs["kind"] == SubmissionKind.RECIPE and not attrs.get("recipe"):
            raise serializers.ValidationError({"recipe": "Upload the recipe file."})
        # one kind per submission: the other kind's parts were dropped without a word (found by a contestant)
        if attrs["kind"] == SubmissionKind.RECIPE and attrs.get("files"):
            raise serializers.ValidationError(
                {"files": "A recipe submission takes no prediction files: submit them as kind=predictions."}
            )
        if attrs["kind"] == SubmissionKind.PREDICTIONS and (attrs.get("recipe") or attrs.get("hyperparameters")):
            field = "recipe" if attrs.get("recipe") else "hyperparameters"
            raise serializers.ValidationError(
                {field: f"A predictions submission takes no {field}: submit a recipe as kind=recipe."}
            )
        return attrs


class AuditEntrySerializer(serializers.ModelSerializer):
    details = JSONObjectField(
        read_only=True, help_text="The action's particulars (e.g. each setting's old and new value)."
    )
    actor = serializers.CharField(source="actor.username", read_only=True, default=None, allow_null=True)

    class Meta:
        model = AuditEntry
        fields = ["id", "created", "actor", "action", "details"]
        read_only_fields = fields


class RegistrationSerializer(serializers.ModelSerializer):
    user = serializers.CharField(source="user.username", read_only=True)
    decided_by = serializers.CharField(source="decided_by.username", read_only=True, default=None, allow_null=True)

    class Meta:
        model = Registration
        fields = ["id", "user", "status", "rules_accepted_at", "created", "decided_by", "decided_at"]
        read_only_fields = fields


class ReportVersionSerializer(serializers.ModelSerializer):
    data = JSONObjectField(read_only=True, help_text="The report as it was stored.")

    class Meta:
        model = ReportVersion
        fields = ["id", "board", "computed_at", "archived_at", "reason", "data"]
        read_only_fields = fields


class RescoreSerializer(StrictInput, serializers.Serializer):
    phase = serializers.IntegerField(required=False, allow_null=True, default=None, help_text="Phase id (optional).")
    metric = serializers.CharField(required=False, allow_blank=True, default="")
    hidden_labels = serializers.FileField(required=False, help_text="Corrected labels: id and label columns.")


class SelectSerializer(StrictInput, serializers.Serializer):
    selected = serializers.BooleanField(default=True)


class RegisterSerializer(StrictInput, serializers.Serializer):
    accept_rules = serializers.BooleanField(default=False)


class DecideSerializer(StrictInput, serializers.Serializer):
    approve = serializers.BooleanField()


class LoginSerializer(StrictInput, serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)


class TokenSerializer(serializers.Serializer):
    token_key = serializers.CharField(help_text="The token's first characters: how you name it to revoke it.")
    created = serializers.DateTimeField()
    expiry = serializers.DateTimeField(allow_null=True)
