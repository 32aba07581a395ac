"""The fused Triton kernel of paired P(A>B) (evaluation/stats/triton_kernels.py) counts what the
unfused path counts: the same histograms, count for count, and summarizes them as the unfused
path does: the same percentiles and standard errors, bitwise.

On the CPU it runs through Triton's interpreter (``TRITON_INTERPRET=1``), in a subprocess
because Triton reads that switch when the kernel is defined; compiled on CUDA when a device
is present. Triton is a test requirement (requirements-dev.txt), so this runs on every machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[2]

# (entries, runs, resamples, CPU chunk elements or None): pairs not a multiple of the kernel's
# block, resamples not a multiple of its tile, one run, several chunks of draws (2 chunks of 350),
# 100 runs, whose numerators (up to 200) fill the bytes of the packed counts, and 130 runs, whose
# numerators (up to 260) no longer fit them (the unpacked loop).
CASES = [(5, 7, 600, None), (3, 1, 50, None), (9, 6, 700, 36 * 350), (4, 100, 300, None), (4, 130, 300, None)]

COMPARE = """
import json, sys
import numpy as np, torch
from evaluation.stats import torch_backend as tb


def compare(device, cases):
    dev = torch.device(device)
    out, saved = [], (tb.FUSED_PAIRED_ON, tb.CPU_CHUNK_ELEMENTS)
    for entries, runs, n_resamples, chunk in cases:
        x = np.round(np.random.default_rng(runs).normal(size=(entries, runs)), 1)  # ties
        i, j = np.triu_indices(entries, 1)
        if chunk:
            tb.CPU_CHUNK_ELEMENTS = chunk
        kept = []  # the kernel's histograms, written beside its summaries
        tb._fused_paired_summary(
            list(x), i, j, n_resamples, tb._generator(5, dev), dev, torch.float32, [2.5, 97.5], hist=kept
        )
        fused = kept[0]
        counted = tb._Histograms(i.size, 2 * runs, dev)
        for b0, b1, numerators, pairs in tb._paired_kernel(
            list(x), i, j, n_resamples, tb._generator(5, dev), dev, torch.float32
        ):
            counted.add(pairs, numerators)
        kw = dict(paired=True, n_resamples=n_resamples, seed=5, q=[2.5, 50, 97.5], device=dev)
        tb.FUSED_PAIRED_ON = (device,)
        a = tb.pairs_p_bootstrap(list(x), i, j, **kw)
        tb.FUSED_PAIRED_ON = ()
        b = tb.pairs_p_bootstrap(list(x), i, j, **kw)
        tb.FUSED_PAIRED_ON, tb.CPU_CHUNK_ELEMENTS = saved
        out.append(
            {
                "equal_histograms": bool(torch.equal(fused.cpu().float(), counted.hist.cpu())),
                "counted": float(fused.sum()),
                "expected": float(i.size * n_resamples),
                "equal_percentiles": bool(np.array_equal(a.percentiles, b.percentiles)),
                "equal_standard_errors": bool(np.array_equal(a.standard_error, b.standard_error)),
                "spread": float(a.percentiles[2].max() - a.percentiles[0].min()),
            }
        )
    return out


def compare_ranks(device, cases):
    # the fused rank kernel against the unfused path (a sort on the CPU, histograms on CUDA)
    out, saved = [], tb.FUSED_PAIRED_ON
    for entries, runs, n_resamples in cases:
        x = np.round(0.8 + 0.02 * np.random.default_rng(entries).standard_normal((entries, runs)), 2)  # tied means
        kw = dict(n_resamples=n_resamples, confidence_level=0.9, seed=3, device=device, keep_distribution=False)
        tb.FUSED_PAIRED_ON = (device,)
        fused = tb.rank_intervals_torch(x, **kw)
        tb.FUSED_PAIRED_ON = ()
        plain = tb.rank_intervals_torch(x, **kw)
        tb.FUSED_PAIRED_ON = saved
        out.append(
            {
                "equal": all(np.array_equal(getattr(fused, f), getattr(plain, f)) for f in ("rank", "low", "high")),
                "equal_standard_errors": bool(np.array_equal(fused.standard_error, plain.standard_error)),
                "widths": int((fused.high - fused.low).sum()),
                "fused_failed": tb._fused_failed,
            }
        )
    return out
"""

#: (entries, runs, resamples) of the rank kernel: entries not a multiple of its block, resamples not a
#: multiple of its tile, and a single resample tile.
RANK_CASES = [(41, 10, 2001), (3, 5, 300)]

INTERPRETED = """
import triton.runtime.interpreter as interpreter

# Triton 3.6's interpreter turns a scalar argument into a one-element array and calls int() on
# it, which numpy 2 refuses; read its one element instead (the compiled kernel is not concerned).
_patch = interpreter._patch_lang_tensor


def _patch_scalars(tensor, scope):
    _patch(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))


interpreter._patch_lang_tensor = _patch_scalars
cases, rank_cases = json.loads(sys.argv[1])
print(json.dumps([compare("cpu", cases), compare_ranks("cpu", rank_cases)]))
"""


def _check_ranks(results):
    for case, got in zip(RANK_CASES, results):
        assert not got["fused_failed"], (case, got)  # the kernel ran, it did not fall back
        assert got["equal"] and got["equal_standard_errors"], (case, got)
    assert results[0]["widths"] > 0  # overlapping entries: real intervals were counted


def _check(results):
    for case, got in zip(CASES, results):
        assert got["equal_histograms"], (case, got)
        assert got["counted"] == got["expected"], (case, got)  # every resample once, padding taken off
        assert got["equal_percentiles"] and got["equal_standard_errors"], (case, got)
    assert max(r["spread"] for r in results) > 0  # the resamples differ: a real distribution was counted


def test_the_interpreted_kernel_counts_what_the_unfused_path_counts():
    env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", COMPARE + INTERPRETED, json.dumps([CASES, RANK_CASES])],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    pairs, ranks = json.loads(done.stdout.strip().splitlines()[-1])
    _check(pairs)
    _check_ranks(ranks)


def test_the_compiled_kernel_counts_what_the_unfused_path_counts():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the kernel is compiled for one (the interpreted test covers the CPU)")
    scope: dict = {}
    exec(COMPARE, scope)
    _check(scope["compare"]("cuda", CASES))
    _check_ranks(scope["compare_ranks"]("cuda", RANK_CASES))
    # a board's size, still equal: 100 entries x 50 runs, B = 10,000
    _check_large(torch)


def _check_large(torch):
    from evaluation.stats import torch_backend as tb

    x = np.round(0.8 + 0.02 * np.random.default_rng(1).standard_normal((100, 50)), 4)
    i, j = np.triu_indices(100, 1)
    kw = dict(paired=True, n_resamples=10_000, seed=2, q=[2.5, 97.5], device="cuda")
    fused = tb.pairs_p_bootstrap(list(x), i, j, **kw)
    saved = tb.FUSED_PAIRED_ON
    tb.FUSED_PAIRED_ON = ()
    try:
        plain = tb.pairs_p_bootstrap(list(x), i, j, **kw)
    finally:
        tb.FUSED_PAIRED_ON = saved
    np.testing.assert_array_equal(fused.percentiles, plain.percentiles)
    np.testing.assert_array_equal(fused.standard_error, plain.standard_error)


def test_a_kernel_that_cannot_run_falls_back_to_the_same_numbers(monkeypatch, caplog):
    """Triton cannot build the kernel for every GPU (nor every driver): the first failure is logged, the
    call gives the plain path's numbers from the same seed, and the process stops trying."""
    from evaluation.stats import torch_backend as tb
    from evaluation.stats import triton_kernels as tk

    x = np.round(np.random.default_rng(4).normal(size=(6, 9)), 1)
    i, j = np.triu_indices(6, 1)
    kw = dict(paired=True, n_resamples=700, seed=3, q=[2.5, 97.5], device="cpu")
    plain = tb.pairs_p_bootstrap(list(x), i, j, **kw)
    calls = []

    def broken(*args):
        calls.append(1)
        raise RuntimeError("no kernel image is available for execution on the device")

    monkeypatch.setattr(tk, "paired_summaries", broken)
    monkeypatch.setattr(tb, "FUSED_PAIRED_ON", ("cpu",))
    monkeypatch.setattr(tb, "_fused_failed", False)
    with caplog.at_level("WARNING", logger=tb.__name__):
        first = tb.pairs_p_bootstrap(list(x), i, j, **kw)
        second = tb.pairs_p_bootstrap(list(x), i, j, **kw)
    for got in (first, second):
        np.testing.assert_array_equal(got.percentiles, plain.percentiles)
        np.testing.assert_array_equal(got.standard_error, plain.standard_error)
    assert calls == [1] and "no kernel image" in caplog.text  # tried once, said once
