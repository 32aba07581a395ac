"""A run moved to another submission (its ``submission_id`` updated) moves that submission's runs stamp even where it
has no ``RunsStamp`` row yet (no run ever inserted into it since migration 0035): 0035's UPDATE trigger updated the
row only, so the receiving submission kept reading stamp 0, and a report worker's kept read
(``selectors.challenge_runs(reuse=True)``) never read the run it gained (session attack27,
tests/platform/test_snapshot_attacks.py). The UPDATE trigger now inserts the row of the submission a run moves to when it
is missing (SQLite: ``INSERT OR IGNORE`` after the update; PostgreSQL: the INSERT branch's upsert); nothing else
changes (the triggers keep their names: ``selectors.RUN_STAMP_TRIGGERS``)."""

import importlib

from django.db import migrations

_0035 = importlib.import_module("leaderboard.migrations.0035_runs_stamp")
_COLUMNS = ", ".join(f'"{c}"' for c in _0035.STAMPED_COLUMNS)

SQLITE = [
    "DROP TRIGGER IF EXISTS leaderboard_run_stamp_update",
    f"""CREATE TRIGGER leaderboard_run_stamp_update AFTER UPDATE OF {_COLUMNS} ON leaderboard_run BEGIN
         UPDATE leaderboard_runsstamp SET stamp = stamp + 1
           WHERE submission_id = OLD.submission_id OR submission_id = NEW.submission_id;
         INSERT OR IGNORE INTO leaderboard_runsstamp (submission_id, stamp)
           SELECT NEW.submission_id, 1 WHERE NEW.submission_id <> OLD.submission_id;
       END""",
]
SQLITE_REVERSE = ["DROP TRIGGER IF EXISTS leaderboard_run_stamp_update", _0035.SQLITE[3]]

POSTGRESQL = [
    """CREATE OR REPLACE FUNCTION leaderboard_run_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.submission_id <> OLD.submission_id) THEN
           INSERT INTO leaderboard_runsstamp AS s (submission_id, stamp)
             VALUES (NEW.submission_id, nextval('leaderboard_run_stamp_seq'))
             ON CONFLICT (submission_id) DO UPDATE SET stamp = GREATEST(s.stamp + 1, EXCLUDED.stamp);
         END IF;
         IF TG_OP = 'INSERT' THEN
           RETURN NULL;
         END IF;
         UPDATE leaderboard_runsstamp SET stamp = GREATEST(stamp + 1, nextval('leaderboard_run_stamp_seq'))
           WHERE submission_id = OLD.submission_id;
         RETURN NULL;
       END $$""",
]
POSTGRESQL_REVERSE = [_0035.POSTGRESQL[2].replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)]


def _execute(schema_editor, statements: dict[str, list[str]]) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in statements:
        raise NotImplementedError(f"runs stamp triggers for {vendor}: only SQLite and PostgreSQL")
    for sql in statements[vendor]:
        schema_editor.execute(sql, params=None)


def triggers_replace(apps, schema_editor):
    _execute(schema_editor, {"sqlite": SQLITE, "postgresql": POSTGRESQL})


def triggers_restore(apps, schema_editor):
    _execute(schema_editor, {"sqlite": SQLITE_REVERSE, "postgresql": POSTGRESQL_REVERSE})


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0035_runs_stamp"),
    ]

    operations = [
        migrations.RunPython(triggers_replace, triggers_restore),
    ]
