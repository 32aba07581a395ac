"""Store each run's queue (issue 24): the worker and the janitor dispatch from it instead of reading
the recipe again. Existing rows are filled once as the old routing chose: prediction runs on
``scoring``; recipe runs (and their variance studies' runs) on ``gpu`` when the challenge's device is
``gpu`` or the recipe declares ``NEEDS_GPU = True``, else ``cpu`` (an unreadable recipe: the device).
"""

from django.db import migrations, models

from evaluation.recipes import inspect_recipe


def _recipe_queue(submission) -> str:
    if submission.challenge.device == "gpu":
        return "gpu"
    try:
        with submission.recipe_file.open("rb") as handle:
            return "gpu" if inspect_recipe(handle.read().decode("utf-8")).needs_gpu else "cpu"
    except Exception:  # noqa: BLE001 - a missing or broken file keeps the challenge's device
        return "cpu"


def fill(apps, schema_editor):
    Submission = apps.get_model("leaderboard", "Submission")
    Run = apps.get_model("leaderboard", "Run")
    StudyRun = apps.get_model("leaderboard", "StudyRun")
    Run.objects.filter(submission__kind="predictions").update(queue="scoring")
    recipes = Submission.objects.filter(kind="recipe").select_related("challenge")
    for submission in recipes.iterator():
        if _recipe_queue(submission) == "gpu":
            Run.objects.filter(submission=submission).update(queue="gpu")
            StudyRun.objects.filter(study__submission=submission).update(queue="gpu")


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0015_drop_challenge_dates_and_quotas"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="queue",
            field=models.CharField(
                choices=[("scoring", "scoring (prediction files)"), ("cpu", "CPU"), ("gpu", "GPU")],
                default="cpu",
                help_text="Where the run is dispatched, fixed at creation: scoring for prediction files, cpu or gpu for recipes (the challenge's device, NEEDS_GPU).",
                max_length=8,
            ),
        ),
        migrations.AddField(
            model_name="studyrun",
            name="queue",
            field=models.CharField(
                choices=[("scoring", "scoring (prediction files)"), ("cpu", "CPU"), ("gpu", "GPU")],
                default="cpu",
                help_text="cpu or gpu: the queue of the entry's runs, fixed at creation.",
                max_length=8,
            ),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
