"""GPU workers pin each pool process to one device.

Start a worker for the ``gpu`` queue with ``VARBOARD_GPUS=0,1,2,3`` and ``-c 4``: pool
process i sets ``CUDA_VISIBLE_DEVICES`` to the i-th id (modulo their number), so every run
sees exactly one GPU, which the sandbox passes on to the recipe as ``cuda``. With one GPU
per worker, ``CUDA_VISIBLE_DEVICES=N`` on the worker alone does the same.
"""

from __future__ import annotations

import functools
import logging
import os

logger = logging.getLogger(__name__)


def device_for_process(gpus: str, index: int) -> str:
    """The GPU id pool process ``index`` uses, from a comma-separated list of ids."""
    ids = [part.strip() for part in gpus.split(",") if part.strip()]
    if not ids:
        raise ValueError("VARBOARD_GPUS must list GPU ids separated by commas, e.g. '0,1'")
    if index < 0:
        raise ValueError(f"a pool process index is never negative (got {index})")
    return ids[index % len(ids)]


def pin_this_process(index: int, environ=os.environ) -> str | None:
    """Set CUDA_VISIBLE_DEVICES for pool process ``index`` when VARBOARD_GPUS is set."""
    gpus = environ.get("VARBOARD_GPUS")
    if not gpus:
        return None
    device = device_for_process(gpus, index)
    environ["CUDA_VISIBLE_DEVICES"] = device
    return device


@functools.cache
def cuda_available() -> bool:
    """Whether torch sees a CUDA device in this process (checked once; False without torch).

    ``torch.cuda.is_available()`` queries the driver (NVML) without creating a CUDA context, so a
    process that forks sandboxes afterwards stays clean.
    """
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # torch missing or broken here: no GPU for runs
        logger.warning("torch cannot check for CUDA in this process; runs get the CPU")
        return False
