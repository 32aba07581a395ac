"""Can this worker isolate recipe runs? Its own sandbox, or the runner service it sends runs to.

A worker that consumes the recipe queues checks this at start-up and refuses those queues
when the answer is no (fail closed, docs/DESIGN.md §5); ``python -m execution.probe`` is
the same check for an orchestrator's readiness probe.
"""

from __future__ import annotations

import functools
import os

from .sandbox import probe
from .sandbox.backend import Probe
from .sandbox.isolation import unsandboxed_allowed

__all__ = ["may_run_recipes", "readiness", "remote_probe", "runs_get_cuda"]


def remote_probe(url: str, token: str = "", timeout_s: float = 10.0) -> Probe:
    """The readiness of the runner service at ``url`` (its ``GET /health``), as a Probe."""
    import requests

    where = f"the runner service at {url}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = requests.get(f"{url.rstrip('/')}/health", headers=headers, timeout=timeout_s)
        body = response.json()
    except (requests.RequestException, ValueError) as exc:
        return Probe(ok=False, backend="runner service", missing=f"{where} does not answer: {exc}")
    if response.status_code != 200 or not body.get("ok"):
        return Probe(
            ok=False,
            backend="runner service",
            missing=f"{where} cannot isolate runs: {body.get('missing') or response.status_code}",
        )
    return Probe(ok=True, backend="runner service", isolation=(f"runner service at {url}", *body.get("isolation", ())))


def runs_get_cuda() -> bool:
    """Whether the configured runner gives runs a CUDA device: the runner service's ``/health``, or this process."""
    url = os.environ.get("VARBOARD_RUNNER_URL", "").strip()
    if not url:
        from .devices import cuda_available

        return cuda_available()
    return _remote_cuda(url, os.environ.get("VARBOARD_RUNNER_TOKEN", ""))


@functools.lru_cache(maxsize=8)
def _remote_cuda(url: str, token: str) -> bool:
    import requests

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        return bool(requests.get(f"{url.rstrip('/')}/health", headers=headers, timeout=10).json().get("cuda"))
    except (requests.RequestException, ValueError, AttributeError):
        return False


def readiness() -> Probe:
    """The configured runner's readiness: ``VARBOARD_RUNNER_URL``'s service, else this machine's sandbox."""
    url = os.environ.get("VARBOARD_RUNNER_URL", "").strip()
    if url:
        return remote_probe(url, os.environ.get("VARBOARD_RUNNER_TOKEN", ""))
    return probe()


def may_run_recipes(found: Probe) -> bool:
    """Isolation is available, or an operator explicitly allowed unsandboxed runs (a developer's laptop)."""
    return found.ok or unsandboxed_allowed()
