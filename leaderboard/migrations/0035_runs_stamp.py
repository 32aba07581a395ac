"""``RunsStamp``: each submission's runs stamp, moved by the database itself whenever one of the submission's runs is
inserted, deleted or changed in a column a report reads (issue 27, docs/scale.md): a report update then reads the runs
of the submissions whose stamp moved only (``selectors.challenge_runs``). Triggers, not Python: runs are written by
many paths (lifecycle, submissions, janitor, results import, rescoring, the worker, raw ``.update()`` calls).

* A table of its own, keyed by the submission, not a column of ``leaderboard_submission``: a run's writer (which locks
  the run first) never locks the submission's row, which other paths lock before its runs (``submission_refund``,
  cancellation): on PostgreSQL a trigger updating the submission row was a lock-order inversion (deadlocks), and every
  run write contended with every writer of the submission row (status refreshes, moderation, selection).
* The INSERT trigger upserts the row (``ON CONFLICT (submission_id) DO UPDATE``); the DELETE and UPDATE triggers
  update it only: a row is missing only once its submission is being deleted (Django's collector deletes the stamp
  and the runs in some order: a run deleted after the stamp moves nothing, and no row comes back). The submissions
  that exist at migration time get a row (stamp 0), so a change to their runs is never missed.
* The run triggers fire on the columns of ``selectors.SNAPSHOT_RUN_COLUMNS`` only (:data:`STAMPED_COLUMNS`; a test
  checks it covers them): a lease renewal or a heartbeat (``lease_expires_at``) never writes a stamp.
* No trigger keeps a stamp from going back (the one on the submission before): Django never writes this table (a
  stale ``Submission.save()`` no longer carries a stamp), so only the triggers move it, always forwards.
* PostgreSQL takes each new stamp from a sequence as well (the larger of the two), so a stamp a rolled-back
  transaction gave is never given again.
"""

import django.db.models.deletion
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
    ),
    "postgresql": ("leaderboard_run_stamp",),
}
BACKFILL = "INSERT INTO leaderboard_runsstamp (submission_id, stamp) SELECT id, 0 FROM leaderboard_submission"


def _columns() -> str:
    return ", ".join(f'"{c}"' for c in STAMPED_COLUMNS)


SQLITE = [
    BACKFILL,
    """CREATE TRIGGER leaderboard_run_stamp_insert AFTER INSERT ON leaderboard_run BEGIN
         INSERT INTO leaderboard_runsstamp (submission_id, stamp) VALUES (NEW.submission_id, 1)
           ON CONFLICT (submission_id) DO UPDATE SET stamp = stamp + 1;
       END""",
    """CREATE TRIGGER leaderboard_run_stamp_delete AFTER DELETE ON leaderboard_run BEGIN
         UPDATE leaderboard_runsstamp SET stamp = stamp + 1 WHERE submission_id = OLD.submission_id;
       END""",
    f"""CREATE TRIGGER leaderboard_run_stamp_update AFTER UPDATE OF {_columns()} ON leaderboard_run BEGIN
         UPDATE leaderboard_runsstamp SET stamp = stamp + 1
           WHERE submission_id = OLD.submission_id OR submission_id = NEW.submission_id;
       END""",
]
SQLITE_REVERSE = [f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS["sqlite"]]

POSTGRESQL = [
    BACKFILL,
    "CREATE SEQUENCE leaderboard_run_stamp_seq",
    """CREATE FUNCTION leaderboard_run_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'INSERT' THEN
           INSERT INTO leaderboard_runsstamp AS s (submission_id, stamp)
             VALUES (NEW.submission_id, nextval('leaderboard_run_stamp_seq'))
             ON CONFLICT (submission_id) DO UPDATE SET stamp = GREATEST(s.stamp + 1, EXCLUDED.stamp);
           RETURN NULL;
         END IF;
         UPDATE leaderboard_runsstamp SET stamp = GREATEST(stamp + 1, nextval('leaderboard_run_stamp_seq'))
           WHERE submission_id = OLD.submission_id;
         IF TG_OP = 'UPDATE' AND NEW.submission_id <> OLD.submission_id THEN
           UPDATE leaderboard_runsstamp SET stamp = GREATEST(stamp + 1, nextval('leaderboard_run_stamp_seq'))
             WHERE submission_id = NEW.submission_id;
         END IF;
         RETURN NULL;
       END $$""",
    f"""CREATE TRIGGER leaderboard_run_stamp AFTER INSERT OR DELETE OR UPDATE OF {_columns()} ON leaderboard_run
       FOR EACH ROW EXECUTE FUNCTION leaderboard_run_stamp()""",
]
POSTGRESQL_REVERSE = [
    "DROP TRIGGER IF EXISTS leaderboard_run_stamp ON leaderboard_run",
    "DROP FUNCTION IF EXISTS leaderboard_run_stamp()",
    "DROP SEQUENCE IF EXISTS leaderboard_run_stamp_seq",
]


def _execute(schema_editor, statements: dict[str, list[str]]) -> None:
    vendor = schema_editor.connection.vendor
    if vendor not in statements:
        raise NotImplementedError(f"runs stamp triggers for {vendor}: only SQLite and PostgreSQL")
    for sql in statements[vendor]:
        schema_editor.execute(sql, params=None)


def triggers_create(apps, schema_editor):
    _execute(schema_editor, {"sqlite": SQLITE, "postgresql": POSTGRESQL})


def triggers_drop(apps, schema_editor):
    _execute(schema_editor, {"sqlite": SQLITE_REVERSE, "postgresql": POSTGRESQL_REVERSE})


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0034_report_piece"),
    ]

    operations = [
        migrations.CreateModel(
            name="RunsStamp",
            fields=[
                (
                    "submission",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="runs_stamp",
                        serialize=False,
                        to="leaderboard.submission",
                    ),
                ),
                ("stamp", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunPython(triggers_create, triggers_drop),
    ]
