"""The resampling kernels on torch: a CUDA device when there is one, the CPU otherwise.

The same bootstraps as the numpy kernels (Efron & Tibshirani 1993, ch. 6 and 13;
Bouthillier et al. 2021, eq. 9 for P(A>B)) with torch's random stream: equal to the numpy
results within Monte Carlo error, not bit for bit, and reproducible per device for a seed.
Resamples are count matrices ``c[b, r]`` (``torch.randint`` + ``scatter_add_``), so every
statistic linear in the multiplicities is one matrix product on the device:

* paired P(A>B) of any list of pairs: ``w @ c.T / 2k`` with ``w = 2·[a > b] + [a = b]``;
* unpaired P(A>B): each entry's resampled values, ``U`` by broadcasting per pair;
* the test bootstrap's means: the examples' counts shared by all entries, each entry's
  files weighted by its own counts;
* rank intervals: means ``x @ c.T / k``, competition ranks by ``torch.searchsorted`` in
  each sorted resample, percentiles by linear interpolation (numpy's default).

torch is imported inside the functions: importing this module (or the web process) does
not import torch. ``device="auto"`` is CUDA when ``torch.cuda.is_available()``.

References
----------
Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap. Chapman & Hall.
Bouthillier, X. et al. (2021). Accounting for Variance in Machine Learning Benchmarks. MLSys.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BACKENDS", "paired_p_bootstrap", "rank_intervals_torch", "testset_means_bootstrap", "torch_device",
           "unpaired_p_bootstrap"]

BACKENDS = ("numpy", "torch")


def torch_device(device: str = "auto"):
    """``torch.device``: "auto" is CUDA when available, else the CPU; "cpu" or "cuda" as asked."""
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda") and not str(device).startswith("cuda:"):
        raise ValueError(f"`device` must be 'auto', 'cpu' or 'cuda' (got {device!r}).")
    return torch.device(device)


def _generator(seed: int, device):
    import torch

    generator = torch.Generator(device=device)
    generator.manual_seed(int(seed) % (2**63))
    return generator


def _counts(n_items: int, n_resamples: int, generator, device, dtype):
    """Count matrix (B, n_items) of B resamples with replacement of n_items items."""
    import torch

    idx = torch.randint(0, n_items, (n_resamples, n_items), generator=generator, device=device)
    counts = torch.zeros((n_resamples, n_items), dtype=dtype, device=device)
    return counts.scatter_add_(1, idx, torch.ones_like(idx, dtype=dtype))


def paired_p_bootstrap(x, i, j, *, n_resamples: int, seed: int, device="auto") -> np.ndarray:
    """P(x_i > x_j) in B joint resamples of the runs (ties one half), shape (pairs, B)."""
    import torch

    dev = torch_device(device) if isinstance(device, str) else device
    x = torch.as_tensor(np.asarray(x, dtype=np.float64), device=dev)
    a, b = x[torch.as_tensor(np.asarray(i), device=dev)], x[torch.as_tensor(np.asarray(j), device=dev)]
    w = (2.0 * (a > b) + (a == b)).to(torch.float64)
    counts = _counts(x.shape[1], n_resamples, _generator(seed, dev), dev, torch.float64)
    return (w @ counts.T / (2.0 * x.shape[1])).cpu().numpy()


def unpaired_p_bootstrap(rows, i, j, *, n_resamples: int, seed: int, device="auto") -> np.ndarray:
    """Mann–Whitney P(row_i > row_j) with each entry resampled on its own, shape (pairs, B)."""
    import torch

    dev = torch_device(device) if isinstance(device, str) else device
    generator = _generator(seed, dev)
    resampled = []
    for r in rows:
        values = torch.as_tensor(np.asarray(r, dtype=np.float64), device=dev)
        idx = torch.randint(0, values.numel(), (n_resamples, values.numel()), generator=generator, device=dev)
        resampled.append(values[idx])  # (B, k_e)
    out = torch.empty((len(i), n_resamples), dtype=torch.float64, device=dev)
    for t, (a, b) in enumerate(zip(np.asarray(i).tolist(), np.asarray(j).tolist())):
        ra, rb = resampled[a][:, :, None], resampled[b][:, None, :]
        out[t] = ((ra > rb).to(torch.float64) + 0.5 * (ra == rb)).mean(dim=(1, 2))
    return out.cpu().numpy()


def testset_means_bootstrap(entries, *, n_resamples: int, seed: int, device="auto") -> np.ndarray:
    """Each entry's mean outcome in B resamples, (B, entries): test examples shared, files per entry.

    ``entries``: one array (files, examples) per entry, all with the same examples.
    """
    import torch

    dev = torch_device(device) if isinstance(device, str) else device
    generator = _generator(seed, dev)
    n = entries[0].shape[1]
    examples = _counts(n, n_resamples, generator, dev, torch.float64)  # (B, n)
    out = torch.empty((n_resamples, len(entries)), dtype=torch.float64, device=dev)
    for e, outcomes in enumerate(entries):
        sums = examples @ torch.as_tensor(np.asarray(outcomes, dtype=np.float64), device=dev).T  # (B, files)
        files = outcomes.shape[0]
        weights = (_counts(files, n_resamples, generator, dev, torch.float64) if files > 1
                   else torch.ones((n_resamples, 1), dtype=torch.float64, device=dev))
        out[:, e] = (sums * weights).sum(dim=1) / (files * n)
    return out.cpu().numpy()


def _linear_quantiles(values, q):
    """numpy's default ("linear") percentiles along the last axis of a torch tensor, shape (len(q), rows)."""
    import torch

    b = values.shape[-1]
    ordered = torch.sort(values, dim=-1).values
    out = []
    for p in q:
        virtual = (b - 1) * p / 100.0
        lo = int(np.floor(virtual))
        hi = min(lo + 1, b - 1)
        frac = virtual - lo
        out.append(ordered[..., lo] + (ordered[..., hi] - ordered[..., lo]) * frac)
    return torch.stack(out)


def rank_intervals_torch(scores, *, n_resamples: int, confidence_level: float, seed: int, device="auto"):
    """Rank intervals of paired entries by their mean (1 = best): one joint bootstrap on the device.

    Returns a :class:`~evaluation.stats.RankIntervals` (competition ranks, "1224"), as
    :func:`~evaluation.stats.rank_intervals` with ``statistic="mean"``.
    """
    import torch
    from scipy import stats

    from ._types import RankIntervals

    dev = torch_device(device) if isinstance(device, str) else device
    x = torch.as_tensor(np.asarray(scores, dtype=np.float64), device=dev)
    n_entries, k = x.shape
    counts = _counts(k, n_resamples, _generator(seed, dev), dev, torch.float64)
    means = counts @ x.T / k  # (B, entries)
    ordered = torch.sort(means, dim=1).values
    # competition rank: 1 + entries with a strictly larger mean in the same resample
    ranks = 1 + n_entries - torch.searchsorted(ordered, means, right=True)
    q = [100 * (1 - confidence_level) / 2, 100 * (1 + confidence_level) / 2]
    lo, hi = _linear_quantiles(ranks.T.to(torch.float64), q).cpu().numpy()
    boot_ranks = ranks.T.cpu().numpy().astype(np.int64)
    estimate = x.mean(dim=1).cpu().numpy()
    return RankIntervals(stats.rankdata(-estimate, method="min").astype(np.int64), np.floor(lo + 1e-9).astype(np.int64),
                         np.ceil(hi - 1e-9).astype(np.int64), confidence_level,
                         boot_ranks.std(axis=1, ddof=1) if n_resamples > 1 else np.zeros(n_entries), boot_ranks)
