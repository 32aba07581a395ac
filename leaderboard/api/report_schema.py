"""The report endpoints' inputs (query overrides) and outputs (OpenAPI schema of the report).

A query override is validated by the same validators as the challenge field it overrides
(``Challenge._meta.get_field(...).validators``): ``?alpha=1e-300`` is refused exactly as a
challenge with that α would be.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from drf_spectacular.utils import OpenApiParameter, inline_serializer
from rest_framework import serializers

from ..choices import Board, Feedback, RankingStatistic, RunStatus, SubmissionKind, SubmissionStatus
from ..models import Challenge, EntryProvenance, TeamInvitation
from ..services.paging import PAGE_MAX
from ..services.reports import OVERRIDABLE
from .inputs import ChoiceField
from .paging import whole


def _model_validators(field_name: str) -> list:
    """The model field's validators, raising DRF's ValidationError with the model's message."""

    def wrap(validator):
        def check(value):
            try:
                validator(value)
            except DjangoValidationError as exc:
                raise serializers.ValidationError(exc.messages) from None

        return check

    return [wrap(v) for v in Challenge._meta.get_field(field_name).validators]


class ReportQuerySerializer(serializers.Serializer):
    """Optional overrides of the challenge's statistical settings (see ``services.reports.OVERRIDABLE``)."""

    n = serializers.IntegerField(
        required=False, validators=_model_validators(OVERRIDABLE["n"]), help_text="Boo_n pool size."
    )
    gamma = serializers.FloatField(
        required=False,
        validators=_model_validators(OVERRIDABLE["gamma"]),
        help_text="Threshold of a meaningful P(A>B), in (0.5, 1).",
    )
    alpha = serializers.FloatField(
        required=False,
        validators=_model_validators(OVERRIDABLE["alpha"]),
        help_text="Significance level, in [1e-06, 0.5].",
    )
    statistic = ChoiceField(required=False, choices=RankingStatistic.choices, help_text="Ranking statistic.")


class CompareQuerySerializer(ReportQuerySerializer):
    a = serializers.IntegerField(min_value=1, help_text="Submission id of entry A.")
    b = serializers.IntegerField(min_value=1, help_text="Submission id of entry B.")

    def validate(self, attrs):
        if attrs["a"] == attrs["b"]:
            raise serializers.ValidationError({"b": "a and b must be different submissions."})
        return attrs


def _interval(name: str, **extra):
    return inline_serializer(
        name,
        fields={
            "estimate": serializers.FloatField(allow_null=True),
            "low": serializers.FloatField(allow_null=True),
            "high": serializers.FloatField(allow_null=True),
            **extra,
        },
    )


class MetricInfoSerializer(serializers.Serializer):
    """A secondary metric of the board: shown with its interval, never ranked on."""

    name = serializers.CharField()
    label = serializers.CharField()
    higher_is_better = serializers.BooleanField(help_text="Direction: true when higher is better (↑).")


class SecondaryValueSerializer(MetricInfoSerializer):
    """One secondary metric of an entry: the mean over its runs and the interval the board uses for the primary's."""

    runs = serializers.IntegerField(allow_null=True, help_text="Runs with a score of this metric (null: Ladder).")
    mean = _interval(
        "ReportSecondaryMean",
        se=serializers.FloatField(allow_null=True),
        source=ChoiceField(choices=["runs", "test examples", "test examples and files", "ladder"], allow_null=True),
        method=serializers.CharField(allow_null=True, required=False, help_text="How the interval was made."),
        note=serializers.CharField(
            required=False, help_text="Why there is no interval (one file and no per-example outcomes)."
        ),
        warning=serializers.CharField(
            allow_null=True, required=False, help_text="Why the mean has no interval (fewer than 6 runs)."
        ),
    )


#: Boo_1 is the mean of the runs: where its interval is the mean's (evaluation.report.rows.boo_1_as_the_mean).
def _boo_1_source() -> ChoiceField:
    return ChoiceField(
        choices=["runs", "test examples", "test examples and files", "ladder"],
        required=False,
        help_text="On a Boo_1 board: where its interval, the mean's, comes from (the mean's `source`).",
    )


class EntrySerializer(serializers.Serializer):
    submission_id = serializers.IntegerField()
    method_name = serializers.CharField()
    team = serializers.CharField()
    kind = ChoiceField(choices=SubmissionKind.choices)
    created = serializers.CharField()
    in_progress = serializers.BooleanField()
    runs_succeeded = serializers.IntegerField()
    runs_expected = serializers.IntegerField()
    k_runs = serializers.IntegerField()
    rank = serializers.IntegerField(allow_null=True, help_text="Null when the entry is not compared.")
    rank_display = serializers.CharField(allow_null=True, help_text='"=2" marks a tie.')
    tied = serializers.BooleanField()
    ranking_value = serializers.FloatField(allow_null=True)
    mean = _interval(
        "ReportMean",
        se=serializers.FloatField(allow_null=True),
        source=ChoiceField(choices=["runs", "test examples", "test examples and files", "ladder"]),
        method=serializers.CharField(
            allow_null=True, required=False, help_text="How the interval was made (not under the Ladder)."
        ),
        warning=serializers.CharField(
            allow_null=True, required=False, help_text="Why the mean has no interval (fewer than 6 runs)."
        ),
    )
    boo_n = _interval(
        "ReportBooN",
        n=serializers.IntegerField(allow_null=True),
        estimator=serializers.CharField(required=False),
        method=serializers.CharField(allow_null=True, required=False),
        source=_boo_1_source(),
        warning=serializers.CharField(
            allow_null=True,
            required=False,
            help_text="Set when k < 10n runs (Boo_1: as the mean's, below 6 runs; never a prediction entry's).",
        ),
        picked_on=ChoiceField(
            choices=["validation", "test"],
            allow_null=True,
            required=False,
            help_text="Which scores picked the best run (a recipe's Boo_n, n >= 2): test where the entry has no "
            "validation scores, an optimistic selection beside entries picked on validation. Null for Boo_1.",
        ),
    )
    boo_n_unbiased = _interval(
        "ReportBooNUnbiased",
        n=serializers.IntegerField(),
        estimator=serializers.CharField(),
        method=serializers.CharField(allow_null=True),
        source=_boo_1_source(),
    )
    median = serializers.FloatField(allow_null=True)
    std = serializers.FloatField(allow_null=True)
    groups = serializers.CharField(help_text="Significance-group letters; entries sharing one are tied.")
    group_letters = serializers.ListField(
        child=serializers.CharField(), required=False, help_text='The letters of `groups` ("a1b1" is ["a1", "b1"]).'
    )
    rank_interval = inline_serializer(
        "ReportRankInterval",
        allow_null=True,
        fields={
            "rank": serializers.IntegerField(
                help_text="The entry's rank by the ranking statistic alone (competition ranking) on the runs the bootstrap "
                "resamples (the section's ``paired_runs``, or the entry's own runs where it lacks some of them); it "
                "differs from the row's shown ``rank`` where a verdict moved the entry (an inversion) or where those "
                "runs are not all of the entry's."
            ),
            "low": serializers.IntegerField(
                help_text="Best rank of the interval (1 = top); it contains the shown rank."
            ),
            "high": serializers.IntegerField(help_text="Worst rank of the interval."),
            "widened": serializers.BooleanField(
                help_text="Not the bootstrap's own interval: widened to the rank shown, or moved to the ranks the verdicts allow."
            ),
        },
    )
    runs_needed_for_decision = serializers.IntegerField(allow_null=True)
    too_few_runs = serializers.BooleanField()
    compared = serializers.BooleanField()
    excluded_reason = serializers.CharField(allow_null=True)
    boo_n_curve = serializers.ListField(child=serializers.FloatField(allow_null=True))
    runs_left_out = serializers.ListField(
        child=inline_serializer(
            "ReportRunLeftOut", fields={"run_index": serializers.IntegerField(), "reason": serializers.CharField()}
        ),
        required=False,
        help_text="Runs left out of every statistic of the row (a run without a finite "
        "validation score, when the entry's other runs have one), with the reason.",
    )
    run_scores = serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        required=False,
        help_text="Every run's test score (compare endpoint; on the leaderboard see /runs/).",
    )
    provenance = inline_serializer(
        "ReportProvenance",
        allow_null=True,
        fields={
            "source": ChoiceField(choices=EntryProvenance.Source.choices),
            "link": serializers.CharField(allow_blank=True),
        },
        help_text="Where an imported entry's results come from; null for entries scored here.",
    )
    version = serializers.IntegerField(
        help_text="Which of its team's submissions of this method the entry is (1 for the first)."
    )
    versions = serializers.IntegerField(help_text="How many submissions of this method its team has made.")
    public_rank = serializers.IntegerField(
        allow_null=True,
        required=False,
        help_text="Private board: this submission's rank on the public board of the same n, gamma, alpha and "
        "statistic (null when that board shows another version of its method, or none).",
    )
    rank_change = serializers.IntegerField(
        allow_null=True, required=False, help_text="Private board: public rank minus private rank (up is positive)."
    )
    secondary = SecondaryValueSerializer(
        many=True,
        required=False,
        help_text="The challenge's secondary metrics, in its order: mean and interval on this board's rows "
        "(published as the primary's: rounded, or withheld under the Ladder).",
    )


class RunsNeededSerializer(serializers.Serializer):
    entries = serializers.IntegerField(help_text="Entries on the board.")
    comparisons = serializers.IntegerField(help_text="Pairs compared among them.")
    any_verdict = serializers.IntegerField(help_text="Runs per entry before any verdict is possible.")
    for_power = serializers.IntegerField(help_text="Runs per entry for the test's power (1 - beta).")


class CoverageNoteSerializer(serializers.Serializer):
    interval = serializers.CharField(help_text="Which interval (`recipe.mean`, `predictions.accuracy`, ...).")
    label = serializers.CharField()
    k = serializers.IntegerField(help_text="The run count the coverage was measured at.")
    runs = serializers.IntegerField(
        required=False,
        help_text="The run count of the board's entries the note describes (the coverage is measured at `k`).",
    )
    coverage = serializers.FloatField(allow_null=True, help_text="Measured coverage of a 95% interval.")
    width_ratio = serializers.FloatField(allow_null=True)
    shown = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True)
    ok = serializers.BooleanField()


class SotaSerializer(serializers.Serializer):
    kind = serializers.CharField(required=False)
    raw = serializers.FloatField(allow_null=True)
    estimate = serializers.FloatField(allow_null=True)
    bound = serializers.FloatField(allow_null=True, help_text="Conservative bound (lower, or upper for a loss).")
    bound_side = ChoiceField(choices=["lower", "upper"], allow_null=True)
    m = serializers.IntegerField()
    method = ChoiceField(choices=["binomial", "normal"], allow_null=True)
    alpha = serializers.FloatField()
    n = serializers.IntegerField(allow_null=True)
    se = serializers.FloatField(allow_null=True)
    submission_id = serializers.IntegerField(allow_null=True, help_text="The entry with the highest mean.")
    beaten_by = serializers.ListField(
        child=serializers.IntegerField(),
        allow_null=True,
        required=False,
        help_text="Submission ids of the entries the board's verdicts on P(A>B), decided or inferred, show beating "
        "submission_id (the relation of the letters and the leader group), in display order; null when none does "
        "(then it is in the leader group). Under rounded feedback, from the published verdicts; null under the "
        "Ladder, which publishes none.",
    )
    note = serializers.CharField(allow_null=True)
    model = ChoiceField(choices=["identical", "nonidentical", "dependent"], allow_null=True, required=False)
    shrinkage = serializers.FloatField(allow_null=True, required=False)
    rho = serializers.FloatField(
        allow_null=True,
        required=False,
        help_text="Dependence of the entries' per-example outcomes (eq. 10); null: none known.",
    )
    duplicates = serializers.IntegerField(
        allow_null=True,
        required=False,
        help_text="Entries whose outcomes repeat another's, counted once in m; null under rounded or Ladder "
        "feedback, which publish only the best shown score (and m counting every evaluation).",
    )


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
    reverse = inline_serializer(
        "ReportReverse", fields={"significant": serializers.BooleanField(), "meaningful": serializers.BooleanField()}
    )
    verdict = ChoiceField(
        choices=["a_better", "b_better", "not_significant", "not_meaningful", "not_significant_after_correction"]
    )
    better = serializers.IntegerField(allow_null=True)
    level = serializers.FloatField(
        allow_null=True, required=False, help_text="Confidence of the interval: the pair's multiplicity-adjusted level."
    )
    method = serializers.CharField(required=False, help_text="The test the interval is dual to.")
    inversion = serializers.BooleanField(
        required=False,
        help_text="The display order goes against this pair's statistic or verdict (see the section's inversions).",
    )


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
    inversions = serializers.ListField(
        child=inline_serializer(
            "ReportInversion",
            fields={
                "above": serializers.IntegerField(help_text="Submission id shown above."),
                "below": serializers.IntegerField(help_text="Submission id shown below."),
                "kind": ChoiceField(choices=["statistic", "verdict"]),
                "reason": serializers.CharField(),
            },
        ),
        required=False,
    )
    groups_note = serializers.CharField(
        required=False,
        help_text=(
            "Present only where a complete letter display would be too large (a complete display may need k²/4 "
            "letters): each letter is then a run of the order, entries sharing a letter are not significantly "
            "different, but some pairs that are not share no letter (evaluation.stats.groups.compact_letters)."
        ),
    )
    runs_needed = RunsNeededSerializer(
        allow_null=True, required=False, help_text="Runs a decision needs at this section's size (recipes)."
    )
    outcomes_withheld = serializers.CharField(
        allow_null=True,
        required=False,
        help_text="Under rounded feedback, why a prediction section compares no entry and shows no interval.",
    )


class ReportSettingsSerializer(serializers.Serializer):
    """The statistical settings the report was computed with (the challenge's, or the query's overrides)."""

    statistic = ChoiceField(choices=RankingStatistic.choices)
    boo_n = serializers.IntegerField()
    gamma = serializers.FloatField()
    alpha = serializers.FloatField()
    confidence = serializers.FloatField(help_text="1 - alpha.")
    correction = serializers.CharField(help_text="The multiplicity correction of the p-values.")
    n_resamples = serializers.IntegerField()
    seed = serializers.IntegerField()
    k_runs = serializers.IntegerField()
    beta = serializers.FloatField()
    noether_n = serializers.IntegerField(allow_null=True, help_text="Runs per entry a decision needs (Noether).")
    higher_is_better = serializers.BooleanField()
    runs_needed = RunsNeededSerializer(many=True)
    boo_n_warning = serializers.CharField(allow_null=True)
    boo_n_picked_note = serializers.CharField(
        allow_null=True,
        required=False,
        help_text="On a Boo_n board: how many entries have their best run picked on test scores (no validation).",
    )
    coverage = CoverageNoteSerializer(many=True)
    computed_on = serializers.CharField(help_text='Where the resampling ran ("numpy on the CPU", ...).')
    m_total = serializers.DictField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Per section kind: every test-set evaluation ever made (the SOTA's m).",
    )
    m_note = serializers.CharField(required=False, help_text="What m counts.")
    secondary_metrics = MetricInfoSerializer(
        many=True, required=False, help_text="The secondary metrics shown on each row (never ranked on)."
    )


class FeedbackSerializer(serializers.Serializer):
    mode = ChoiceField(choices=Feedback.choices, help_text="How public scores are published.")
    digits = serializers.IntegerField(help_text="Rounded feedback: the digits kept.")
    margin = serializers.FloatField(
        allow_null=True,
        help_text="Ladder feedback: the margin a new score must beat the best by; on a Ladder board's public report the "
        "η used, the host's raised to the largest move one public row makes to the metric (null: a metric one row "
        "moves without bound, each person's first score alone released).",
    )


class OverridesSerializer(serializers.Serializer):
    """The query's overrides that differ from the challenge's settings (empty when none)."""

    n = serializers.IntegerField(required=False)
    gamma = serializers.FloatField(required=False)
    alpha = serializers.FloatField(required=False)
    statistic = ChoiceField(choices=RankingStatistic.choices, required=False)


class LeaderboardSerializer(serializers.Serializer):
    challenge = serializers.CharField()
    board = ChoiceField(choices=Board.choices)
    feedback = FeedbackSerializer(allow_null=True)
    metric = serializers.CharField(
        help_text="The primary metric, which ranks: the built-in metric's name, or the host's scoring program's primary."
    )
    metric_label = serializers.CharField(help_text="What the board calls the primary metric.")
    higher_is_better = serializers.BooleanField()
    secondary_metrics = MetricInfoSerializer(many=True, help_text="The secondary metrics (primary: `metric`).")
    computed_at = serializers.DateTimeField(allow_null=True)
    recompute_pending = serializers.BooleanField()
    recompute_failure = inline_serializer(
        "RecomputeFailure",
        fields={"message": serializers.CharField(), "at": serializers.DateTimeField()},
        allow_null=True,
        help_text="Why the latest recomputation failed, and when; the report shown is the last one computed "
        "(``computed_at``). Null when the report is the latest.",
    )
    overrides = OverridesSerializer()
    settings = ReportSettingsSerializer()
    sections = SectionSerializer(many=True)
    paging = inline_serializer(
        "Paging",
        fields={
            "total": serializers.IntegerField(),
            "matched": serializers.IntegerField(),
            "offset": serializers.IntegerField(),
            "limit": serializers.IntegerField(),
            "count": serializers.IntegerField(),
            "q": serializers.CharField(allow_null=True),
            "around": serializers.IntegerField(allow_null=True),
            "has_previous": serializers.BooleanField(),
            "has_next": serializers.BooleanField(),
            "previous_offset": serializers.IntegerField(),
            "next_offset": serializers.IntegerField(),
        },
    )
    entries = EntrySerializer(many=True)


def challenge_field_schema(field_name: str, kind: str) -> dict:
    """The schema of a query parameter overriding a challenge field: the bounds of the field's own validators."""
    schema: dict = {"type": kind}
    for validator in Challenge._meta.get_field(field_name).validators:
        if isinstance(validator, MinValueValidator):
            schema["minimum"] = validator.limit_value
        elif isinstance(validator, MaxValueValidator):
            schema["maximum"] = validator.limit_value
    return schema


#: γ of Bouthillier et al.'s rule, strictly between ½ and 1 (``evaluation.stats._validation.check_gamma``).
GAMMA_SCHEMA = {"type": "number", "minimum": 0.5, "exclusiveMinimum": True, "maximum": 1, "exclusiveMaximum": True}

OVERRIDE_PARAMETERS = [
    OpenApiParameter(
        "n",
        challenge_field_schema(OVERRIDABLE["n"], "integer"),
        description="Boo_n pool size, 1 to 1000 (default: the challenge's).",
    ),
    OpenApiParameter("gamma", GAMMA_SCHEMA, description="γ of the decision rule, strictly between 0.5 and 1."),
    OpenApiParameter(
        "alpha",
        challenge_field_schema(OVERRIDABLE["alpha"], "number"),
        description="Significance level, from 1e-06 to 0.5.",
    ),
    OpenApiParameter("statistic", str, enum=list(RankingStatistic.values), description="Ranking statistic."),
]
FORMAT_PARAMETER = OpenApiParameter(
    "format", str, enum=["json", "csv"], description="`csv`: the same rows as CSV (text/csv), every one of them."
)
BOARD_PARAMETER = OpenApiParameter(
    "board",
    str,
    enum=[Board.PUBLIC, Board.PRIVATE],
    description="Which board's scores: public (default), or private (hosts until the reveal; 403 otherwise).",
)
PAGING_PARAMETERS = [
    OpenApiParameter("limit", whole(1, PAGE_MAX), description="Entries per page (default 50, at most 500)."),
    OpenApiParameter("offset", whole(), description="First entry of the page, in display order (default 0)."),
    OpenApiParameter("q", str, description="Only entries whose team or method name contains this."),
    OpenApiParameter("around", whole(), description="The page centred on this submission (`offset` ignored)."),
]
# The filters (api/filters.py) the challenge's runs and submissions actions apply themselves.
RUN_FILTERS = [
    OpenApiParameter("submission", whole(), description="Only this submission's runs."),
    OpenApiParameter("status", str, enum=list(RunStatus.values)),
    OpenApiParameter("index", whole(), description="Only the runs with this index (seed)."),
]
INVITATION_FILTERS = [OpenApiParameter("status", str, enum=list(TeamInvitation.Status.values))]
SUBMISSION_FILTERS = [
    OpenApiParameter("status", str, enum=list(SubmissionStatus.values)),
    OpenApiParameter("kind", str, enum=list(SubmissionKind.values)),
    OpenApiParameter("team", str, description="Only this team's (its name)."),
]
