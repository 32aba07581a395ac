"""Django admin: operators inspect everything; hosts create and configure their challenges.

Writes go through the same services as the web pages and the API:

- *Add challenge* is the web page's form (settings + dataset upload) rendered in the admin;
  the view calls ``challenge_create`` once, and a ``ServiceError`` becomes a form error, so
  a rejected dataset stores nothing.
- *Change challenge* validates with ``challenge_update`` inside a savepoint that is always
  rolled back (the service's messages become form errors, nothing is written), then
  ``save_model`` calls it for real. Hosts are edited here directly.
- Submissions, runs and reports are read-only: they are written by the services and
  workers only (a run is written once).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from .choices import Moderation
from .models import AuditEntry, Challenge, Dataset, Membership, Phase, Report, ReportLease, Run, Submission, Team
from .selectors import user_is_host
from .services.challenges import challenge_create, challenge_update
from .services.errors import ServiceError
from .services.moderation import REASON_MAX, submissions_moderate
from .services.phases import phase_create, phase_update
from .web.forms import ChallengeCreateForm, ChallengeSettingsForm, PhaseForm, add_service_error


class _DryRun(Exception):
    """Raised to roll back a validation-only service call."""


class ReadOnlyAdminMixin:
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


# --------------------------------------------------------------------------- challenges


class DatasetInline(ReadOnlyAdminMixin, admin.StackedInline):
    model = Dataset
    can_delete = False
    extra = 0
    fields = [
        "original_name",
        "id_column",
        "label_column",
        "task",
        "classes",
        "n_features",
        "n_train",
        "n_test",
        "files",
        "version",
        "created",
    ]
    readonly_fields = fields

    @admin.display(description="features")
    def n_features(self, dataset: Dataset) -> int:
        return len(dataset.feature_columns)

    @admin.display(description="files (download)")
    def files(self, dataset: Dataset):
        parts = [
            ("train", dataset.train_file),
            ("test_inputs", dataset.test_inputs_file),
            ("hidden_labels", dataset.hidden_labels_file),
        ]
        links = [
            format_html(
                '<a href="{}">{}</a>',
                reverse("challenge-download", kwargs={"slug": dataset.challenge.slug, "part": part}),
                part,
            )
            for part, field in parts
            if field
        ]
        return format_html(" · ".join(["{}"] * len(links)), *links) if links else "—"


class PhaseAdminForm(PhaseForm):
    """A phase row of the challenge's page, validated by a dry run of ``phase_create``/``phase_update``."""

    user = None  # set per request by ``PhaseInline.get_formset``

    def clean(self):
        cleaned = super().clean()
        challenge = getattr(self.instance, "challenge", None) if self.instance.challenge_id else self.parent
        if self.errors or challenge is None or not self.has_changed():
            return cleaned
        try:
            with transaction.atomic():
                save_phase(self, challenge, self.user)
                raise _DryRun
        except _DryRun:
            pass
        except ServiceError as exc:
            add_service_error(self, exc)
        return cleaned


def save_phase(form: PhaseForm, challenge: Challenge, user) -> Phase:
    """Create or change the form's phase through the services (the stored row is what they compare with)."""
    if form.instance.pk:
        return phase_update(phase=Phase.objects.get(pk=form.instance.pk), user=user, **form.service_fields())
    return phase_create(challenge=challenge, user=user, **form.service_fields())


class PhaseInline(admin.StackedInline):
    """The challenge's phases: added and changed through ``phase_create``/``phase_update`` (audit-logged);
    a phase is not deleted here (its submissions keep it)."""

    model = Phase
    form = PhaseAdminForm
    extra = 0
    can_delete = False
    fields = PhaseForm.Meta.fields

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)
        formset.form = type("BoundPhaseAdminForm", (self.form,), {"user": request.user, "parent": obj})
        return formset


class ChallengeAdminForm(ChallengeSettingsForm):
    """The web edit form plus hosts; validated by a dry run of ``challenge_update``."""

    user = None  # set per request by ``ChallengeAdmin.get_form``

    class Meta(ChallengeSettingsForm.Meta):
        fields = [*ChallengeSettingsForm.Meta.fields, "hosts"]

    def clean(self):
        cleaned = super().clean()
        if self.errors or self.instance.pk is None:
            return cleaned
        stored = Challenge.objects.get(pk=self.instance.pk)
        try:
            with transaction.atomic():
                challenge_update(challenge=stored, user=self.user, **self.changed_challenge_fields())
                raise _DryRun
        except _DryRun:
            pass
        except ServiceError as exc:
            add_service_error(self, exc)
        return cleaned


@admin.register(Challenge)
class ChallengeAdmin(admin.ModelAdmin):
    form = ChallengeAdminForm
    list_display = [
        "title",
        "slug",
        "metric",
        "visibility",
        "allow_predictions",
        "allow_recipes",
        "k_runs",
        "n_submissions",
        "created",
    ]
    list_filter = ["visibility", "metric", "allow_predictions", "allow_recipes"]
    search_fields = ["title", "slug", "description"]
    filter_horizontal = ["hosts"]
    readonly_fields = ["slug", "created_by", "created"]
    inlines = [DatasetInline, PhaseInline]
    add_form_template = "admin/leaderboard/challenge/add_form.html"

    def get_fieldsets(self, request, obj=None):
        groups = [
            (legend, {"fields": [name for name in names]}) for legend, names in ChallengeSettingsForm.settings_groups
        ]
        groups[0][1]["fields"] = ["slug", *groups[0][1]["fields"], "hosts", "created_by", "created"]
        return groups

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        form.user = request.user
        return form

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        return qs if request.user.is_superuser else qs.filter(hosts=request.user)

    def has_change_permission(self, request, obj=None):
        allowed = super().has_change_permission(request, obj)
        return allowed and (obj is None or user_is_host(user=request.user, challenge=obj))

    def has_delete_permission(self, request, obj=None):
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or user_is_host(user=request.user, challenge=obj))

    @admin.display(description="submissions")
    def n_submissions(self, challenge: Challenge) -> int:
        return challenge.submissions.count()

    def save_model(self, request, obj, form, change):
        # ``form.clean`` ran the same call as a dry run; ``obj`` already holds the new values.
        stored = Challenge.objects.get(pk=obj.pk)
        challenge_update(challenge=stored, user=request.user, **form.changed_challenge_fields())

    def save_formset(self, request, form, formset, change):
        if formset.model is not Phase:
            return super().save_formset(request, form, formset, change)
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        for phase_form in formset.forms:  # each validated by its dry run; saved in order, through the services
            if phase_form.has_changed():
                new = not phase_form.instance.pk
                phase = save_phase(phase_form, form.instance, request.user)
                if new:
                    formset.new_objects.append(phase)
                else:
                    formset.changed_objects.append((phase, phase_form.changed_data))
        return None

    def add_view(self, request, form_url="", extra_context=None):
        """Settings and dataset on one page; ``challenge_create`` stores both or nothing."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ChallengeCreateForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            try:
                challenge = challenge_create(created_by=request.user, **form.service_kwargs())
            except ServiceError as exc:
                add_service_error(form, exc)
            else:
                self.log_addition(request, challenge, [{"added": {}}])
                self.message_user(
                    request, f"The challenge “{challenge}” was created with its dataset.", messages.SUCCESS
                )
                return redirect("admin:leaderboard_challenge_change", challenge.pk)
        context = {
            **self.admin_site.each_context(request),
            "title": "Add challenge",
            "subtitle": None,
            "opts": self.opts,
            "form": form,
            "media": self.media + form.media,
            "has_view_permission": self.has_view_permission(request),
            **(extra_context or {}),
        }
        return TemplateResponse(request, self.add_form_template, context)


# --------------------------------------------------------------------------- submissions and runs


class RunInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Run
    can_delete = False
    extra = 0
    fields = [
        "index",
        "status",
        "split_id",
        "test_score",
        "valid_score",
        "duration_s",
        "device",
        "attempts",
        "error_message",
    ]
    readonly_fields = fields
    show_change_link = True


class HostedChallengeFilter(admin.RelatedFieldListFilter):
    """Lists only the challenges the staff user hosts (every challenge for superusers)."""

    def field_choices(self, field, request, model_admin):
        qs = Challenge.objects.order_by("title")
        if not request.user.is_superuser:
            qs = qs.filter(hosts=request.user)
        return [(challenge.pk, str(challenge)) for challenge in qs]


class ModerationReasonForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        max_length=REASON_MAX,
        required=False,
        help_text="The teams read it on their submission pages.",
    )


def _moderate_selected(modeladmin, request, queryset, state: str | None, verb: str):
    """Ask for the reason (a page of its own), then moderate (``state``) or restore (None) every selected
    submission through ``services.moderation``; a refusal changes none and is shown as a message."""
    form = ModerationReasonForm(request.POST if "apply" in request.POST else None)
    form.fields["reason"].required = state is not None  # a restore's reason is optional
    if form.is_valid():
        try:
            changed = submissions_moderate(
                submissions=queryset.select_related("challenge", "team"),
                user=request.user,
                state=state,
                reason=form.cleaned_data["reason"],
            )
        except ServiceError as exc:
            modeladmin.message_user(request, exc.message, messages.ERROR)
        else:
            modeladmin.message_user(
                request, f"{changed} submission(s) {verb}; the boards are being updated.", messages.SUCCESS
            )
        return None
    return TemplateResponse(
        request,
        "admin/leaderboard/submission/moderate.html",
        {
            **modeladmin.admin_site.each_context(request),
            "title": f"{verb.capitalize()}: the selected submissions",
            "opts": modeladmin.opts,
            "form": form,
            "queryset": queryset,
            "action": request.POST.get("action", ""),
            "verb": verb,
        },
    )


@admin.action(description="Disqualify the selected submissions (with a reason)")
def disqualify_selected(modeladmin, request, queryset):
    return _moderate_selected(modeladmin, request, queryset, Moderation.DISQUALIFIED, "disqualified")


@admin.action(description="Hide the selected submissions (with a reason)")
def hide_selected(modeladmin, request, queryset):
    return _moderate_selected(modeladmin, request, queryset, Moderation.HIDDEN, "hidden")


@admin.action(description="Restore the selected submissions (undo their disqualification or hiding)")
def restore_selected(modeladmin, request, queryset):
    return _moderate_selected(modeladmin, request, queryset, None, "restored")


@admin.register(Submission)
class SubmissionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "method_name",
        "challenge",
        "team",
        "kind",
        "status",
        "moderation",
        "runs_expected",
        "counts_toward_quota",
        "created",
    ]
    list_filter = ["status", "kind", "moderation", ("challenge", HostedChallengeFilter)]
    actions = [disqualify_selected, hide_selected, restore_selected]
    search_fields = ["method_name", "team__name", "submitted_by__username", "error_message"]
    list_select_related = ["challenge", "team"]
    date_hierarchy = "created"
    exclude = ["hyperparameters", "recipe_file"]
    readonly_fields = [
        "challenge",
        "team",
        "submitted_by",
        "kind",
        "method_name",
        "description",
        "status",
        "runs_expected",
        "error_message",
        "counts_toward_quota",
        "recipe",
        "hyperparameters_json",
        "moderation",
        "moderation_reason",
        "moderated_by",
        "moderated_at",
        "created",
        "started_at",
        "finished_at",
        "page",
    ]
    inlines = [RunInline]

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        return qs if request.user.is_superuser else qs.filter(challenge__hosts=request.user)

    @admin.display(description="recipe file")
    def recipe(self, submission: Submission) -> str:
        return submission.recipe_file.name or "—"

    @admin.display(description="hyperparameters")
    def hyperparameters_json(self, submission: Submission) -> str:
        return submission.hyperparameters or "—"

    @admin.display(description="web page")
    def page(self, submission: Submission):
        return format_html('<a href="{}">{}</a>', submission.get_absolute_url(), submission.get_absolute_url())


@admin.register(Run)
class RunAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "__str__",
        "submission",
        "index",
        "status",
        "queue",
        "test_score",
        "valid_score",
        "duration_s",
        "device",
        "attempts",
    ]
    list_filter = ["status", "queue", "device", ("submission__challenge", HostedChallengeFilter)]
    search_fields = ["submission__method_name", "submission__team__name", "split_id", "device", "error_message"]
    list_select_related = ["submission", "submission__team"]
    exclude = ["outcomes"]
    readonly_fields = [
        "submission",
        "index",
        "queue",
        "seeds",
        "split_id",
        "status",
        "test_score",
        "valid_score",
        "n_outcomes",
        "hyperparameters",
        "hpo_trials",
        "duration_s",
        "device",
        "fingerprint",
        "log",
        "error_message",
        "attempts",
        "started_at",
        "finished_at",
    ]

    def has_delete_permission(self, request, obj=None):
        return False  # a run is written once; delete its submission instead

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        return qs if request.user.is_superuser else qs.filter(submission__challenge__hosts=request.user)

    @admin.display(description="per-example outcomes")
    def n_outcomes(self, run: Run) -> str:
        values = run.outcomes_array
        return "—" if values is None else f"{len(values)} values, mean {values.mean():.4f}"


# --------------------------------------------------------------------------- teams and reports


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    raw_id_fields = ["user"]
    readonly_fields = ["joined"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    """Superusers only: a member of a team sees its logs, so membership is not for staff to edit."""

    def has_module_permission(self, request):
        return request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_add_permission(self, request):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser

    list_display = ["name", "is_personal", "n_members", "created"]
    list_filter = ["is_personal"]
    search_fields = ["name", "members__username"]
    inlines = [MembershipInline]

    @admin.display(description="members")
    def n_members(self, team: Team) -> int:
        return team.membership_set.count()


@admin.register(Report)
class ReportAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["challenge", "computed_at", "duration_s", "recompute_pending", "requested_at", "failed_at"]
    readonly_fields = [
        "challenge",
        "inputs_version",
        "data",
        "computed_at",
        "duration_s",
        "recompute_pending",
        "requested_at",
        "recompute_failure",
        "failed_at",
        "lease_expires_at",
        "recompute_give_ups",
        "recompute_retry_at",
    ]

    @admin.display(description="recompute lease expires at")
    def lease_expires_at(self, report: Report):
        """The running recomputation's lease (``ReportLease``, a row of its own), if one is held."""
        return ReportLease.objects.filter(challenge_id=report.challenge_id).values_list("expires_at", flat=True).first()

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        return qs if request.user.is_superuser else qs.filter(challenge__hosts=request.user)


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Host actions, written by the services (read-only: an audit log is not edited)."""

    list_display = ["created", "challenge", "actor", "action"]
    list_filter = ["action"]
    readonly_fields = ["challenge", "actor", "action", "details", "created"]

    def get_queryset(self, request):
        qs = super().get_queryset(request).select_related("challenge", "actor")
        return qs if request.user.is_superuser else qs.filter(challenge__hosts=request.user)

    def has_delete_permission(self, request, obj=None):
        return False
