"""The clean environment a sandboxed run starts with: nothing inherited from the worker."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from .limits import Limits

__all__ = ["SAFE_PATH", "check_device", "clean_env", "check_extra_env"]

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
_SECRET_NAME = re.compile(
    r"SECRET|PASSWORD|PASSWD|TOKEN|CREDENTIAL|API_?KEY|PRIVATE|"
    r"^(DJANGO|DATABASE|CELERY|REDIS|POSTGRES|PG|AWS|GOOGLE|AZURE)_|^DATABASE_URL$"
)
_THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)


def check_device(device: str) -> str:
    if not isinstance(device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise ValueError(f"`device` must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    return device


def check_extra_env(extra: Mapping[str, str] | None) -> dict:
    """The caller's extra variables; a name that looks like a credential is refused."""
    checked = {}
    for name, value in (extra or {}).items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ValueError(f"`env` must map strings to strings, got {name!r}: {value!r}")
        if _SECRET_NAME.search(name.upper()):
            raise ValueError(
                f"`env` variable {name!r} looks like a credential; the sandbox's environment must not contain secrets"
            )
        checked[name] = value
    return checked


def clean_env(home: str, extra: Mapping[str, str], limits: Limits, device: str) -> dict:
    """The run's whole environment; `home` is the working directory as the run sees it."""
    env = {
        "PATH": SAFE_PATH,
        "HOME": home,
        "TMPDIR": os.path.join(home, "tmp"),
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MALLOC_ARENA_MAX": "2",
        # pyarrow's bundled jemalloc (loaded by pandas, so by scikit-learn) otherwise starts a
        # background purging thread at import: a forked run's template must hold one thread
        # (execution.forked). Purging then happens in the allocating thread; results are the same.
        "JE_ARROW_MALLOC_CONF": "background_thread:false",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
    }
    for name in _THREAD_VARIABLES:
        env[name] = str(int(limits.threads))
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif device.startswith("cuda:"):
        env["CUDA_VISIBLE_DEVICES"] = device.split(":", 1)[1]
    elif os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    env.update(extra)
    return env
