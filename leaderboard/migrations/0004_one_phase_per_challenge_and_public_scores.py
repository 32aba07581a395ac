"""Carry existing data: every challenge gets one phase with its dates, quotas and kinds; every
submission joins it; every scored run's test score is its public score (public_fraction 1: all
hidden rows are public); prediction submissions are charged their files. DRF's plain-text tokens
are dropped (tokens are now django-rest-knox digests with expiry; users log in again)."""

from django.db import migrations
from django.db.models import F


def forwards(apps, schema_editor):
    Challenge = apps.get_model("leaderboard", "Challenge")
    Phase = apps.get_model("leaderboard", "Phase")
    Submission = apps.get_model("leaderboard", "Submission")
    Run = apps.get_model("leaderboard", "Run")
    for challenge in Challenge.objects.all().iterator():
        phase = Phase.objects.create(
            challenge=challenge,
            name="main",
            order=0,
            opens_at=challenge.opens_at,
            closes_at=challenge.closes_at,
            daily_quota=challenge.daily_quota,
            total_quota=challenge.total_quota,
            allow_predictions=challenge.allow_predictions,
            allow_recipes=challenge.allow_recipes,
            test_rows="all",
        )
        Submission.objects.filter(challenge=challenge).update(phase=phase)
    Submission.objects.filter(kind="predictions").update(n_files=F("runs_expected"))
    Run.objects.filter(test_score__isnull=False).update(public_score=F("test_score"), public_outcomes=F("outcomes"))


def backwards(apps, schema_editor):
    Submission = apps.get_model("leaderboard", "Submission")
    Submission.objects.update(phase=None)
    apps.get_model("leaderboard", "Phase").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0003_phases_boards_audit_registration"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
        migrations.RunSQL("DROP TABLE IF EXISTS authtoken_token", reverse_sql=migrations.RunSQL.noop),
    ]
