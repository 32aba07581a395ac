"""``Submission.runs_stamp``, moved by the database itself whenever one of the submission's runs is inserted, deleted
or changed in a column a report reads (issue 27, docs/scale.md): a report update then reads the runs of the
submissions whose stamp moved only (``selectors.challenge_runs``). Triggers, not Python: runs are written by many
paths (lifecycle, submissions, janitor, results import, rescoring, the worker, raw ``.update()`` calls).

* The run triggers fire on the columns of ``selectors.SNAPSHOT_RUN_COLUMNS`` only (:data:`STAMPED_COLUMNS`; a test
  checks it covers them): a lease renewal or a heartbeat (``lease_expires_at``) never writes the submission row.
* A stamp never goes back: Django's ``save()`` writes every field, and a submission loaded before its runs changed
  and saved after would set the stamp a board read back. A trigger on the submission keeps the larger value.
* PostgreSQL takes each new stamp from a sequence as well (the larger of the two), so a stamp a rolled-back
  transaction gave is never given again.
"""

from django.db import migrations, models

#: The run columns whose change moves the stamp: ``selectors.SNAPSHOT_RUN_COLUMNS`` (tests check it).
STAMPED_COLUMNS = (
    "submission_id",
    "index",
    "status",
    "test_score",
    "valid_score",
    "public_score",
    "private_score",
    "extra_scores",
    "result_revision",
)
#: The triggers by vendor, as ``selectors.RUN_STAMP_TRIGGERS`` names them (it reads every run in full where one is
#: missing: a later migration that rebuilds the table on SQLite drops them).
TRIGGERS = {
    "sqlite": (
        "leaderboard_run_stamp_insert",
        "leaderboard_run_stamp_delete",
        "leaderboard_run_stamp_update",
        "leaderboard_submission_stamp_kept",
    ),
    "postgresql": ("leaderboard_run_stamp", "leaderboard_submission_stamp_kept"),
}


def _columns() -> str:
    return ", ".join(f'"{c}"' for c in STAMPED_COLUMNS)


SQLITE = [
    """CREATE TRIGGER leaderboard_run_stamp_insert AFTER INSERT ON leaderboard_run BEGIN
         UPDATE leaderboard_submission SET runs_stamp = runs_stamp + 1 WHERE id = NEW.submission_id;
       END""",
    """CREATE TRIGGER leaderboard_run_stamp_delete AFTER DELETE ON leaderboard_run BEGIN
         UPDATE leaderboard_submission SET runs_stamp = runs_stamp + 1 WHERE id = OLD.submission_id;
       END""",
    f"""CREATE TRIGGER leaderboard_run_stamp_update AFTER UPDATE OF {_columns()} ON leaderboard_run BEGIN
         UPDATE leaderboard_submission SET runs_stamp = runs_stamp + 1
           WHERE id = OLD.submission_id OR id = NEW.submission_id;
       END""",
    """CREATE TRIGGER leaderboard_submission_stamp_kept AFTER UPDATE OF runs_stamp ON leaderboard_submission
       WHEN NEW.runs_stamp < OLD.runs_stamp BEGIN
         UPDATE leaderboard_submission SET runs_stamp = OLD.runs_stamp WHERE id = NEW.id;
       END""",
]
SQLITE_REVERSE = [f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS["sqlite"]]

POSTGRESQL = [
    "CREATE SEQUENCE leaderboard_run_stamp_seq",
    """CREATE FUNCTION leaderboard_run_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP <> 'INSERT' THEN
           UPDATE leaderboard_submission
             SET runs_stamp = GREATEST(runs_stamp + 1, nextval('leaderboard_run_stamp_seq'))
             WHERE id = OLD.submission_id;
         END IF;
         IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.submission_id <> OLD.submission_id) THEN
           UPDATE leaderboard_submission
             SET runs_stamp = GREATEST(runs_stamp + 1, nextval('leaderboard_run_stamp_seq'))
             WHERE id = NEW.submission_id;
         END IF;
         RETURN NULL;
       END $$""",
    f"""CREATE TRIGGER leaderboard_run_stamp AFTER INSERT OR DELETE OR UPDATE OF {_columns()} ON leaderboard_run
       FOR EACH ROW EXECUTE FUNCTION leaderboard_run_stamp()""",
    """CREATE FUNCTION leaderboard_submission_stamp_kept() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         NEW.runs_stamp := GREATEST(NEW.runs_stamp, OLD.runs_stamp);
         RETURN NEW;
       END $$""",
    """CREATE TRIGGER leaderboard_submission_stamp_kept BEFORE UPDATE OF runs_stamp ON leaderboard_submission
       FOR EACH ROW EXECUTE FUNCTION leaderboard_submission_stamp_kept()""",
]
POSTGRESQL_REVERSE = [
    "DROP TRIGGER IF EXISTS leaderboard_submission_stamp_kept ON leaderboard_submission",
    "DROP FUNCTION IF EXISTS leaderboard_submission_stamp_kept()",
    "DROP TRIGGER IF EXISTS leaderboard_run_stamp ON leaderboard_run",
    "DROP FUNCTION IF EXISTS leaderboard_run_stamp()",
    "DROP SEQUENCE IF EXISTS leaderboard_run_stamp_seq",
]


def _execute(schema_editor, statements: dict[str, list[str]]) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in statements:
        raise NotImplementedError(f"runs_stamp triggers for {vendor}: only SQLite and PostgreSQL")
    for sql in statements[vendor]:
        schema_editor.execute(sql, params=None)


def triggers_create(apps, schema_editor):
    _execute(schema_editor, {"sqlite": SQLITE, "postgresql": POSTGRESQL})


def triggers_drop(apps, schema_editor):
    _execute(schema_editor, {"sqlite": SQLITE_REVERSE, "postgresql": POSTGRESQL_REVERSE})


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0033_report_lease_own_row"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="runs_stamp",
            field=models.BigIntegerField(default=0, editable=False),
        ),
        migrations.RunPython(triggers_create, triggers_drop),
    ]
