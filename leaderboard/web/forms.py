"""HTML forms. They check shapes and types only; the services decide (and name the problem).

A ``ServiceError`` raised by a service becomes an error on the form field it names
(``add_service_error``), or a non-field error when the field is not on the form.
"""

from __future__ import annotations

import json
import re

from django import forms
from django.conf import settings
from django.contrib.auth.forms import UserCreationForm
from django.core.exceptions import FieldDoesNotExist
from django.core.validators import MaxValueValidator, MinValueValidator
from django.forms.utils import ErrorDict

from evaluation.seeds import SOURCES

from ..choices import SubmissionKind
from ..models import METRIC_CHOICES, Challenge, Phase, Team, default_sources, validate_gamma
from ..services.challenges import CHALLENGE_FIELDS, FROZEN_AFTER_FIRST_SUBMISSION, DatasetUpload
from ..services.errors import ServiceError
from ..services.phases import FIRST_PHASE_FIELDS, PHASE_FIELDS
from ..services.submissions import hyperparameters_size_check
from ..uploads import read_dataset_upload

DIRECTION_CHOICES = [("", "Default for the metric"), ("higher", "Higher is better"), ("lower", "Lower is better")]
DATETIME_WIDGET = forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")
#: A drop-down whose longest choice is longer than this is shown as radio buttons: a closed select cuts its text
#: at the box's width ("Out-of-bootstrap (Bouthillier e", found by a new user), a radio button's label wraps.
SELECT_LABEL_MAX = 26

# Service field names that the forms show under another name.
FIELD_ALIASES = {"higher_is_better": "direction"}


#: Words for the raw setting names that services' messages mention, on pages that have no form to label them.
FIELD_WORDS = {
    "public_fraction": "public share of the hidden rows",
    "final_entries": "number of final entries",
    "k_runs": "runs per entry",
}
_RAW_NAME_ALONE = re.compile(r"\s*\(([a-z]+(?:_[a-z]+)+)\)")


def in_words(message: str, form: forms.Form | None = None) -> str:
    """A service's message as a page shows it: a parenthesised raw field name (there for API clients, which also
    get it as ``field``) dropped, and any other raw field name replaced by the form's label for it, or by
    :data:`FIELD_WORDS`."""
    message = _RAW_NAME_ALONE.sub("", message)
    words = dict(FIELD_WORDS)
    if form is not None:
        words.update(
            {name: str(field.label).lower() for name, field in form.fields.items() if "_" in name and field.label}
        )
    for name, label in words.items():
        message = re.sub(rf"\b{name}\b", lambda _, label=label: label, message)
    return message


def add_service_error(form: forms.Form, exc: ServiceError) -> None:
    """Show a service's message, in words, on the field it names, or above the form."""
    field = FIELD_ALIASES.get(exc.field, exc.field)
    form.add_error(field if field in form.fields else None, in_words(exc.message, form))


def model_bounds(form: forms.ModelForm) -> None:
    """Each number field's bounds as its model field's validators set them (``k_runs`` 1..1000, not the 0..
    of a ``PositiveIntegerField``'s form field): on the input (``min``/``max``, so the browser says so first)
    and in the one message a value outside them gets. The form's own bound said "greater than or equal to 0"
    to k = -1, then the model's "... 1" to k = 0 (a new user's review)."""
    for name, field in form.fields.items():
        if not isinstance(field, (forms.IntegerField, forms.FloatField)):
            continue
        try:
            model_field = form._meta.model._meta.get_field(name)
        except FieldDoesNotExist:
            continue
        # The model field's own validators (``_validators``), not the database's integer range it adds.
        both = [*field.validators, *model_field._validators]
        lows = [v.limit_value for v in both if type(v) is MinValueValidator]
        highs = [v.limit_value for v in both if type(v) is MaxValueValidator]
        field.validators = [v for v in field.validators if type(v) not in (MinValueValidator, MaxValueValidator)]
        if lows:
            field.min_value = field.widget.attrs["min"] = max(lows)
            field.validators.append(MinValueValidator(field.min_value))
        if highs:
            field.max_value = field.widget.attrs["max"] = min(highs)
            field.validators.append(MaxValueValidator(field.max_value))


def show_upload_refusal(form: forms.Form, refusal: ServiceError) -> None:
    """An upload stopped while it streamed (``upload_handlers``): its reason alone, on the bound form.

    The fields after the refused file never arrived, so the form is not validated: only the
    refusal is shown, with what did arrive filled in.
    """
    form._errors, form.cleaned_data = ErrorDict(), {}
    add_service_error(form, refusal)


class KeepsUploads:
    """A form whose files (``kept_fields``) are kept between a refused post and the next (``upload_stash``): a field
    with a kept file says so under its input, asks for no new file, and uses the kept one when none is chosen."""

    kept_fields: tuple[str, ...] = ()
    # of the form it is mixed into
    fields: dict[str, forms.Field]
    errors: ErrorDict
    _bound_fields_cache: dict

    def keep(self, kept: dict) -> None:
        """Use ``kept`` (field -> ``upload_stash.Kept``) where no file is chosen, and say so; a field absent: none kept."""
        self.kept = {name: file for name, file in kept.items() if name in self.fields}
        if not hasattr(self, "_without_kept"):
            self._without_kept = {
                name: (self.fields[name].help_text, self.fields[name].required)
                for name in self.kept_fields
                if name in self.fields
            }
        for name, (help_text, required) in self._without_kept.items():
            file = self.kept.get(name)
            self.fields[name].help_text = help_text if file is None else file.describe()
            self.fields[name].required = required and file is None
            self._bound_fields_cache.pop(name, None)  # a bound field copies the help text when made

    def keeps_upload(self, name: str) -> bool:
        """Whether a file newly chosen in ``name`` is worth keeping after a refusal."""
        return True

    def with_kept(self, cleaned: dict) -> dict:
        """``cleaned`` with each kept file standing in for one not chosen again (for ``clean``)."""
        for name, file in self.kept.items():
            if not cleaned.get(name) and name not in self.errors:
                cleaned[name] = file.as_upload()
        return cleaned


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """``<input type=file multiple>``; cleans to a list of uploaded files (possibly empty)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        items = data if isinstance(data, (list, tuple)) else [data]
        cleaned = [super(MultipleFileField, self).clean(item, initial) for item in items if item]
        if self.required and not cleaned:
            raise forms.ValidationError(self.error_messages["required"], code="required")
        return cleaned


class SignupForm(UserCreationForm):
    """User name, password and (required when the site verifies addresses) e-mail."""

    email = forms.EmailField(required=False, help_text="Where the confirmation link goes, when the site sends one.")

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["email"].required = settings.VARBOARD_EMAIL_VERIFICATION


# --------------------------------------------------------------------------- challenges


class ChallengeSettingsForm(forms.ModelForm):
    """Every host setting of a challenge (the edit page; the create form adds the dataset)."""

    direction = forms.ChoiceField(
        choices=DIRECTION_CHOICES,
        required=False,
        help_text="Each metric has its own direction: leave it at the default (one that contradicts the metric is "
        "refused; a scoring program's primary metric sets its own).",
    )
    secondary_metrics = forms.MultipleChoiceField(
        choices=METRIC_CHOICES,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Secondary metrics",
        help_text="Shown on the board with their intervals and directions; the metric above alone ranks. "
        "Each takes the same predictions as the metric and must fit the dataset.",
    )
    randomize_sources = forms.MultipleChoiceField(
        choices=[(source, source.replace("_", " ")) for source in SOURCES],
        required=False,
        initial=default_sources,
        widget=forms.CheckboxSelectMultiple,
        label="Sources to randomize",
        help_text="Sources of variation that differ between runs; the others are held fixed for every run.",
    )

    # The first (only) phase's dates and quotas: not the challenge's own (issue 24). Declared so the
    # admin uses these widgets too (it would swap in its split date/time widgets).
    daily_quota = forms.IntegerField(
        min_value=0, initial=5, label="Daily quota", help_text="Submissions per team per day (0: unlimited)."
    )
    total_quota = forms.IntegerField(
        min_value=0, initial=100, label="Total quota", help_text="Submissions per team in total (0: unlimited)."
    )
    opens_at = forms.DateTimeField(
        required=False, widget=DATETIME_WIDGET, label="Opens at (UTC)", help_text="Empty: open now."
    )
    closes_at = forms.DateTimeField(
        required=False, widget=DATETIME_WIDGET, label="Closes at (UTC)", help_text="Empty: never closes."
    )

    class Meta:
        model = Challenge
        fields = [name for name in CHALLENGE_FIELDS if name != "higher_is_better"]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 5}),
        }
        help_texts = {
            "k_runs": "Each recipe submission is retrained k times, each run up to the time limit per run below: "
            "at most k × that limit of worker time per submission (30 runs of 600 s: 5 hours). A prediction entry "
            "uploads 1 to k files, one per seed. Boo_n's interval needs k >= 10n.",
        }
        labels = {
            "allow_predictions": "Accept prediction files",
            "allow_recipes": "Accept training recipes",
            "k_runs": "Runs per entry (k)",
            "boo_n": "Boo n",
            "gamma": "γ (P(A>B) threshold)",
            "alpha": "α",
            "bootstrap_resamples": "Bootstrap resamples (B)",
            "hpo_mode": "HPO mode",
            "hpo_method": "HPO method",
            "hpo_budget": "HPO budget (trials per run)",
            "run_time_limit_s": "Time limit per run (s)",
            "run_memory_limit_mb": "Memory limit per run (MB)",
        }

    # Grouping for the templates: (legend, field names).
    settings_groups = [
        ("Challenge", ["title", "description", "metric", "direction", "secondary_metrics", "visibility"]),
        ("Submissions", ["allow_predictions", "allow_recipes", "daily_quota", "total_quota", "opens_at", "closes_at"]),
        ("Statistics", ["k_runs", "boo_n", "gamma", "alpha", "bootstrap_resamples", "ranking_statistic", "correction"]),
        ("Seeds and splits", ["master_seed", "randomize_sources", "split_scheme", "stratify"]),
        ("Recipe runs", ["hpo_mode", "hpo_method", "hpo_budget", "device", "run_time_limit_s", "run_memory_limit_mb"]),
        (
            "Competition",
            [
                "public_fraction",
                "final_entries",
                "board_version",
                "feedback",
                "feedback_digits",
                "ladder_margin",
                "rules",
                "registration_required",
            ],
        ),
    ]
    #: Optional in the form: left empty, they keep their current (or default) value.
    OPTIONAL = ("public_fraction", "final_entries", "board_version", "feedback", "feedback_digits", "ladder_margin")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in self.OPTIONAL:
            if name in self.fields:
                self.fields[name].required = False
        self.frozen = False
        if self.instance.pk is not None:
            self.initial["direction"] = "higher" if self.instance.higher_is_better else "lower"
            self._phase_initial()
            # challenge_update refuses these once submissions exist; show them as fixed.
            self.frozen = self.instance.submissions.exists()
            if self.frozen:
                for name in (*FROZEN_AFTER_FIRST_SUBMISSION, "direction"):
                    if name in self.fields:
                        self.fields[name].disabled = True
                        self.fields[name].help_text = "Fixed: submissions exist."
            self._program_fields()
        self._wordy_choices_as_radios()
        model_bounds(self)

    def _wordy_choices_as_radios(self) -> None:
        """Drop-downs with a choice too long to read in a closed select become radio buttons (their labels wrap)."""
        for field in self.fields.values():
            labels = [label for _, label in getattr(field, "choices", ())]
            if type(field.widget) is not forms.Select or any(isinstance(label, (list, tuple)) for label in labels):
                continue  # another widget, or choices in groups
            if labels and max(len(str(label)) for label in labels) > SELECT_LABEL_MAX:
                field.widget = forms.RadioSelect(choices=field.widget.choices, attrs=field.widget.attrs)

    def _program_fields(self) -> None:
        """With a scoring program, the metric only fixes the prediction files' format and the direction is the
        program's primary metric's (``challenges._check_program_fields`` refuses another): said on the form."""
        if not self.instance.scoring_program:
            return
        if "metric" in self.fields and not self.fields["metric"].disabled:
            self.fields[
                "metric"
            ].help_text = "Only the prediction files' format: the scoring program's primary metric ranks the board."
        if "direction" in self.fields:
            self.fields["direction"].disabled = True
            self.fields["direction"].help_text = "The scoring program's primary metric's."

    def _phase_initial(self) -> None:
        """The only phase's dates and quotas; with several phases they are set per phase, not here."""
        phases = list(self.instance.phases.all())
        for name in FIRST_PHASE_FIELDS:
            if len(phases) == 1:
                self.initial[name] = getattr(phases[0], name)
            elif name in self.fields:
                self.fields[name].disabled, self.fields[name].required = True, False
                self.fields[name].help_text = f"Set on each of the {len(phases)} phases."

    def clean(self):
        cleaned = super().clean()
        for name in self.OPTIONAL:
            if name in self.fields and cleaned.get(name) in (None, ""):
                cleaned[name] = (
                    getattr(self.instance, name)
                    if self.instance.pk is not None
                    else Challenge._meta.get_field(name).get_default()
                )
        # The database constraints would say only "Constraint ... is violated": name the problem.
        if "allow_predictions" in cleaned and not cleaned.get("allow_predictions") and not cleaned.get("allow_recipes"):
            self.add_error("allow_predictions", "Allow predictions, recipes, or both.")
        opens, closes = cleaned.get("opens_at"), cleaned.get("closes_at")
        if opens and closes and closes <= opens:
            self.add_error("closes_at", "The closing date must come after the opening date.")
        return cleaned

    def grouped_fields(self):
        return [
            (legend, [self[name] for name in names if name in self.fields]) for legend, names in self.settings_groups
        ]

    def challenge_fields(self) -> dict:
        """The cleaned settings as the services take them (``higher_is_better`` from the direction)."""
        fields = {
            name: self.cleaned_data[name]
            for name in (*CHALLENGE_FIELDS, *FIRST_PHASE_FIELDS)
            if name in self.cleaned_data
        }
        direction = self.cleaned_data.get("direction")
        fields["higher_is_better"] = {"higher": True, "lower": False}.get(direction)
        return fields

    def changed_challenge_fields(self) -> dict:
        fields = self.challenge_fields()
        changed = {name for name in self.changed_data}
        if "direction" in changed:
            changed.add("higher_is_better")
        return {
            name: value
            for name, value in fields.items()
            if name in changed and not (name == "higher_is_better" and value is None)
        }


class ChallengeCreateForm(KeepsUploads, ChallengeSettingsForm):
    """A new challenge: its settings plus the dataset (one table, or a train and a test table); its files are kept
    after a refusal (``KeepsUploads``)."""

    kept_fields = ("dataset", "test_dataset", "test_labels")

    slug = forms.SlugField(
        max_length=60, required=False, help_text="The address /c/<slug>/; made from the title when empty."
    )
    dataset = forms.FileField(help_text="CSV or Parquet: an id column, feature columns and a label column.")
    id_column = forms.CharField(initial="id", max_length=100)
    label_column = forms.CharField(initial="label", max_length=100)
    test_column = forms.CharField(
        required=False,
        max_length=100,
        label="Test-row column",
        help_text="A 0/1 column marking the hidden test rows of the dataset (or upload a separate test file).",
    )
    test_dataset = forms.FileField(
        required=False,
        label="Separate test file",
        help_text="Hidden test rows with the same columns (instead of a test-row column).",
    )
    test_labels = forms.FileField(
        required=False,
        label="Hidden labels of the test file",
        help_text="Only when the test file holds the inputs alone: id and label columns.",
    )
    feature_columns = forms.CharField(
        required=False, max_length=10_000, help_text="Comma-separated; every other column when empty."
    )

    dataset_fields = [
        "dataset",
        "id_column",
        "label_column",
        "test_column",
        "test_dataset",
        "test_labels",
        "feature_columns",
    ]

    def __init__(self, *args, kept: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.keep(kept or {})

    def clean(self):
        return self.with_kept(super().clean())

    def grouped_fields(self):
        groups = super().grouped_fields()
        groups[0][1].insert(2, self["slug"])
        return [groups[0], ("Dataset", [self[name] for name in self.dataset_fields]), *groups[1:]]

    def service_kwargs(self) -> dict:
        """Keyword arguments of ``challenge_create`` (besides ``created_by``)."""
        return {"dataset": self.dataset_upload(), "slug": self.cleaned_data["slug"] or None, **self.challenge_fields()}

    def dataset_upload(self) -> DatasetUpload:
        """Read the uploaded tables (size-checked); raises ServiceError naming the limit."""
        main = read_dataset_upload(self.cleaned_data["dataset"])
        test_file = self.cleaned_data.get("test_dataset")
        test = read_dataset_upload(test_file, field="test_dataset") if test_file else None
        labels_file = self.cleaned_data.get("test_labels")
        labels = read_dataset_upload(labels_file, field="test_labels") if labels_file else None
        features = [c.strip() for c in self.cleaned_data.get("feature_columns", "").split(",") if c.strip()]
        return DatasetUpload(
            data=main.data,
            filename=main.name,
            id_column=self.cleaned_data["id_column"],
            label_column=self.cleaned_data["label_column"],
            test_column=self.cleaned_data.get("test_column") or None,
            test_data=test.data if test else None,
            test_filename=test.name if test else None,
            test_labels_data=labels.data if labels else None,
            test_labels_filename=labels.name if labels else None,
            feature_columns=tuple(features) or None,
        )


class PlannerForm(forms.Form):
    """The host's planner: the board they expect and the effect that matters (``evaluation.stats.plan_runs``)."""

    entries = forms.IntegerField(
        min_value=2,
        max_value=1000,
        initial=10,
        label="Entries expected",
        help_text="How many entries the board will compare.",
    )
    gamma = forms.FloatField(
        validators=[validate_gamma],
        initial=0.75,
        label="Effect that matters (γ)",
        help_text="P(A>B) worth detecting: 0.75 means A beats B in 3 runs of 4.",
    )
    alpha = forms.FloatField(
        min_value=0.0001,
        max_value=0.5,
        initial=0.05,
        label="α (family-wise)",
        help_text="Chance of declaring a winner when there is none, over every pair.",
    )
    power = forms.FloatField(
        min_value=0.5,
        max_value=0.999,
        initial=0.95,
        label="Power",
        help_text="Chance of detecting a pair whose P(A>B) is γ.",
    )
    run_minutes = forms.FloatField(
        min_value=0,
        max_value=100_000,
        initial=1.0,
        label="Minutes per run",
        help_text="Worker time one run takes (your own training time, or the time limit).",
    )
    boo_n = forms.IntegerField(
        min_value=1,
        max_value=1000,
        initial=3,
        label="Boo n",
        help_text="n of Boo_n: its interval needs at least 10n runs per entry (Boo_1, the mean of the runs: 6).",
    )


# --------------------------------------------------------------------------- submissions


RECIPE_HELP = "A Python file defining fit_predict(...); the server runs it k times."


class SubmissionForm(KeepsUploads, forms.Form):
    method_name = forms.CharField(
        max_length=120, label="Method name", help_text="The name of this entry on the leaderboard."
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    kind = forms.ChoiceField(choices=SubmissionKind.choices, widget=forms.RadioSelect, label="Kind")
    files = MultipleFileField(
        required=False,
        allow_empty_file=True,  # an empty file is refused by the service, which names it
        label="Prediction files",
        help_text="One file, or one file per seed you ran (each file is a run).",
    )
    recipe = forms.FileField(required=False, allow_empty_file=True, label="Recipe (.py)", help_text=RECIPE_HELP)
    # Empty, with a placeholder: a pre-filled "{}" made typing give "{}{...}" (issue 25).
    hyperparameters = forms.CharField(
        required=False,
        label="Hyperparameters (JSON object)",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": '{"C": 0.5}'}),
        help_text="Empty: the recipe's own defaults.",
    )

    kept_fields = ("recipe",)

    def __init__(self, *args, challenge: Challenge, teams, default_team: Team | None = None, kept=None, **kwargs):
        """``kept``: the recipe kept from the last refused post (``KeepsUploads``), used when none is chosen."""
        super().__init__(*args, **kwargs)
        self.challenge = challenge
        self.fields["team"].queryset = teams
        if default_team is not None:
            self.fields["team"].initial = default_team.pk
        kinds = [
            (value, label)
            for value, label in SubmissionKind.choices
            if (value == SubmissionKind.PREDICTIONS and challenge.allow_predictions)
            or (value == SubmissionKind.RECIPE and challenge.allow_recipes)
        ]
        self.fields["kind"].choices = kinds
        self.fields["kind"].initial = kinds[0][0] if kinds else None
        if len(kinds) == 1:
            self.fields["kind"].widget = forms.HiddenInput()
        if not challenge.allow_predictions:
            del self.fields["files"]
        if not challenge.allow_recipes:
            del self.fields["recipe"]
            del self.fields["hyperparameters"]
        elif challenge.allow_predictions:
            self.fields["files"].widget.attrs["data-kind"] = SubmissionKind.PREDICTIONS
            self.fields["recipe"].widget.attrs["data-kind"] = SubmissionKind.RECIPE
        self.keep(kept or {})

    def keeps_upload(self, name: str) -> bool:
        return self.data.get("kind") == SubmissionKind.RECIPE  # a recipe chosen, then predictions sent: not kept

    @property
    def shows_kind_choice(self) -> bool:
        return not isinstance(self.fields["kind"].widget, forms.HiddenInput)

    @property
    def takes_files(self) -> bool:
        """Whether the form asks for prediction files (the template's ``form.files`` would be the bound uploads)."""
        return "files" in self.fields

    @property
    def takes_recipe(self) -> bool:
        return "recipe" in self.fields

    def clean_hyperparameters(self):
        text = (self.cleaned_data.get("hyperparameters") or "").strip()
        if not text:
            return {}
        try:
            hyperparameters_size_check(len(text.encode()))  # before the parse: parsed JSON takes many times its text
        except ServiceError as exc:
            raise forms.ValidationError(exc.message) from None
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).") from exc
        except RecursionError:
            raise forms.ValidationError("Not usable JSON: its arrays or objects are nested too deeply.") from None
        if not isinstance(value, dict):
            raise forms.ValidationError('The hyperparameters must be a JSON object, like {"C": 1.0}.')
        return value

    def clean(self):
        cleaned = self.with_kept(super().clean())
        if cleaned.get("kind") == SubmissionKind.RECIPE and not cleaned.get("recipe") and "recipe" not in self.errors:
            self.add_error("recipe", "Choose the recipe's .py file.")
        return cleaned


# --------------------------------------------------------------------------- teams


class TeamCreateForm(forms.Form):
    name = forms.CharField(max_length=100, label="Team name")


class TeamInviteForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    username = forms.CharField(max_length=150, help_text="They join when they accept the invitation.")

    def __init__(self, *args, teams, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams


# --------------------------------------------------------------------------- account


class NotificationsForm(forms.Form):
    notify_scored = forms.BooleanField(required=False, label="A submission of my team is scored")
    notify_failed = forms.BooleanField(required=False, label="A submission of my team fails")
    notify_revealed = forms.BooleanField(required=False, label="A challenge I took part in reveals its private board")
    notify_invited = forms.BooleanField(required=False, label="Someone invites me to a team")


class WebhookForm(forms.Form):
    url = forms.URLField(
        max_length=500,
        label="Receiver URL",
        assume_scheme="https",
        help_text="Events are POSTed here as JSON, signed with the webhook's secret.",
    )


class PhaseForm(forms.ModelForm):
    """One phase's settings (web page and admin inline); ``phase_create``/``phase_update`` decide."""

    opens_at = forms.DateTimeField(
        required=False, widget=DATETIME_WIDGET, label="Opens at (UTC)", help_text="Empty: open from the start."
    )
    closes_at = forms.DateTimeField(
        required=False, widget=DATETIME_WIDGET, label="Closes at (UTC)", help_text="Empty: never closes."
    )
    order = forms.IntegerField(required=False, min_value=0, help_text="Place in the sequence; empty: after the last.")

    class Meta:
        model = Phase
        fields = list(PHASE_FIELDS)

    def service_fields(self) -> dict:
        """The cleaned values to give the service: on an existing phase only the changed ones."""
        names = self.changed_data if self.instance.pk else PHASE_FIELDS
        values = {
            name: self.cleaned_data.get(name) for name in names if name in PHASE_FIELDS and name in self.cleaned_data
        }
        if not self.instance.pk and values.get("order") is None:
            values.pop("order", None)
        return values
