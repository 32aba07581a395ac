# The reports' JSON codec (leaderboard.jsoncodec): Python-side only, the column is unchanged, so the
# state alone changes (SQLite would otherwise rebuild the report tables for nothing).

import leaderboard.jsoncodec
from django.db import migrations, models


def _data_field():
    return models.JSONField(
        decoder=leaderboard.jsoncodec.FastJSONDecoder, default=dict, encoder=leaderboard.jsoncodec.FastJSONEncoder
    )


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0009_accounts_notifications_webhooks"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(model_name="privatereport", name="data", field=_data_field()),
                migrations.AlterField(model_name="report", name="data", field=_data_field()),
            ]
        ),
    ]
