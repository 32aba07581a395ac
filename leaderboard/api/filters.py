import django_filters

from ..models import Challenge, Run, Submission


class ChallengeFilter(django_filters.FilterSet):
    title = django_filters.CharFilter(lookup_expr="icontains")
    host = django_filters.CharFilter(field_name="hosts__username")

    class Meta:
        model = Challenge
        fields = ["metric", "allow_predictions", "allow_recipes", "visibility"]


class SubmissionFilter(django_filters.FilterSet):
    challenge = django_filters.CharFilter(field_name="challenge__slug")
    team = django_filters.CharFilter(field_name="team__name")

    class Meta:
        model = Submission
        fields = ["status", "kind"]


class RunFilter(django_filters.FilterSet):
    submission = django_filters.NumberFilter(field_name="submission_id")

    class Meta:
        model = Run
        fields = ["status", "index"]
