"""The list endpoints' query filters; a filter that does not parse is a 400 naming it (:func:`filtered`)."""

import django_filters
from django import forms
from rest_framework.exceptions import ValidationError
from rest_framework.filters import OrderingFilter

from ..models import Challenge, Run, Submission, TeamInvitation


class StrictOrderingFilter(OrderingFilter):
    """``?ordering=`` as DRF's, but a field the view does not order by is a 400 naming it: DRF drops unknown
    fields and answers in the default order, so a typo looked like a sort that worked (a reviewer's finding)."""

    def remove_invalid_fields(self, queryset, fields, view, request):
        if getattr(view, "action", "list") not in (None, "list"):  # an object's page or action: it orders nothing
            return super().remove_invalid_fields(queryset, fields, view, request)
        valid = [item[0] for item in self.get_valid_fields(queryset, view, {"request": request})]
        unknown = [term for term in fields if term and term.removeprefix("-") not in valid]
        if unknown:
            allowed = ", ".join(f"{name}, -{name}" for name in valid)
            raise ValidationError({self.ordering_param: [f"cannot order by {unknown[0]!r}; one of: {allowed}."]})
        return super().remove_invalid_fields(queryset, fields, view, request)


class NamingFilterSet(django_filters.FilterSet):
    """A filter set whose choice parameters, refused, name the values they take, as the API's other refusals do
    (Django's "Select a valid choice. bogus is not one of the available choices." named none: a new user's finding).
    """

    def get_form_class(self):
        base = super().get_form_class()

        class NamingForm(base):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                for field in self.fields.values():
                    choices = [str(v) for v, _ in getattr(field, "choices", ()) if v != ""]
                    if isinstance(field, forms.ChoiceField) and choices:
                        message = field.error_messages["invalid_choice"]
                        field.error_messages = {
                            **field.error_messages,
                            "invalid_choice": f"{message} One of: {', '.join(choices).replace('%', '%%')}.",
                        }

        return NamingForm


class ChallengeFilter(NamingFilterSet):
    title = django_filters.CharFilter(lookup_expr="icontains")
    host = django_filters.CharFilter(field_name="hosts__username")

    class Meta:
        model = Challenge
        fields = ["metric", "allow_predictions", "allow_recipes", "visibility"]


class SubmissionFilter(NamingFilterSet):
    challenge = django_filters.CharFilter(field_name="challenge__slug")
    team = django_filters.CharFilter(field_name="team__name")

    class Meta:
        model = Submission
        fields = ["status", "kind"]


class InvitationFilter(NamingFilterSet):
    class Meta:
        model = TeamInvitation
        fields = ["status"]


class RunFilter(NamingFilterSet):
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
