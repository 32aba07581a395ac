# How many times each report was rebuilt (the varboard_report_recomputations_total metric).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0004_hidden_labels_private_storage"),
    ]

    operations = [
        migrations.AddField(
            model_name="report",
            name="recompute_count",
            field=models.PositiveBigIntegerField(default=0),
        ),
    ]
