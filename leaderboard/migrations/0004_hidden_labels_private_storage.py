# Hidden labels in a storage of their own (a private bucket or prefix): leaderboard/storage.py.

import leaderboard.models
import leaderboard.storage
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0003_run_leases"),
    ]

    operations = [
        migrations.AlterField(
            model_name="dataset",
            name="hidden_labels_file",
            field=models.FileField(
                blank=True, storage=leaderboard.storage.hidden_labels_storage, upload_to=leaderboard.models.dataset_path
            ),
        ),
    ]
