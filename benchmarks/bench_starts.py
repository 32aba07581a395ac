"""Back-to-back runs through `execution` directly (no REST API, no worker): cold, warm, forked.

The light mode of `bench_runs.py --starts-direct`: in this process, one `LocalRunner`, six runs back
to back (the first of each series not counted: it makes the warm sandbox or the template) of the
trivial recipe and of the same recipe plus ``import torch``, for each start mode; prints the median
wall time of a run and the per-run overhead of ``import torch`` (target with forked runs: <= 0.5 s).

    .venv/bin/python benchmarks/bench_starts.py [--runs 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from execution.forked import FORK_ENV, template_pool  # noqa: E402
from execution.runners import LocalRunner  # noqa: E402
from execution.sandbox import Limits  # noqa: E402
from execution.warm import WARM_ENV, warm_pool  # noqa: E402
from tests.recipes.helpers import RECIPES, load_digits_data, run_file  # noqa: E402

MODES = {"cold": ("0", "0"), "warm": ("1", "0"), "forked": ("0", "1")}


def series(path: Path, mode: str, runs: int, data) -> list[float]:
    """Wall seconds of `runs` back-to-back runs of `path` in `mode`, after one uncounted run."""
    os.environ[WARM_ENV], os.environ[FORK_ENV] = MODES[mode]
    runner, limits, walls = LocalRunner(), Limits(wall_time_s=120), []
    for index in range(runs + 1):
        start = time.perf_counter()
        out = run_file(path, data, limits=limits, runner=runner)
        if out.status != "succeeded":
            raise RuntimeError(f"{mode} {path.name}: {out.error}")
        if (mode == "forked") != ("forked from a template" in out.isolation):
            raise RuntimeError(f"{mode} {path.name}: not the start mode asked for ({out.warnings})")
        if index:
            walls.append(time.perf_counter() - start)
    for pool in (warm_pool(), template_pool()):
        if pool is not None:
            pool.discard()
    return walls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args()
    data = load_digits_data()
    trivial = RECIPES / "trivial.py"
    with tempfile.TemporaryDirectory() as folder:
        torch_recipe = Path(folder) / "trivial_torch.py"
        torch_recipe.write_text("import torch\n" + trivial.read_text())
        print(f"direct (execution.LocalRunner, no API/worker), {args.runs} back-to-back runs, median s per run")
        print(f"{'mode':8} {'trivial':>8} {'+torch':>8} {'overhead':>9}")
        for mode in MODES:
            plain = statistics.median(series(trivial, mode, args.runs, data))
            torch = statistics.median(series(torch_recipe, mode, args.runs, data))
            print(f"{mode:8} {plain:8.3f} {torch:8.3f} {torch - plain:+9.3f}", flush=True)


if __name__ == "__main__":
    main()
