"""OpenAPI shapes of the endpoints beyond one leaderboard: variance studies, imports, suites.

The views build these bodies from services (``beyond_views.study_data``, ``import_data``,
``services.suites.suite_board``); the serializers here only declare them, field by field.
"""

from __future__ import annotations

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from ..models import VarianceStudy
from .inputs import ChoiceField


def matrix() -> serializers.ListField:
    """A k x k matrix of entries (rows and columns in the board's order); null on the diagonal."""
    return serializers.ListField(child=serializers.ListField(child=serializers.FloatField(allow_null=True)))


def _interval(name: str, extra: dict | None = None, **kwargs) -> serializers.Serializer:
    return inline_serializer(
        name,
        fields={
            "estimate": serializers.FloatField(allow_null=True),
            "low": serializers.FloatField(allow_null=True),
            "high": serializers.FloatField(allow_null=True),
            **(extra or {}),
        },
        **kwargs,
    )


class StudySourceSerializer(serializers.Serializer):
    source = serializers.CharField(help_text="A source of randomness varied alone, or `joint`.")
    runs = serializers.IntegerField()
    sd = serializers.FloatField(allow_null=True, help_text="Standard deviation of the score across its runs.")
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    share = serializers.FloatField(allow_null=True, help_text="Its share of the joint variance.")
    share_low = serializers.FloatField(allow_null=True)
    share_high = serializers.FloatField(allow_null=True)


class StudyResultSerializer(serializers.Serializer):
    """The standard deviation by source; only `available` and `note` until the joint block has 2 runs."""

    available = serializers.BooleanField()
    note = serializers.CharField(required=False, help_text="Why no result is available yet.")
    confidence = serializers.FloatField(required=False)
    sources = StudySourceSerializer(many=True, required=False)
    total = inline_serializer(
        "StudyTotal",
        required=False,
        fields={
            "runs": serializers.IntegerField(),
            "sd": serializers.FloatField(allow_null=True),
            "low": serializers.FloatField(allow_null=True),
            "high": serializers.FloatField(allow_null=True),
        },
    )
    fixed_hpo = inline_serializer(
        "StudyFixedHpo",
        required=False,
        allow_null=True,
        fields={
            "ratio": serializers.FloatField(),
            "low": serializers.FloatField(allow_null=True),
            "high": serializers.FloatField(allow_null=True),
            "underestimate": serializers.FloatField(),
        },
        help_text="Fixed-HPO runs' sd over the joint sd: how much fixing the hyperparameters understates.",
    )
    left_out = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Blocks with fewer than 2 succeeded runs."
    )


class StudyRunsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()


class VarianceStudySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    challenge = serializers.CharField()
    submission = serializers.IntegerField()
    method_name = serializers.CharField()
    k_runs = serializers.IntegerField()
    sources = serializers.ListField(child=serializers.CharField())
    searches_hyperparameters = serializers.BooleanField()
    status = ChoiceField(choices=VarianceStudy.Status.choices)
    runs = StudyRunsSerializer()
    created = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    result = StudyResultSerializer(allow_null=True, help_text="Null until the runs have ended, or when withheld.")
    scores = serializers.CharField(help_text="Which scores the result reads (all hidden rows, or the public part).")
    result_withheld = serializers.CharField(allow_null=True, help_text="Why the result is withheld (Ladder).")


class ResultsImportOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    challenge = serializers.CharField()
    format = serializers.CharField()
    files = serializers.ListField(child=serializers.CharField(), help_text="The uploaded files' names.")
    metric = serializers.CharField()
    binary = serializers.BooleanField()
    models = serializers.ListField(child=serializers.CharField(), help_text="The entries this import added.")
    instances = serializers.IntegerField()
    created = serializers.DateTimeField()


class SuiteSummarySerializer(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    tasks = serializers.ListField(child=serializers.CharField(), help_text="Slugs of the suite's challenges.")


class SuiteTaskSerializer(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    metric = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    scores = serializers.CharField(help_text="Which scores were read on this task (its public board's).")


class SuiteEntrySerializer(serializers.Serializer):
    team = serializers.CharField()
    method_name = serializers.CharField()
    submissions = serializers.DictField(child=serializers.IntegerField(), help_text="Task slug: submission id.")
    runs = serializers.DictField(child=serializers.IntegerField(), help_text="Task slug: runs read.")
    iqm = _interval("SuiteIqm")
    mean = _interval("SuiteMean")


class SuiteLeftOutSerializer(serializers.Serializer):
    team = serializers.CharField()
    method_name = serializers.CharField()
    missing = serializers.ListField(child=serializers.CharField(), help_text="Slugs of the tasks it has no score on.")


class SuiteBoardSerializer(serializers.Serializer):
    suite = serializers.CharField()
    title = serializers.CharField()
    normalization = serializers.CharField()
    rope = serializers.FloatField()
    tasks = SuiteTaskSerializer(many=True)
    entries = SuiteEntrySerializer(many=True)
    left_out = SuiteLeftOutSerializer(
        many=True, help_text="Entries (team, method name) not scored on every task: left out of the suite's board."
    )
    profile = inline_serializer(
        "SuiteProfile",
        allow_null=True,
        fields={
            "taus": serializers.ListField(child=serializers.FloatField()),
            "estimate": matrix(),
            "low": matrix(),
            "high": matrix(),
        },
        help_text="Performance profiles: per entry (rows), the fraction of runs above each tau (columns).",
    )
    probability_of_improvement = inline_serializer(
        "SuiteImprovement", allow_null=True, fields={"p": matrix(), "low": matrix(), "high": matrix()}
    )
    critical_difference = inline_serializer(
        "SuiteCriticalDifference",
        allow_null=True,
        fields={
            "average_rank": serializers.ListField(child=serializers.FloatField()),
            "cd": serializers.FloatField(),
            "statistic": serializers.FloatField(),
            "pvalue": serializers.FloatField(),
            "pairwise_pvalue": matrix(),
            "cliques": serializers.ListField(child=serializers.ListField(child=serializers.IntegerField())),
            "alpha": serializers.FloatField(),
        },
    )
    bayesian = serializers.ListField(
        child=inline_serializer(
            "SuiteBayesian",
            fields={
                "a": serializers.IntegerField(),
                "b": serializers.IntegerField(),
                "p_a_better": serializers.FloatField(),
                "p_rope": serializers.FloatField(),
                "p_b_better": serializers.FloatField(),
            },
        )
    )
    note = serializers.CharField(allow_null=True)
