"""Benchmark the report on boards of thousands of entries (issue 15). Prints figures; not a test.

For 50 ... 5,000 recipe entries x 10 runs, B = 2000 (close entries, so groups overlap):

* ``build_report`` now (sparse comparisons, one joint bootstrap for the rank intervals),
  next to the all-pairs report it replaced, the same function at commit ``caa3b9f`` (extracted
  with ``git archive`` into a temporary folder), measured in the same run up to
  ``--reference-max`` entries (default 800; all pairs cost the square);
* each size runs in its own subprocess: its peak memory is that process's ``ru_maxrss``
  (the interpreter and numpy included);
* growth per doubling of the entries (``(t2 / t1) ** (log 2 / log(n2 / n1))``);
* the incremental update after one new entry on the largest board: ``build_report`` with
  the rows of the unchanged entries reused, next to the full recomputation;
* with ``--page``: a challenge of the largest size in SQLite under a temporary
  ``VARBOARD_VAR_DIR``: the service's incremental ``report_recompute`` after one new
  submission (the pending flag set, as ``report_request`` leaves it; wall time, and the
  process's CPU time, which a loaded machine inflates less), and the leaderboard page and
  JSON served by the Django test client (server time and bytes).

Targets (issue 15): 5,000 entries <= 15 s, peak <= 2 GB, growth <= x2.5 per doubling (fitted
over 400 ... 5,000), incremental update <= 1 s, page <= 300 ms and <= 300 KB; from 20,000
entries (issue 27): the full recomputation <= 60 s, peak <= 4 GB, the service's incremental
update <= 0.5 s, the page as before. Each prints PASS or FAIL. ``--sizes`` picks the boards
(10,000 and 20,000 take minutes each and gigabytes: run them alone on a shared machine). GPU figures: unmeasured unless ``VARBOARD_TORCH_DEVICE=cuda`` on a GPU
machine. Run from the repository root::

    .venv/bin/python benchmarks/bench_scale.py              # the full table (minutes)
    .venv/bin/python benchmarks/bench_scale.py --quick      # 50 ... 400, reference <= 200
    .venv/bin/python benchmarks/bench_scale.py --page       # also the service and the page
    .venv/bin/python benchmarks/bench_scale.py --service    # only the service and the page (5,000 entries)
    .venv/bin/python benchmarks/bench_scale.py --sizes 5000,20000 --reference-max 0   # issue 27's board
    .venv/bin/python benchmarks/bench_scale.py --service --max-entries 20000          # its service and page
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SIZES = (50, 100, 200, 400, 800, 1600, 3200, 5000, 10000, 20000)
#: The first version's all-pairs report (the code issue 15 measured), before the sparse comparisons.
REFERENCE_COMMIT = "caa3b9f"


def synthetic_entries(n: int, runs: int, seed: int = 0, first_id: int = 1):
    """Recipe entries with close means (so groups overlap), test and validation scores."""
    from evaluation.report import EntryRuns

    rng = np.random.default_rng(seed)
    test = 0.70 + 0.15 * np.arange(n)[:, None] / max(n, 1) + 0.01 * rng.standard_normal((n, runs))
    valid = test + 0.005 * rng.standard_normal((n, runs))
    return [
        EntryRuns(
            first_id + i,
            f"method-{first_id + i}",
            f"team-{first_id + i}",
            "recipe",
            runs,
            np.arange(runs),
            test[i],
            valid=valid[i],
        )
        for i in range(n)
    ]


# ------------------------------------------------------------------ one size, in a subprocess
def one(n: int, runs: int, resamples: int, incremental: bool) -> dict:
    from evaluation.report import ReportSettings, build_report

    entries = synthetic_entries(n, runs)
    seed = "master_seed" if "master_seed" in {f.name for f in dataclasses.fields(ReportSettings)} else "seed"
    settings = ReportSettings(n_resamples=resamples, k_runs=runs, boo_n=5, **{seed: 1})  # the reference: seed
    start = time.perf_counter()
    report = build_report(entries, settings)
    out = {
        "seconds": time.perf_counter() - start,
        "json_mb": len(json.dumps(report)) / 1e6,
        "comparisons": sum(len(s["comparisons"]) for s in report["sections"]),
    }
    if incremental:
        from evaluation.report import entry_fingerprint

        report = json.loads(json.dumps(report))
        newcomer = synthetic_entries(1, runs, seed=99, first_id=n + 1)[0]
        prints = {e.id: entry_fingerprint(e) for e in entries}
        reuse = {row["submission_id"]: row for row in report["entries"] if row["submission_id"] in prints}
        start = time.perf_counter()
        build_report([*entries, newcomer], settings, reuse=reuse, previous=report)
        out["incremental_seconds"] = time.perf_counter() - start
    out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def run_one(n: int, args, tree: Path | None = None, incremental: bool = False) -> dict | None:
    """``one(n)`` in a fresh interpreter (of ``tree``'s code when given); None if it failed."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--one",
        str(n),
        "--runs",
        str(args.runs),
        "--resamples",
        str(args.resamples),
    ] + (["--incremental"] if incremental else [])
    env = {**os.environ, "PYTHONPATH": str(tree or ROOT)}
    done = subprocess.run(command, cwd=tree or ROOT, env=env, capture_output=True, text=True, timeout=args.timeout)
    if done.returncode != 0:
        print(f"  ({'reference ' if tree else ''}{n} entries failed: {done.stderr.strip()[-300:]})")
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def reference_tree() -> Path | None:
    """The all-pairs code (:data:`REFERENCE_COMMIT`), extracted into a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="varboard-allpairs-"))
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", REFERENCE_COMMIT, "evaluation"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    except (OSError, subprocess.CalledProcessError):
        shutil.rmtree(folder, ignore_errors=True)
        return None
    shutil.copy(Path(__file__).resolve(), folder / "bench_scale.py")
    return folder


def growth(sizes: list[int], seconds: list[float]) -> list[float]:
    """Growth per doubling between consecutive sizes."""
    return [
        (t2 / t1) ** (math.log(2) / math.log(n2 / n1)) for n1, n2, t1, t2 in zip(sizes, sizes[1:], seconds, seconds[1:])
    ]


def fitted_growth(sizes: list[int], seconds: list[float], smallest: int = 400) -> float:
    """2 ** slope of log(seconds) on log2(entries), sizes >= ``smallest``."""
    points = [(math.log2(n), math.log(t)) for n, t in zip(sizes, seconds) if n >= smallest]
    if len(points) < 2:
        return float("nan")
    slope = np.polyfit([p[0] for p in points], [p[1] for p in points], 1)[0]
    return float(math.exp(slope))


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def table(args) -> dict:
    sizes = args.sizes or [n for n in SIZES if n <= args.max_entries]
    tree = reference_tree()
    if tree is None:
        print("(no git checkout: today's all-pairs reference is not measured)")
    rows, now = [], {}
    try:
        print(
            f"{'entries':>8} {'now s':>8} {'peak MB':>8} {'pairs':>8} {'JSON MB':>8} {'all-pairs s':>12} "
            f"{'peak MB':>8} {'pairs':>9}"
        )
        for n in sizes:
            new = run_one(n, args, incremental=(n == sizes[-1]))
            old = run_one(n, args, tree) if tree is not None and n <= args.reference_max else None
            now[n] = new
            rows.append((n, new, old))
            print(
                f"{n:>8} {new['seconds']:>8.2f} {new['peak_mb']:>8.0f} {new['comparisons']:>8} "
                f"{new['json_mb']:>8.1f} "
                + (
                    f"{old['seconds']:>12.2f} {old['peak_mb']:>8.0f} {old['comparisons']:>9}"
                    if old
                    else f"{'-':>12} {'-':>8} {'-':>9}"
                ),
                flush=True,
            )
    finally:
        if tree is not None:
            shutil.rmtree(tree, ignore_errors=True)
    seconds = [r[1]["seconds"] for r in rows]
    steps = growth(sizes, seconds)
    print("growth per doubling (now): " + ", ".join(f"{a}->{b}: x{g:.2f}" for a, b, g in zip(sizes, sizes[1:], steps)))
    ref = [(n, old["seconds"]) for n, _, old in rows if old]
    if len(ref) >= 2:
        ref_steps = growth([n for n, _ in ref], [t for _, t in ref])
        print(
            "growth per doubling (all pairs): "
            + ", ".join(f"{a}->{b}: x{g:.2f}" for (a, _), (b, _), g in zip(ref, ref[1:], ref_steps))
        )
    largest = sizes[-1]
    goal = targets(largest)
    fitted = fitted_growth(sizes, seconds)
    print(
        f"target {largest} entries <= {goal['full_s']:g} s ({goal['issue']}): {now[largest]['seconds']:.2f} s "
        f"{verdict(now[largest]['seconds'] <= goal['full_s'])}"
        + ("" if largest == goal["entries"] else f" (not the {goal['entries']:,} of the target)")
    )
    peak = now[largest]["peak_mb"]
    print(
        f"target peak memory <= {goal['peak_mb'] / 1024:g} GB ({largest} entries): {peak:.0f} MB "
        f"{verdict(peak <= goal['peak_mb'])}"
    )
    if math.isnan(fitted):
        print("target growth <= x2.5 per doubling: not measured (fewer than two sizes from 400)")
    else:
        print(
            f"target growth <= x2.5 per doubling (fitted over 400..{largest}): x{fitted:.2f} {verdict(fitted <= 2.5)}"
        )
    inc = now[largest].get("incremental_seconds")
    print(
        f"incremental update after one new entry on {largest} entries (build_report, rows of the {largest} "
        f"unchanged entries reused): {inc:.2f} s {verdict(inc <= goal['update_s'])} against the service level's "
        f"{goal['update_s']:g} s; reference, the full recomputation: {now[largest]['seconds']:.2f} s"
    )
    return now


def targets(n: int) -> dict:
    """The targets of a board of ``n`` entries: issue 27's from 20,000 entries, issue 15's below."""
    if n >= 20000:
        return {"issue": "issue 27", "entries": 20000, "full_s": 60, "peak_mb": 4096, "update_s": 0.5}
    return {"issue": "issue 15", "entries": 5000, "full_s": 15, "peak_mb": 2048, "update_s": 1}


# ------------------------------------------------------------------ the service and the page
#: Incremental updates timed by :func:`page`, each after one more submission.
UPDATES = 5


def page(args, n: int, report_level: float | None = None) -> None:
    """SQLite in a temporary VARBOARD_VAR_DIR: incremental report_recompute, page and JSON sizes and times."""
    var_dir = Path(tempfile.mkdtemp(prefix="varboard-scale-"))
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "leaderboard.settings",
            "VARBOARD_VAR_DIR": str(var_dir),
            "VARBOARD_MEDIA_ROOT": str(var_dir / "media"),
            "DJANGO_DEBUG": "false",
            "DJANGO_LOG_LEVEL": "WARNING",
            "DATABASE_URL": f"sqlite:///{var_dir / 'bench.sqlite3'}",
        }
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from leaderboard.models import Report
    from leaderboard.services.reports import report_recompute

    try:
        call_command("migrate", verbosity=0)
        challenge_id, slug, add = populate(n, args.runs, args.resamples)
        start = time.perf_counter()
        report_recompute(challenge_id=challenge_id, force=True, reuse=True)  # as the worker runs it (tasks.reports)
        full = time.perf_counter() - start
        walls, cpus = [], []
        for i in range(UPDATES):  # one new submission, then its update, UPDATES times: the median is the figure
            add(i)
            Report.objects.filter(challenge_id=challenge_id).update(recompute_pending=True)  # as report_request does
            start, cpu = time.perf_counter(), time.process_time()
            report = report_recompute(challenge_id=challenge_id, reuse=True)  # the worker keeps its last read
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
        inc, goal = float(np.median(walls)), targets(n)
        limit = goal["update_s"]
        print(
            f"service: report_recompute of {n} + 1 entries after one new submission, {UPDATES} times in a row "
            f"({', '.join(f'{w:.2f}' for w in walls)} s; process CPU {', '.join(f'{c:.2f}' for c in cpus)} s; "
            f"{report.data.get('reused_rows')} rows reused and {getattr(report, 'written_rows', 'all')} "
            f"written the last time; {stored_mb(Report, challenge_id):.1f} MB of report besides the rows): "
            f"median {inc:.2f} s {verdict(inc <= limit)} (target <= {limit:g} s); the full recomputation of {n}: "
            f"{full:.2f} s {verdict(full <= goal['full_s'])} (target <= {goal['full_s']:g} s, {goal['issue']})"
        )
        print(_rank_note(args.runs))
        print(
            f"target incremental update after one new entry on {n} entries <= {limit:g} s: service level "
            f"(report_recompute, SQLite, median of {UPDATES}) {inc:.2f} s {verdict(inc <= limit)}; report level "
            "(build_report) " + (f"{report_level:.2f} s" if report_level is not None else "not measured (--service)")
        )
        client = Client()
        for label, path, limit in (
            ("leaderboard page", f"/c/{slug}/", 300e3),
            ("leaderboard JSON", f"/api/challenges/{slug}/leaderboard/", None),
        ):
            client.get(path)  # warm the caches, as a reader after the recomputation would
            times, size = [], 0
            for _ in range(5):
                start = time.perf_counter()
                response = client.get(path)
                times.append(time.perf_counter() - start)
                size = len(response.content)
            ms = 1e3 * float(np.median(times))
            line = f"{label} of {n + UPDATES} entries: {ms:.0f} ms server time (median of 5), {size / 1e3:.0f} KB"
            if limit:
                line += f" {verdict(ms <= 300 and size <= limit)} (target <= 300 ms and <= 300 KB)"
            print(line)
    finally:
        shutil.rmtree(var_dir, ignore_errors=True)


def _rank_note(runs: int) -> str:
    """Whether the benchmark's board (ranked by the mean) computes rank intervals at ``runs`` runs."""
    from evaluation.report.sections import runs_for_rank_interval

    needed = runs_for_rank_interval("mean", 1)
    if runs >= needed:
        return f"the board's rank intervals: computed ({runs} runs >= {needed})"
    return f"the board's rank intervals: none below {needed} runs (--runs {needed} measures the update with them)"


def add_entries(challenge, host, entries, runs: int) -> None:
    """Scored recipe submissions of ``entries`` (``synthetic_entries``), each with its ``runs`` succeeded runs."""
    from leaderboard.models import Run, Submission, Team

    teams = Team.objects.bulk_create([Team(name=e.team) for e in entries])
    subs = Submission.objects.bulk_create(
        [
            Submission(
                challenge=challenge,
                team=t,
                submitted_by=host,
                kind="recipe",
                method_name=e.name,
                status="scored",
                runs_expected=runs,
            )
            for e, t in zip(entries, teams)
        ]
    )
    Run.objects.bulk_create(
        [
            Run(
                submission=s,
                index=r,
                status="succeeded",
                test_score=float(e.test[r]),
                valid_score=float(e.valid[r]),
            )
            for e, s in zip(entries, subs)
            for r in range(runs)
        ],
        batch_size=2000,
    )


def stored_mb(model, challenge_id: int) -> float:
    """Megabytes of the stored report's own column (the whole report, or its skeleton when stored in pieces)."""
    from django.db.models.functions import Length

    return model.objects.filter(challenge_id=challenge_id).values_list(Length("data"), flat=True).get() / 1e6


def populate(n: int, runs: int, resamples: int):
    """A challenge with ``n`` scored recipe entries; returns (id, slug, add the i-th more submission)."""
    from django.contrib.auth.models import User

    from leaderboard.models import Challenge

    host = User.objects.create_user("bench-host", password="a-long-benchmark-password")
    challenge = Challenge.objects.create(
        slug="bench-scale",
        title="Scale benchmark",
        created_by=host,
        metric="accuracy",
        higher_is_better=True,
        allow_recipes=True,
        k_runs=runs,
        boo_n=5,
        bootstrap_resamples=resamples,
        master_seed=1,
    )

    add_entries(challenge, host, synthetic_entries(n, runs), runs)
    return (
        challenge.pk,
        challenge.slug,
        lambda i: add_entries(challenge, host, synthetic_entries(1, runs, seed=99 + i, first_id=n + 1 + i), runs),
    )


def _sizes(text: str) -> list[int]:
    """``--sizes``: comma-separated positive board sizes, returned in increasing order."""
    try:
        sizes = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes must be comma-separated integers, not {text!r}") from None
    if not sizes or sizes[0] < 2:
        raise argparse.ArgumentTypeError(f"--sizes must name boards of at least 2 entries, not {text!r}")
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument(
        "--max-entries", type=int, default=5000, help="largest board (the table's sizes up to it; the service's board)"
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        help="the table's boards, e.g. 5000,20000 (instead of 50 ... "
        "--max-entries); the largest is the service's board",
    )
    parser.add_argument("--reference-max", type=int, default=800, help="largest board for the all-pairs reference")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per size")
    parser.add_argument("--page", action="store_true", help="also the service and the page (SQLite)")
    parser.add_argument(
        "--service", action="store_true", help="only the service and the page (SQLite), without the table"
    )
    parser.add_argument("--quick", action="store_true", help="50 ... 400 entries, reference up to 200")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--incremental", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        sys.path.insert(0, os.getcwd())
        print(json.dumps(one(args.one, args.runs, args.resamples, args.incremental)))
        return
    if args.quick:
        args.max_entries, args.reference_max = 400, 200
    if args.sizes:
        args.max_entries = max(args.sizes)
    print(
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start, Python "
        f"{sys.version.split()[0]}, numpy {np.__version__}; recipe entries x {args.runs} runs, B = {args.resamples}; "
        f"GPU: unmeasured"
    )
    if args.service:
        page(args, args.max_entries)
        return
    now = table(args)
    if args.page:
        page(args, args.max_entries, now[max(now)].get("incremental_seconds"))


if __name__ == "__main__":
    main()
