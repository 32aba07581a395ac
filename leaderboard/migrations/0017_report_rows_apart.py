"""Store a report in pieces (issue 27): each entry's own row in ``ReportRow``, written only when it changes.

Reports stored whole stay readable (``Report.from_db`` takes both layouts); the next recomputation stores
them in pieces.
"""

import django.db.models.deletion
import leaderboard.jsoncodec
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0016_run_queue"),
    ]

    operations = [
        migrations.CreateModel(
            name="ReportRow",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "board",
                    models.CharField(choices=[("public", "Public board"), ("private", "Private board")], max_length=10),
                ),
                ("submission_id", models.BigIntegerField()),
                (
                    "data",
                    models.JSONField(
                        decoder=leaderboard.jsoncodec.FastJSONDecoder, encoder=leaderboard.jsoncodec.FastJSONEncoder
                    ),
                ),
                (
                    "challenge",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="report_rows",
                        to="leaderboard.challenge",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("challenge", "board", "submission_id"), name="report_row_unique")
                ],
            },
        ),
    ]
