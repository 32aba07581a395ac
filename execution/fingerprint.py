"""The hardware and software a run executed on: interpreter, libraries, CPU, GPU, threads."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import subprocess

import numpy as np

from .sandbox import Limits

__all__ = ["fingerprint"]


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def _host_fingerprint() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": _version("torch"),
        "transformers": _version("transformers"),
        "sklearn": _version("scikit-learn"),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
    }


@functools.cache
def _gpu_name(device: str) -> str | None:
    if not device.startswith("cuda"):
        return None
    index = device.split(":", 1)[1] if ":" in device else "0"
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", index],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def fingerprint(reported: dict | None, device: str, limits: Limits, warm_start: bool = False) -> dict:
    """What the run executed on; ``warm_start`` says whether its sandbox was started ahead."""
    fp = dict(_host_fingerprint())
    for key in ("python", "numpy", "torch", "transformers", "sklearn", "gpu"):
        value = (reported or {}).get(key)
        if isinstance(value, str) and value:
            fp[key] = value[:100]
    if device.startswith("cuda") and not fp.get("gpu"):
        fp["gpu"] = _gpu_name(device)
    fp.setdefault("gpu", None)
    fp["threads"] = limits.threads
    fp["warm_start"] = bool(warm_start)
    return fp
