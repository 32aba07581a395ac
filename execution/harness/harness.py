"""Runs one recipe inside the sandbox. Copied into the run's working directory.

Reads (relative to the working directory):
    inputs/train.npz, inputs/valid.npz, inputs/test_inputs.npz
        X, y (train and valid only), ids, feature_names, classes; loaded without pickle.
    inputs/spec.json
        {"trials": [hyperparameters, ...], "seeds": {...}, "device": "cpu",
         "task": "classification"|"regression", "prediction_kind": "label"|"proba"|"value"}
    recipe.py
        The contestant's recipe; defines fit_predict(train, valid, test_inputs,
        hyperparameters, seeds, device) -> predictions for test_inputs.

Writes to outputs/:
    predictions_<t>.npy   predictions of trial t for every row of test_inputs
    trial_<t>.json        {"duration_s": ...}
    error.json            when the recipe failed: type, message, errno, line, traceback
    done.json             when every trial finished: interpreter and library versions

For every trial t it seeds everything with the ``init`` seed and calls fit_predict once.
test_inputs holds the validation rows and the test rows mixed together; the runner,
outside the sandbox, splits the predictions and scores them. Exit status: 0 success,
1 the recipe failed, 3 the recipe ran out of memory, 2 the harness's own inputs are bad.

Started ahead of its run (a warm start, ``VARBOARD_WARM`` set: execution.sandbox.warm), it
first imports what it is told and waits for the go on stdin, before its inputs exist.
Started as a template (``VARBOARD_TEMPLATE`` set: execution.sandbox.zygote), it imports, then
forks one confined process per run (varboard_template.py), which goes on from here.
"""

import os
import sys

# Started with -S when the worker's own interpreter is out of the sandbox user's reach:
# the worker's site-packages come in through this variable (see execution.sandbox.python_command).
for _site_dir in filter(None, os.environ.pop("VARBOARD_SITE_PACKAGES", "").split(os.pathsep)):
    import site

    site.addsitedir(_site_dir)

import importlib  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

import numpy as np  # noqa: E402
from varboard_recipe import Inputs, seed_everything  # noqa: E402

OUT = "outputs"


def _load(name: str, labelled: bool, spec: dict) -> Inputs:
    with np.load(os.path.join("inputs", name), allow_pickle=False) as data:
        return Inputs(
            X=data["X"],
            y=data["y"] if labelled else None,
            ids=data["ids"],
            feature_names=[str(f) for f in data["feature_names"]],
            classes=data["classes"],
            task=spec["task"],
            prediction_kind=spec["prediction_kind"],
        )


def _write_json(name: str, payload: dict) -> None:
    tmp = os.path.join(OUT, name + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(payload, fh)
    os.replace(tmp, os.path.join(OUT, name))


def _fail(exc: BaseException, phase: str, trial) -> int:
    frames = traceback.extract_tb(exc.__traceback__)
    line = next((f.lineno for f in reversed(frames) if os.path.basename(f.filename) == "recipe.py"), None)
    text = "".join(traceback.format_exception(exc))
    sys.stderr.write(text)
    sys.stderr.flush()
    try:
        _write_json(
            "error.json",
            {
                "phase": phase,
                "trial": trial,
                "type": type(exc).__name__,
                "message": str(exc)[:2000],
                "errno": getattr(exc, "errno", None) if isinstance(getattr(exc, "errno", None), int) else None,
                "line": line,
                "traceback": text[-4000:],
            },
        )
    except BaseException:  # the disk may be what failed; the exit status still says it
        pass
    return 3 if isinstance(exc, MemoryError) else 1


def _as_array(predictions) -> np.ndarray:
    if hasattr(predictions, "detach"):  # a torch tensor
        predictions = predictions.detach().cpu().numpy()
    arr = np.asarray(predictions)
    if arr.dtype == object:
        raise TypeError(
            "fit_predict returned an array of Python objects; return a numeric numpy array "
            "(or, for class labels, an array of the class values)"
        )
    return arr


def _versions() -> dict:
    info = {"python": sys.version.split()[0], "numpy": np.__version__, "platform": platform.platform()}
    torch = sys.modules.get("torch")
    if torch is not None:
        info["torch"] = str(torch.__version__)
        try:
            if torch.cuda.is_available():
                info["gpu"] = torch.cuda.get_device_name(0)
        except Exception:
            pass
    for name in ("sklearn", "transformers"):
        module = sys.modules.get(name)
        if module is not None:
            info[name] = str(getattr(module, "__version__", "?"))
    return info


def _wait_for_run() -> None:
    """Warm start (execution.sandbox.warm): import ahead, then wait for the go on stdin.

    ``VARBOARD_WARM`` is ``"<ack fd>"``; the first line of stdin is ``"imports <import>,..."``,
    each import a module or ``module:name`` (the recipe's ``from module import name``): never
    in the environment, where the run could read it back. One that fails is left for the
    recipe's own import, which fails the same way in its run. Whatever the go
    finds, the recipe then sees what a cold run sees: stdin on /dev/null, no ack pipe, no
    ``VARBOARD_WARM``. Anything but the go (the worker discarded this sandbox) ends it.
    """
    template = os.environ.pop("VARBOARD_TEMPLATE", "")
    if template:  # a template (execution.sandbox.zygote): returns in a forked run's process only
        import varboard_template

        varboard_template.serve(int(template))
        return
    setting = os.environ.pop("VARBOARD_WARM", "")
    if not setting:
        return
    ack = int(setting)
    line = sys.stdin.buffer.readline()
    if not line.startswith(b"imports "):
        os._exit(0)
    for entry in filter(None, line[len(b"imports ") :].decode("ascii", "replace").strip().split(",")):
        module, _, name = entry.partition(":")
        try:
            loaded = importlib.import_module(module)
            if name:
                getattr(loaded, name)
        except BaseException:
            pass
    os.write(ack, b"ready\n")
    if sys.stdin.buffer.readline() != b"go\n":
        os._exit(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.write(ack, b"started\n")
    os.close(ack)


def main() -> int:
    _wait_for_run()
    os.makedirs(OUT, exist_ok=True)
    try:
        with open(os.path.join("inputs", "spec.json")) as fh:
            spec = json.load(fh)
        train = _load("train.npz", True, spec)
        valid = _load("valid.npz", True, spec)
        test_inputs = _load("test_inputs.npz", False, spec)
    except Exception as exc:
        print(f"harness: cannot read its inputs: {exc!r}", file=sys.stderr)
        return 2

    try:
        module_spec = importlib.util.spec_from_file_location("recipe", "recipe.py")
        if module_spec is None or module_spec.loader is None:  # never for a .py path; a missing file fails below
            raise ImportError("recipe.py cannot be loaded")
        recipe = importlib.util.module_from_spec(module_spec)
        sys.modules["recipe"] = recipe
        module_spec.loader.exec_module(recipe)
        fit_predict = getattr(recipe, "fit_predict", None)
        if not callable(fit_predict):
            raise AttributeError("recipe.py does not define a function fit_predict")
    except BaseException as exc:
        return _fail(exc, "import", None)

    seeds, device = spec["seeds"], spec["device"]
    for t, hyperparameters in enumerate(spec["trials"]):
        seed_everything(seeds)
        start = time.perf_counter()
        try:
            predictions = fit_predict(train, valid, test_inputs, dict(hyperparameters), dict(seeds), device)
            arr = _as_array(predictions)
        except BaseException as exc:
            return _fail(exc, "fit_predict", t)
        duration = time.perf_counter() - start
        try:
            np.save(os.path.join(OUT, f"predictions_{t}.npy"), arr, allow_pickle=False)
            _write_json(f"trial_{t}.json", {"duration_s": duration})
        except BaseException as exc:
            return _fail(exc, "save", t)
        print(f"[varboard] trial {t + 1}/{len(spec['trials'])} done in {duration:.1f} s", file=sys.stderr, flush=True)
    _write_json("done.json", _versions())
    return 0


def _exit(status: int) -> None:
    """Exit at once, skipping the interpreter's teardown: with torch loaded that takes 2-3 s here,
    and nothing a run returns depends on it (the outputs are written and closed; the sandbox
    kills whatever the recipe left running)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(status)


if __name__ == "__main__":
    _exit(main())
