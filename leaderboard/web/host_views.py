"""The host's pages around a new challenge: the data preview before publishing, and the planner for k.

A challenge made with the web form starts private (a draft, seen by its hosts only); its preview shows
what contestants will get (first rows, column types, class balance, the test rows found) and a planner
that says how many runs k the decision needs (Noether 1987) and their worker hours; then the host
publishes it.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse
from django.shortcuts import get_object_or_404, redirect, render

from evaluation.stats import plan_runs

from ..choices import Visibility
from ..models import Challenge
from ..selectors import challenge_list_visible, user_is_host
from ..services.bundles import bundle_export_file, bundle_import
from ..services.challenges import challenge_update, challenge_warnings
from ..services.dataset_files import dataset_preview
from ..services.errors import ServiceError
from ..services.paging import whole_number
from ..services.phases import SHARED_WITH_PHASE, phase_create, phase_update
from ..services.programs import program_remove, program_resume, program_upload
from ..upload_handlers import upload_refusal
from ..uploads import read_upload, upload_file
from .forms import PhaseForm, PlannerForm, add_service_error, in_words, show_upload_refusal


def planner_context(data, *, initial: dict | None = None) -> dict:
    """The planner's form (bound to ``data`` when it holds any of its fields) and its plan."""
    bound = any(name in data for name in PlannerForm.base_fields)
    defaults = {name: (initial or {}).get(name, field.initial) for name, field in PlannerForm.base_fields.items()}
    form = PlannerForm({**defaults, **data.dict()} if bound else None, initial=initial or {})
    values = (form.cleaned_data if form.is_valid() else None) if bound else defaults
    if values is None:
        return {"planner": form, "plan": None}
    plan = plan_runs(
        values["entries"],
        gamma=values["gamma"],
        alpha=values["alpha"],
        beta=1 - values["power"],
        run_minutes=values["run_minutes"],
        boo_n=values["boo_n"],
    )
    return {"planner": form, "plan": plan, "plan_power_pct": f"{100 * values['power']:.3g}"}


def challenge_planner(request):
    """The planner alone (linked from the host form): runs per entry and worker hours for a board."""
    return render(request, "challenges/planner.html", planner_context(request.GET))


@login_required
def challenge_preview(request, slug: str):
    """The host's check before publishing: the dataset as stored, the planner, and the publish button."""
    challenge = get_object_or_404(challenge_list_visible(user=request.user), slug=slug)
    if not user_is_host(user=request.user, challenge=challenge):
        raise PermissionDenied("Only the challenge's hosts can see its data preview.")
    if request.method == "POST":
        return _preview_action(request, challenge)
    dataset = getattr(challenge, "dataset", None)
    minutes = max(1.0, round(challenge.run_time_limit_s / 60 / 4, 1)) if challenge.allow_recipes else 1.0
    context = {
        "challenge": challenge,
        "dataset": dataset,
        "preview": dataset_preview(dataset=dataset) if dataset else None,
        "frozen": challenge.submissions.exists(),
        "k_warnings": challenge_warnings(challenge=challenge, user=request.user),
        **planner_context(
            request.GET,
            initial={
                "gamma": challenge.gamma,
                "alpha": challenge.alpha,
                "run_minutes": minutes,
                "boo_n": challenge.boo_n,
            },
        ),
    }
    return render(request, "challenges/preview.html", context)


def _preview_action(request, challenge: Challenge):
    """``publish`` (make the challenge public) or ``use_k`` (set k to the planner's figure)."""
    action = request.POST.get("action")
    try:
        if action == "publish":
            challenge_update(challenge=challenge, user=request.user, visibility=Visibility.PUBLIC)
            messages.success(request, f"“{challenge.title}” is published.")
            return redirect(challenge)
        if action == "use_k":
            k = int(request.POST.get("k_runs", ""))
            challenge_update(challenge=challenge, user=request.user, k_runs=k)
            messages.success(request, f"Runs per entry (k) set to {k}.")
            for warning in challenge_warnings(challenge=challenge, user=request.user):
                messages.warning(request, warning)
    except ValueError:
        messages.error(request, "k must be a whole number.")
    except ServiceError as exc:
        messages.error(request, in_words(exc.message))
    return redirect("challenge-preview", slug=challenge.slug)


@login_required
def challenge_phases(request, slug: str):
    """The host's phases page: every phase with its settings to change, and a form to add one.

    A POST carries ``phase`` (a phase's id, or ``new``); ``phase_create``/``phase_update`` decide,
    and their message lands on the field it names.
    """
    challenge = get_object_or_404(challenge_list_visible(user=request.user), slug=slug)  # private: a 404 to others
    if not user_is_host(user=request.user, challenge=challenge):
        raise PermissionDenied("Only the challenge's hosts can change its phases.")
    phases = list(challenge.phases.order_by("order", "opens_at", "id"))
    target = request.POST.get("phase") if request.method == "POST" else None
    forms_by_phase = {
        p.pk: PhaseForm(request.POST if target == str(p.pk) else None, instance=p, prefix=f"p{p.pk}") for p in phases
    }
    kinds = {name: getattr(challenge, name) for name in SHARED_WITH_PHASE}  # a new phase takes the challenge's kinds
    new_form = PhaseForm(request.POST if target == "new" else None, prefix="new", initial=kinds)
    bound = new_form if target == "new" else forms_by_phase.get(whole_number(target or ""))
    if bound is not None and bound.is_valid():
        try:
            if bound is new_form:
                phase = phase_create(challenge=challenge, user=request.user, **bound.service_fields())
            else:
                # the bound form has written its values onto its instance: the service compares with the stored row
                stored = challenge.phases.get(pk=bound.instance.pk)
                phase = phase_update(phase=stored, user=request.user, **bound.service_fields())
        except ServiceError as exc:
            add_service_error(bound, exc)
        else:
            messages.success(request, f"The {phase.name} phase is saved.")
            return redirect("challenge-phases", slug=challenge.slug)
    return render(
        request,
        "challenges/phases.html",
        {"challenge": challenge, "phase_forms": [(p, forms_by_phase[p.pk]) for p in phases], "new_form": new_form},
    )


@login_required
def challenge_scoring_program(request, slug: str):
    """Upload (``program``) or remove (``remove``) the challenge's scoring program; POST only, from the edit page."""
    challenge = get_object_or_404(challenge_list_visible(user=request.user), slug=slug)  # private: a 404 to others
    if not user_is_host(user=request.user, challenge=challenge):
        raise PermissionDenied("Only the challenge's hosts can manage its scoring program.")
    if request.method != "POST":
        return redirect("challenge-edit", slug=challenge.slug)
    refusal = upload_refusal(request)
    if refusal is not None:  # a program over its limit, stopped while it streamed
        messages.error(request, refusal.message)
        return redirect("challenge-edit", slug=challenge.slug)
    try:
        if "remove" in request.POST:
            program_remove(challenge=challenge, user=request.user)
            messages.success(request, "The scoring program is removed; the built-in metric scores again.")
        elif "resume" in request.POST:
            program_resume(challenge=challenge, user=request.user)
            messages.success(request, "The scoring program is checked again; submissions reopen once it passes.")
        elif "program" in request.FILES:
            upload = read_upload(request.FILES["program"], kind="program", field="program")
            program_upload(challenge=challenge, user=request.user, data=upload.data, filename=upload.name)
            messages.success(
                request, "The scoring program is uploaded; a worker now checks it on the sample submission."
            )
        else:
            messages.error(request, "Choose a scoring program (a .py file) to upload.")
    except ServiceError as exc:
        messages.error(request, exc.message)
    return redirect("challenge-edit", slug=challenge.slug)


@login_required
def challenge_bundle_export(request, slug: str):
    """The challenge as a bundle (zip: manifest.json and its data), for its hosts; audit-logged."""
    challenge = get_object_or_404(challenge_list_visible(user=request.user), slug=slug)  # private: a 404 to others
    try:
        archive = bundle_export_file(challenge=challenge, user=request.user)
    except ServiceError as exc:
        if not user_is_host(user=request.user, challenge=challenge):
            raise PermissionDenied(exc.message) from None
        messages.error(request, exc.message)
        return redirect("challenge-edit", slug=challenge.slug)
    return FileResponse(
        archive, as_attachment=True, filename=f"{challenge.slug}-bundle.zip", content_type="application/zip"
    )


class BundleImportForm(forms.Form):
    bundle = forms.FileField(help_text="A zip exported by varboard (manifest.json and data/).")
    slug = forms.SlugField(required=False, max_length=60, help_text="Empty: the bundle's own slug.")
    title = forms.CharField(required=False, max_length=200, help_text="Empty: the bundle's own title.")


@login_required
def challenge_bundle_import(request):
    """A new challenge, hosted by the user, from a bundle; nothing is stored when it is refused."""
    refusal = upload_refusal(request)
    form = BundleImportForm(request.POST or None, request.FILES or None)
    if refusal is not None:  # a bundle over its limit, stopped while it streamed
        show_upload_refusal(form, refusal)
        return render(request, "challenges/bundle_import.html", {"form": form}, status=400)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            bundle = upload_file(data["bundle"], kind="bundle", field="bundle")  # read where it lies, never whole
            challenge = bundle_import(
                data=bundle, user=request.user, slug=data["slug"] or None, title=data["title"] or None
            )
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            messages.success(request, "The challenge is created from the bundle, as a copy you host.")
            return redirect(challenge)
    return render(request, "challenges/bundle_import.html", {"form": form})
