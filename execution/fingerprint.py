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
    """What the run executed on; ``warm_start`` says whether its sandbox was started ahead.

    The libraries' versions are the sandbox interpreter's, as its harness reported them
    (``reported``): the recipe runs in that process and can rewrite them, so they are listed
    under ``reported_by_run``. The GPU is the worker's to say: none on a CPU run, whatever the
    run claims (a recipe named an H200 on a CPU run, a reviewer, 2026-11-30), and on a CUDA run
    the device's name from ``nvidia-smi``, the run's own word only when that cannot tell.
    """
    fp = dict(_host_fingerprint())
    taken = []
    for key in ("python", "numpy", "torch", "transformers", "sklearn"):
        value = (reported or {}).get(key)
        if isinstance(value, str) and value:
            fp[key] = value[:100]
            taken.append(key)
    fp["gpu"] = _gpu_name(device) if device.startswith("cuda") else None
    claimed = (reported or {}).get("gpu")
    if device.startswith("cuda") and not fp["gpu"] and isinstance(claimed, str) and claimed:
        fp["gpu"] = claimed[:100]
        taken.append("gpu")
    fp["reported_by_run"] = taken
    fp["threads"] = limits.threads
    fp["warm_start"] = bool(warm_start)
    return fp
