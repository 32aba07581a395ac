# Leases, enqueue times and the last error of runs: the janitor heals lost work from these.

import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0002_run_isolation_and_hidden_test_rows"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="enqueued_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.AddField(
            model_name="run",
            name="last_error",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="run",
            name="lease_expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="run",
            name="lease_owner",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["status", "enqueued_at"], name="run_status_enqueued"),
        ),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(fields=["status", "lease_expires_at"], name="run_status_lease"),
        ),
    ]
