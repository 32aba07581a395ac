"""``manage.py janitor_check``: exit 1 unless the janitor ran recently (celery beat's health check).

Beat has no ping of its own; what matters is that its schedule drives janitor passes, which
record their time in the database (``JanitorState``, one row for every process). The check
fails when no pass ended within ``--max-age`` seconds (default: three janitor intervals plus a
minute, so a slow pass or a busy scoring queue does not flap it).
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from leaderboard.services.janitor import janitor_last_pass_age


class Command(BaseCommand):
    help = "Exit with status 1 unless a janitor pass ended within --max-age seconds."

    def add_arguments(self, parser):
        parser.add_argument(
            "--max-age", type=float, default=None, help="seconds (default: 3 x VARBOARD_JANITOR_INTERVAL_S + 60)"
        )

    def handle(self, *args, max_age=None, **options):
        limit = max_age if max_age is not None else 3 * settings.VARBOARD["JANITOR_INTERVAL_S"] + 60
        age = janitor_last_pass_age()
        if age is None:
            raise CommandError(
                "no janitor pass is recorded in the database: is beat running, and a worker on the "
                "scoring queue, with the same DATABASE_URL?"
            )
        if age > limit:
            raise CommandError(f"the last janitor pass ended {age:.0f} s ago (limit {limit:.0f} s)")
        self.stdout.write(f"the last janitor pass ended {age:.0f} s ago")
