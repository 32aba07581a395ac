# Variance studies respect the boards (issue 21): a study run's score on the public part.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0011_team_invitation_mails"),
    ]

    operations = [
        migrations.AddField(
            model_name="studyrun",
            name="public_score",
            field=models.FloatField(
                blank=True,
                null=True,
                help_text="Score on the public part of the hidden rows (what non-hosts read before the reveal); test_score is on all of them.",
            ),
        ),
    ]
