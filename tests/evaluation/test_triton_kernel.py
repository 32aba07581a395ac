"""The fused Triton kernel of paired P(A>B) (evaluation/stats/triton_kernels.py) counts what the
unfused path counts: the same histograms, count for count, so the same percentiles and
standard errors, bitwise.

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
# block, resamples not a multiple of its tile, one run, and several chunks of draws (each padded).
CASES = [(5, 7, 600, None), (3, 1, 50, None), (9, 6, 700, 36 * 350)]  # the last: 2 chunks of 350

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
        fused = tb._fused_paired_histograms(list(x), i, j, n_resamples, tb._generator(5, dev), dev, torch.float32)
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
                "equal_histograms": bool(torch.equal(fused[:, : 2 * runs + 1].cpu(), counted.hist.cpu())),
                "counted": float(fused.sum()),
                "expected": float(i.size * n_resamples),
                "equal_percentiles": bool(np.array_equal(a.percentiles, b.percentiles)),
                "equal_standard_errors": bool(np.array_equal(a.standard_error, b.standard_error)),
                "spread": float(a.percentiles[2].max() - a.percentiles[0].min()),
            }
        )
    return out
"""

INTERPRETED = """
import triton.runtime.interpreter as interpreter

# Triton 3.6's interpreter turns a scalar argument into a one-element array and calls int() on
# it, which numpy 2 refuses; read its one element instead (the compiled kernel is not concerned).
_patch = interpreter._patch_lang_tensor


def _patch_scalars(tensor, scope):
    _patch(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))


interpreter._patch_lang_tensor = _patch_scalars
print(json.dumps(compare("cpu", json.loads(sys.argv[1]))))
"""


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
        [sys.executable, "-c", COMPARE + INTERPRETED, json.dumps(CASES)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    _check(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_compiled_kernel_counts_what_the_unfused_path_counts():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the kernel is compiled for one (the interpreted test covers the CPU)")
    scope: dict = {}
    exec(COMPARE, scope)
    _check(scope["compare"]("cuda", CASES))
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

    monkeypatch.setattr(tk, "paired_histograms", broken)
    monkeypatch.setattr(tb, "FUSED_PAIRED_ON", ("cpu",))
    monkeypatch.setattr(tb, "_fused_failed", False)
    with caplog.at_level("WARNING", logger=tb.__name__):
        first = tb.pairs_p_bootstrap(list(x), i, j, **kw)
        second = tb.pairs_p_bootstrap(list(x), i, j, **kw)
    for got in (first, second):
        np.testing.assert_array_equal(got.percentiles, plain.percentiles)
        np.testing.assert_array_equal(got.standard_error, plain.standard_error)
    assert calls == [1] and "no kernel image" in caplog.text  # tried once, said once
