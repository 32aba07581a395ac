"""Where a run's workspace is executed: in this process's sandbox, or by a runner service.

A runner takes a run's input files (see :mod:`execution.workspace`), runs the harness on
them in the sandbox and hands back what happened plus the output files it was asked for,
each read without following links and capped in size. Nothing else crosses: the
runner never sees hidden labels, metrics or database rows, so a runner service on its
own machine holds nothing worth stealing (docs/DESIGN.md §5).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field

from .forked import TEMPLATE_FILE, template_pool
from .outputs import Outputs, RecipeFault
from .sandbox import Limits, SandboxResult, SandboxUnavailable, python_command, run_sandboxed
from .sandbox.supervise import finish
from .sandbox.warm import WarmStartFailed
from .sandbox.zygote import ForkFailed
from .warm import WarmKey, recipe_imports, warm_pool
from .workspace import HARNESS_DIR, HARNESS_FILES, harness_files

__all__ = ["LocalRunner", "RemoteRunner", "RunnerResult", "configured_program_runner", "configured_runner"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunnerResult:
    """What a runner hands back.

    Attributes
    ----------
    sandbox : SandboxResult
    outputs : dict of str to bytes
        Output files that exist and are acceptable.
    faults : dict of str to str
        Output files that exist but are unacceptable (a link, too big), with the reason.
    """

    sandbox: SandboxResult
    outputs: dict = field(default_factory=dict)
    faults: dict = field(default_factory=dict)


def write_workspace(work: str, files: dict, *, outputs: bool = True) -> None:
    """Write ``files`` under ``work`` (which exists), plus the empty ``outputs/`` folder."""
    if outputs:
        os.makedirs(os.path.join(work, "outputs"))
    for name, content in files.items():
        path = os.path.normpath(os.path.join(work, name))
        if not path.startswith(work + os.sep):
            raise ValueError(f"input file {name!r} lies outside the workspace")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(content)


def collect_outputs(run_root: str, expected: dict) -> tuple[dict, dict]:
    """(outputs, faults) for the names in ``expected`` (name -> max bytes) under work/outputs."""
    outputs, faults = {}, {}
    reader = Outputs(run_root)
    try:
        for name, max_bytes in expected.items():
            try:
                content = reader.read(name, max_bytes)
            except RecipeFault as fault:
                faults[name] = str(fault)
                continue
            if content is not None:
                outputs[name] = content
    finally:
        reader.close()
    return outputs, faults


class LocalRunner:
    """Runs workspaces in this process's sandbox, under ``workdir_root`` (default: the system's).

    With forked runs on (`execution.forked`), a run is a fork of this process's template;
    otherwise, with warm starts on (`execution.warm`), a run takes the sandbox this process
    prepared during its previous run when it fits, and prepares the next one while it executes.
    """

    def __init__(self, *, workdir_root: str | None = None, python: str | None = None):
        self.workdir_root = workdir_root
        self.python = python

    def command(self) -> tuple[list, dict, str | None]:
        """(argv, extra environment, note) that start the harness."""
        if self.python:
            return [self.python, "-s", "-B", "harness.py"], {}, None
        prefix, env_items, note = python_command()
        return [*prefix, "harness.py"], dict(env_items), note

    def new_workspace(self) -> tuple[str, str]:
        """(run root, its empty ``work`` folder): the root 0711, so the sandbox's uid may
        enter work/ but not list or change the root."""
        run_root = tempfile.mkdtemp(prefix="varboard-run-", dir=self.workdir_root)
        os.chmod(run_root, 0o711)
        work = os.path.join(run_root, "work")
        os.makedirs(work)
        return run_root, work

    def _warm_plan(self, files: dict, limits: Limits, device: str):
        """(pool or None, key, the recipe's warmable imports, harness files) of a run of `files`."""
        argv, env, _ = self.command()
        harness = {name: files[name] for name in HARNESS_FILES if name in files}
        pool = warm_pool() if len(harness) == len(HARNESS_FILES) else None
        key = WarmKey.of(argv, env, limits, device, self.workdir_root, harness)
        return pool, key, recipe_imports(files.get("recipe.py", b"")), harness

    def prewarm(self, limits: Limits, device: str = "cpu", recipe: bytes = b"", timeout: float = 60.0) -> bool:
        """Prepare a waiting sandbox for a run of `recipe` with these limits, and wait until its
        imports are done; False when warm starts are off or unavailable (tests, benchmarks)."""
        pool, key, imports, harness = self._warm_plan({**harness_files(), "recipe.py": recipe}, limits, device)
        if pool is None:
            return False
        pool.prepare(key, imports, harness, self.new_workspace)
        return pool.warm is not None and pool.warm.waiting.ready(timeout)

    def run(self, files: dict, expected_outputs: dict, limits: Limits, device: str) -> RunnerResult:
        argv, env, note = self.command()
        pool, key, imports, harness = self._warm_plan(files, limits, device)
        templates = template_pool() if len(harness) == len(HARNESS_FILES) else None
        if templates is not None:
            try:
                return self._run_forked(templates, key, imports, harness, files, expected_outputs, note)
            except ForkFailed as exc:
                logger.warning("forked run unavailable, the run starts without a template: %s", exc)
                note = "; ".join(filter(None, [note, f"forked run unavailable ({exc}): started without a template"]))
        warm = pool.take(key, imports) if pool else None

        def prepare_next():
            if pool:
                pool.prepare(key, imports, harness, self.new_workspace)

        if warm is not None:
            try:
                return self._run_warm(warm, files, expected_outputs, note, prepare_next)
            except WarmStartFailed as exc:
                logger.warning("warm sandbox unusable, the run starts cold: %s", exc)
        prepare_next()
        run_root, work = self.new_workspace()
        try:
            write_workspace(work, files)
            result = run_sandboxed(argv, workdir=work, env=env, limits=limits, device=device)
            return self._result(run_root, result, note, expected_outputs)
        finally:
            shutil.rmtree(run_root, ignore_errors=True)

    def prefork(self, limits: Limits, device: str = "cpu", recipe: bytes = b"", timeout: float = 120.0) -> bool:
        """Start this process's template for runs of `recipe` with these limits and wait for its
        imports; False when forked runs are off (tests, benchmarks). ForkFailed when it cannot start."""
        templates = template_pool()
        if templates is None:
            return False
        _, key, imports, harness = self._warm_plan({**harness_files(), "recipe.py": recipe}, limits, device)
        template = templates.template(key, imports, harness, _template_file(), self.new_workspace)
        return template.ready(timeout)

    def _run_forked(self, templates, key, imports, harness, files, expected_outputs, note) -> RunnerResult:
        """The run in a fork of this process's template (made for its key and imports if need be)."""
        template = templates.template(key, imports, harness, _template_file(), self.new_workspace)
        run_root, work = self.new_workspace()
        try:
            write_workspace(work, files)
            try:
                forked = template.fork(work)
                template.release(forked)
            except ForkFailed:
                templates.discard()  # the next run makes a new one
                raise
            result = finish(forked, key.limits)
            result = SandboxResult(**{**result.__dict__, "warm_start": True})
            return self._result(run_root, result, note, expected_outputs)
        finally:
            shutil.rmtree(run_root, ignore_errors=True)

    def _run_warm(self, warm, files: dict, expected_outputs: dict, note, prepare_next) -> RunnerResult:
        """The run in the sandbox `warm` started ahead: inputs in, go, the next one prepared meanwhile."""
        try:
            write_workspace(warm.work, {n: c for n, c in files.items() if n not in HARNESS_FILES}, outputs=False)
            warm.waiting.release()
            prepare_next()
            result = warm.waiting.finish()
            result = SandboxResult(**{**result.__dict__, "warm_start": True})
            return self._result(warm.run_root, result, note, expected_outputs)
        finally:
            warm.discard()

    @staticmethod
    def _result(run_root: str, result: SandboxResult, note, expected_outputs: dict) -> RunnerResult:
        if note:
            result = SandboxResult(**{**result.__dict__, "warnings": (*result.warnings, note)})
        outputs, faults = collect_outputs(run_root, expected_outputs)
        return RunnerResult(sandbox=result, outputs=outputs, faults=faults)


def _template_file() -> bytes:
    with open(os.path.join(HARNESS_DIR, TEMPLATE_FILE), "rb") as handle:
        return handle.read()


class RemoteRunner:
    """Runs workspaces on a runner service (``execution.service``) at ``url``.

    A service that cannot be reached, answers 5xx or breaks the protocol raises
    ``SandboxUnavailable``: a platform fault, retried, never charged to the contestant.
    """

    def __init__(self, url: str, *, token: str = "", timeout_margin_s: float = 120.0):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout_margin_s = timeout_margin_s

    def run(self, files: dict, expected_outputs: dict, limits: Limits, device: str) -> RunnerResult:
        import requests  # only workers that use a runner service need it

        from .protocol import ProtocolError, decode_response, encode_request

        body = encode_request(files, expected_outputs, limits, device)
        headers = {"Content-Type": "application/zip"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            response = requests.post(
                f"{self.url}/v1/runs",
                data=body,
                headers=headers,
                timeout=(10, limits.wall_time_s + self.timeout_margin_s),
            )
        except requests.RequestException as exc:
            raise SandboxUnavailable(f"the runner service at {self.url} is unreachable: {exc}") from exc
        if response.status_code != 200:
            raise SandboxUnavailable(
                f"the runner service at {self.url} answered {response.status_code}: {response.text[:300]}"
            )
        cap = sum(expected_outputs.values()) + limits.max_output_bytes * 2 + 1024 * 1024
        try:
            result, outputs, faults = decode_response(response.content, cap)
        except ProtocolError as exc:
            raise SandboxUnavailable(f"the runner service at {self.url} sent a malformed answer: {exc}") from exc
        unexpected = sorted(set(outputs) - set(expected_outputs))
        if unexpected:
            raise SandboxUnavailable(
                f"the runner service at {self.url} returned outputs nobody asked for: {unexpected}"
            )
        return RunnerResult(sandbox=result, outputs=outputs, faults=faults)


def configured_runner():
    """The runner service named by ``VARBOARD_RUNNER_URL`` (with ``VARBOARD_RUNNER_TOKEN``), else this process's sandbox."""
    url = os.environ.get("VARBOARD_RUNNER_URL", "").strip()
    if url:
        return RemoteRunner(url, token=os.environ.get("VARBOARD_RUNNER_TOKEN", ""))
    return LocalRunner()


def configured_program_runner():
    """Where hosts' scoring programs run: the runner service named by ``VARBOARD_PROGRAM_RUNNER_URL`` (with
    ``VARBOARD_PROGRAM_RUNNER_TOKEN``), else this process's sandbox.

    A program is any signed-in host's code, and the worker that scores holds the database credentials and
    every challenge's labels: in production it runs on a runner service of its own (docker-compose.yml's
    ``runner-programs``), which receives one call's rows and holds nothing else.
    """
    url = os.environ.get("VARBOARD_PROGRAM_RUNNER_URL", "").strip()
    if url:
        return RemoteRunner(url, token=os.environ.get("VARBOARD_PROGRAM_RUNNER_TOKEN", ""))
    return LocalRunner()
