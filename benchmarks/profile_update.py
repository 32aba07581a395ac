"""Time (and optionally profile) the service's update of a large board after one new submission at a time.

The steps of ``bench_scale.py --service`` without its full recomputation in the same process: the board (``--entries``
recipe entries x ``--runs`` runs, B = 2,000, SQLite; a board ranked by the mean shows rank intervals from 16 runs) is built once and kept in ``--cache`` (its first run takes minutes), then
each run copies it, adds one submission and times ``report_recompute`` ``--updates`` times in a row in one process, as a
worker does. The first update of a process is a miss of what a worker keeps between updates (the rank bootstrap, the
board it stored, the entries it built: docs/scale.md); the later ones are what a worker that stays up pays. With
``--profile OUT`` the last update runs under cProfile (read it with ``pstats``)::

    .venv/bin/python benchmarks/profile_update.py --entries 20000 --updates 3
    .venv/bin/python benchmarks/profile_update.py --entries 20000 --runs 10 --updates 3  # no rank intervals
    .venv/bin/python benchmarks/profile_update.py --entries 20000 --updates 3 --profile /tmp/update.prof
"""

from __future__ import annotations

import argparse
import cProfile
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESAMPLES = 2000


def _environment(work: Path) -> None:
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
            "VARBOARD_VAR_DIR": str(work),
            "VARBOARD_MEDIA_ROOT": str(work / "media"),
            "DJANGO_DEBUG": "false",
            "DJANGO_LOG_LEVEL": "WARNING",
            "DATABASE_URL": f"sqlite:///{work / 'bench.sqlite3'}",
        }
    )
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    import django

    django.setup()


def _board(entries: int, runs: int, cached: Path, work: Path) -> int:
    """The board's challenge id, from the cached database (made and fully computed first when missing)."""
    import bench_scale
    from django.core.management import call_command
    from django.db import connection

    from leaderboard.models import Challenge
    from leaderboard.services.reports import report_recompute

    if cached.exists():
        shutil.copy(cached, work / "bench.sqlite3")
        call_command("migrate", verbosity=0)  # the cache may predate a migration
        return Challenge.objects.get(slug="bench-scale").pk
    call_command("migrate", verbosity=0)
    challenge_id, _, _ = bench_scale.populate(entries, runs, RESAMPLES)
    report_recompute(challenge_id=challenge_id, force=True)
    connection.close()
    cached.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(work / "bench.sqlite3", cached)
    return challenge_id


def _add_one(challenge_id: int, entries: int, runs: int, i: int) -> None:
    """One more scored recipe submission, as ``bench_scale.populate``'s own."""
    import bench_scale
    from django.contrib.auth.models import User

    from leaderboard.models import Challenge

    entry = bench_scale.synthetic_entries(1, runs, seed=99 + i, first_id=entries + 1 + i)
    host = User.objects.get(username="bench-host")
    bench_scale.add_entries(Challenge.objects.get(pk=challenge_id), host, entry, runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=16, help="runs per entry (rank intervals from 16)")
    parser.add_argument("--updates", type=int, default=3)
    parser.add_argument("--profile", help="write the last update's cProfile statistics here")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "varboard-profile-update"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="varboard-update-"))
    try:
        _environment(work)
        from leaderboard.models import Report
        from leaderboard.services.reports import report_recompute

        challenge_id = _board(
            args.entries, args.runs, Path(args.cache) / f"board-{args.entries}x{args.runs}.sqlite3", work
        )
        walls, cpus = [], []
        for i in range(args.updates):
            _add_one(challenge_id, args.entries, args.runs, i)
            Report.objects.filter(challenge_id=challenge_id).update(recompute_pending=True)  # as report_request does
            profile = cProfile.Profile() if args.profile and i == args.updates - 1 else None
            start, cpu = time.perf_counter(), time.process_time()
            if profile:
                profile.enable()
            report_recompute(challenge_id=challenge_id, reuse=True)  # as the worker does
            if profile:
                profile.disable()
                profile.dump_stats(args.profile)
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
        print(
            f"{args.entries} entries x {args.runs} runs, {args.updates} updates after one new submission each, in one process: wall "
            f"{', '.join(f'{w:.2f}' for w in walls)} s; process CPU {', '.join(f'{c:.2f}' for c in cpus)} s "
            "(the first a miss of what the worker keeps)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
