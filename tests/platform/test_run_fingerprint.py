"""What a run executed on (``execution.fingerprint``): the worker says the GPU, the run only its libraries."""

from __future__ import annotations

from execution import fingerprint as fingerprint_module
from execution.fingerprint import fingerprint
from execution.sandbox import Limits

FORGED = {
    "python": "3.13.0",
    "numpy": "9.9.9",
    "torch": "2.9.9+cu999",
    "sklearn": "0.0.1",
    "gpu": "NVIDIA H200 (forged by the recipe)",
}


def test_a_cpu_run_never_claims_a_gpu_and_what_the_run_reported_is_named():
    """A reviewer's recipe (2026-11-30) rewrote the harness's version report: a CPU run's stored fingerprint named an
    H200, served by the API and the admin."""
    fp = fingerprint(FORGED, "cpu", Limits())
    assert fp["gpu"] is None
    assert fp["numpy"] == "9.9.9" and sorted(fp["reported_by_run"]) == ["numpy", "python", "sklearn", "torch"]
    assert fingerprint(None, "cpu", Limits())["reported_by_run"] == []


def test_a_cuda_run_s_gpu_is_the_worker_s_and_the_run_s_word_only_when_the_worker_cannot_tell(monkeypatch):
    monkeypatch.setattr(fingerprint_module, "_gpu_name", lambda device: "NVIDIA A100-SXM4-80GB")
    fp = fingerprint(FORGED, "cuda:0", Limits())
    assert fp["gpu"] == "NVIDIA A100-SXM4-80GB" and "gpu" not in fp["reported_by_run"]
    monkeypatch.setattr(fingerprint_module, "_gpu_name", lambda device: None)
    fp = fingerprint(FORGED, "cuda:0", Limits())
    assert fp["gpu"] == FORGED["gpu"] and "gpu" in fp["reported_by_run"]
