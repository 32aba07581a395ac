"""The list endpoints' query filters; a filter that does not parse is a 400 naming it (:func:`filtered`)."""

import django_filters
from rest_framework.exceptions import ValidationError

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


def filtered(filterset_class, request, queryset):
    """``queryset`` filtered by the query parameters, as ``DjangoFilterBackend`` does for a viewset's list:
    an invalid value (``submission=abc``, ``status=bogus``) is a 400 naming the parameter, never ignored."""
    filterset = filterset_class(request.query_params, queryset=queryset, request=request)
    if not filterset.is_valid():
        raise ValidationError(filterset.errors)
    return filterset.qs
