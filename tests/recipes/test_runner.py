"""execute_recipe_run with the example recipes, plus its checks of recipes and predictions."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

from evaluation.recipes import RecipeError, inspect_recipe
from execution import runners
from execution.outputs import RecipeFault as _RecipeFault
from execution.outputs import check_predictions as _check_predictions
from execution.recipe_data import RecipeData
from execution.run import execute_recipe_run
from execution.sandbox import Limits, SandboxUnavailable

from .conftest import RECIPES, accuracy, needs_linux, plan, proba_accuracy, run_file
from .helpers import MASTER_SEED

# -- examples ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, minimum", [("logistic_regression", 0.93), ("torch_cnn_digits", 0.85), ("trivial", 0.05)]
)
@pytest.mark.usefixtures("no_leftovers")
@needs_linux
def test_example_recipe_succeeds_on_digits(digits, name, minimum):
    out = run_file(RECIPES / f"{name}.py", digits)
    assert out.status == "succeeded", out.error + "\n" + out.log
    assert out.error == "" and out.test_score >= minimum and out.valid_score >= minimum
    _, split = plan(digits, 0)
    assert out.outcomes.shape == (len(split.test),)
    assert out.test_score == pytest.approx(out.outcomes.mean())
    assert out.device == "cpu" and out.duration_s > 0 and out.max_rss_mb > 0
    assert {"python", "numpy", "torch", "platform", "cpu", "gpu"} <= set(out.fingerprint)


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
@needs_linux
def test_torch_mlp_is_reproducible_and_seeds_matter(digits):
    first = run_file(RECIPES / "torch_mlp.py", digits, run_index=0)
    again = run_file(RECIPES / "torch_mlp.py", digits, run_index=0)
    other = run_file(RECIPES / "torch_mlp.py", digits, run_index=1)
    for out in (first, again, other):
        assert out.status == "succeeded", out.error + "\n" + out.log
        assert out.test_score > 0.9
    assert (first.test_score, first.valid_score) == (again.test_score, again.valid_score)
    assert np.array_equal(first.outcomes, again.outcomes)
    assert plan(digits, 0)[1].split_id != plan(digits, 1)[1].split_id
    assert (first.test_score, first.valid_score) != (other.test_score, other.valid_score)
    assert "torch" in first.fingerprint and first.fingerprint["torch"].startswith("2.")


@pytest.mark.usefixtures("no_leftovers")
@needs_linux
def test_logistic_regression_is_reproducible_and_splits_differ(digits):
    a = run_file(RECIPES / "logistic_regression.py", digits, run_index=3)
    b = run_file(RECIPES / "logistic_regression.py", digits, run_index=3)
    c = run_file(RECIPES / "logistic_regression.py", digits, run_index=4)
    assert (a.test_score, a.valid_score) == (b.test_score, b.valid_score)
    assert np.array_equal(a.outcomes, b.outcomes)
    assert (a.test_score, a.valid_score) != (c.test_score, c.valid_score)


@pytest.mark.usefixtures("no_leftovers")
@needs_linux
def test_probabilities_are_accepted_for_proba_metrics(digits):
    out = run_file(RECIPES / "logistic_regression.py", digits, prediction_kind="proba", metric=proba_accuracy)
    assert out.status == "succeeded", out.error
    assert out.test_score > 0.93


@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
@needs_linux
def test_tiny_transformer_on_text(text_data):
    out = run_file(RECIPES / "tiny_transformer_text.py", text_data)
    assert out.status == "succeeded", out.error + "\n" + out.log
    assert out.test_score > 0.6  # three balanced classes: chance is 1/3
    assert "transformers" in out.fingerprint


@pytest.mark.usefixtures("no_leftovers")
@needs_linux
def test_hyperparameter_search_picks_the_best_trial(digits):
    hpo = {"mode": "search", "method": "random", "budget": 3}
    out = run_file(RECIPES / "logistic_regression.py", digits, run_index=1, hpo=hpo)
    assert out.status == "succeeded", out.error
    assert len(out.trials) == 3
    assert all(1e-3 <= t["hyperparameters"]["C"] <= 1e2 for t in out.trials)
    assert all(t["hyperparameters"]["max_iter"] == 200 for t in out.trials)  # defaults kept
    best = max(out.trials, key=lambda t: t["valid_score"])
    assert out.hyperparameters == best["hyperparameters"] and out.valid_score == best["valid_score"]
    again = run_file(RECIPES / "logistic_regression.py", digits, run_index=1, hpo=hpo)
    assert again.trials == out.trials and again.test_score == out.test_score


@pytest.mark.usefixtures("no_leftovers")
@needs_linux
def test_submission_hyperparameters_override_the_defaults(digits):
    out = run_file(RECIPES / "logistic_regression.py", digits, hyperparameters={"C": 0.01})
    assert out.status == "succeeded" and out.hyperparameters == {"C": 0.01, "max_iter": 200}
    assert out.trials == []


def test_search_without_a_search_space_fails_the_run(digits):
    out = run_file(RECIPES / "trivial.py", digits, hpo={"mode": "search", "method": "random", "budget": 2})
    assert out.status == "failed" and out.error == (
        "this challenge searches hyperparameters, but recipe.py declares no SEARCH_SPACE"
    )
    assert out.sandbox_status == "not_run"


@pytest.mark.usefixtures("no_leftovers")
@needs_linux
def test_hidden_test_labels_never_enter_the_workdir(monkeypatch):
    """Regression targets that are unique per row: no test row's value may appear in any file."""
    n = 200
    y = np.arange(n) * 1.000123 + 0.5771
    data = RecipeData(
        X=np.random.default_rng(0).normal(size=(n, 3)),
        y=y,
        ids=np.arange(n).astype(str),
        feature_names=["a", "b", "c"],
        classes=[],
        task="regression",
    )
    seeds, split = plan(data, 0)
    seen = {}

    def spy(argv, *, workdir, **kwargs):
        seen["workdir"] = workdir
        blobs = []
        for dirpath, _, files in os.walk(workdir):
            for name in files:
                with open(os.path.join(dirpath, name), "rb") as fh:
                    blobs.append((name, fh.read()))
        seen["blobs"] = blobs
        with np.load(os.path.join(workdir, "inputs", "test_inputs.npz")) as test_inputs:
            seen["keys"] = sorted(test_inputs.files)
        return real(argv, workdir=workdir, **kwargs)

    real = runners.run_sandboxed
    monkeypatch.setattr(runners, "run_sandboxed", spy)
    out = execute_recipe_run(
        recipe_source=(RECIPES / "trivial.py").read_text(),
        data=data,
        split=split,
        seeds=seeds,
        metric=lambda t, p: (-float(np.mean((t - p) ** 2)), None),
        prediction_kind="value",
        limits=Limits(wall_time_s=60),
    )
    assert out.status == "succeeded", out.error
    assert seen["keys"] == ["X", "classes", "feature_names", "ids"]
    for value in y[split.test]:
        needle = np.float64(value).tobytes()
        assert not any(needle in blob for _, blob in seen["blobs"]), value
    assert any(np.float64(y[split.train[0]]).tobytes() in blob for _, blob in seen["blobs"])
    assert not os.path.exists(seen["workdir"])  # removed after the run


def test_workdir_is_removed_even_when_the_sandbox_fails(monkeypatch, tmp_path, digits):
    def broken(argv, *, workdir, **kwargs):
        raise SandboxUnavailable("no sandbox today")

    monkeypatch.setattr(runners, "run_sandboxed", broken)
    with pytest.raises(SandboxUnavailable, match="no sandbox today"):
        run_file(RECIPES / "trivial.py", digits, runner=runners.LocalRunner(workdir_root=str(tmp_path)))
    assert os.listdir(tmp_path) == []


# -- argument checks ---------------------------------------------------------------------------


def test_bad_arguments_raise(digits):
    seeds, split = plan(digits, 0)
    base = dict(
        recipe_source="def fit_predict(a, b, c, d, e, f): pass",
        data=digits,
        split=split,
        seeds=seeds,
        metric=accuracy,
        prediction_kind="label",
    )
    with pytest.raises(ValueError, match="`prediction_kind` must be one of label, proba, value"):
        execute_recipe_run(**{**base, "prediction_kind": "rank"})
    with pytest.raises(ValueError, match="`seeds` lacks the source.s. hpo"):
        execute_recipe_run(**{**base, "seeds": {k: v for k, v in seeds.items() if k != "hpo"}})
    with pytest.raises(ValueError, match="`hpo\\['budget'\\]` must be a positive integer"):
        execute_recipe_run(**{**base, "hpo": {"mode": "search", "budget": 0}})
    with pytest.raises(ValueError, match="`hpo\\['mode'\\]` must be 'fixed' or 'search'"):
        execute_recipe_run(**{**base, "hpo": {"mode": "grid"}})
    with pytest.raises(ValueError, match="`metric` must be callable"):
        execute_recipe_run(**{**base, "metric": None})


def test_recipe_data_validation():
    with pytest.raises(ValueError, match="one entry per row of X"):
        RecipeData(X=np.zeros((3, 2)), y=np.zeros(2), ids=np.arange(3), feature_names=["a", "b"], classes=[0, 1])
    with pytest.raises(ValueError, match="not in `classes`"):
        RecipeData(
            X=np.zeros((3, 2)), y=np.array([0, 1, 2]), ids=np.arange(3), feature_names=["a", "b"], classes=[0, 1]
        )
    with pytest.raises(ValueError, match="at least 2 classes"):
        RecipeData(X=np.zeros((3, 2)), y=np.zeros(3), ids=np.arange(3), feature_names=["a", "b"], classes=[0])


# -- inspect_recipe ----------------------------------------------------------------------------


GOOD = """
HYPERPARAMETERS = {"lr": 0.1, "layers": [2, 3]}
SEARCH_SPACE = {"lr": {"type": "loguniform", "low": 1e-3, "high": 1.0}}
NEEDS_GPU = False

def fit_predict(train, valid, test_inputs, hyperparameters, seeds, device):
    return None
"""


def test_inspect_recipe_reads_declarations_without_running():
    info = inspect_recipe(GOOD + "\nraise SystemExit('never executed')\n")
    assert info.hyperparameters == {"lr": 0.1, "layers": [2, 3]}
    assert info.search_space["lr"]["type"] == "loguniform" and info.needs_gpu is False


@pytest.mark.parametrize(
    "source, message",
    [
        ("", "the recipe is empty"),
        ("def fit_predict(:\n", "the recipe has a syntax error on line 1"),
        ("x = 1\n", "must define a top-level function fit_predict"),
        ("def fit_predict(train, test):\n    pass\n", "fit_predict must take 6 parameters .* it takes 2"),
        (GOOD.replace('{"lr": 0.1, "layers": [2, 3]}', "dict(lr=0.1)"), "HYPERPARAMETERS .line 2. must be a literal"),
        (GOOD.replace('"loguniform"', '"gaussian"'), "SEARCH_SPACE is invalid: .* unknown type 'gaussian'"),
        (GOOD.replace("NEEDS_GPU = False", "NEEDS_GPU = 'yes'"), "NEEDS_GPU must be True or False"),
    ],
)
def test_inspect_recipe_errors(source, message):
    with pytest.raises(RecipeError, match=message):
        inspect_recipe(source)


def test_a_syntax_error_fails_the_run_without_starting_the_sandbox(digits):
    out = run_file_source("def fit_predict(:\n", digits)
    assert out.status == "failed" and out.error.startswith("the recipe has a syntax error on line 1")


def run_file_source(source, data):
    seeds, split = plan(data, 0)
    return execute_recipe_run(
        recipe_source=source, data=data, split=split, seeds=seeds, metric=accuracy, prediction_kind="label"
    )


# -- prediction checks ---------------------------------------------------------------------------

INTS = np.arange(3)
WORDS = np.array(["cat", "dog", "eel"])


@pytest.mark.parametrize(
    "arr, kind, classes, message",
    [
        (np.zeros(5), "label", INTS, "returned 5 predictions for 4 rows of test_inputs"),
        (np.float64(1.0), "label", INTS, "returned a single value"),
        (np.array([0, 1, 7, 9]), "label", INTS, "returned 2 labels that are not among the classes .e.g. 7"),
        (np.array([0.0, np.nan, 1, np.nan]), "label", INTS, "returned NaN in 2 predictions"),
        (np.array([0.0, np.inf, 1, 2]), "value", np.zeros(0), "returned infinite values in 1 prediction"),
        # finite, but its squared error is inf: the run stored an infinite score and every report failed on it
        (np.array([0.0, 1, -1e200, 2]), "value", np.zeros(0), r"values beyond ±1e\+18 in 1 prediction .row 2 of"),
        (np.array([0, 1, 2, 1]), "label", WORDS, "returned int64 predictions, but the classes are strings"),
        (np.array(["cat", "dog", "cow", "eel"]), "label", WORDS, "1 label that is not among the classes .e.g. 'cow'"),
        (np.ones((4, 2)) / 2, "proba", INTS, "shape .4, 2.; this challenge needs probabilities of shape .4, 3."),
        (np.full((4, 3), 0.5), "proba", INTS, "do not sum to 1 in 4 rows .row 0 of test_inputs sums to 1.5."),
        (np.array([[1.5, -0.5, 0]] * 4), "proba", INTS, "probabilities outside .0, 1. .row 0"),
        (np.ones((4, 2)), "value", np.zeros(0), "shape .4, 2.; this challenge needs one value per row"),
        (np.array(["a", "b", "c", "d"]), "value", np.zeros(0), "dtype <U1; they must be numbers"),
    ],
)
def test_bad_predictions_are_named(arr, kind, classes, message):
    with pytest.raises(_RecipeFault, match=message):
        _check_predictions(arr, 4, kind, classes)


def test_good_predictions_are_normalized():
    assert _check_predictions(np.array([0.0, 1, 2, 1]), 4, "label", INTS).dtype.kind == "i"
    assert _check_predictions(np.array([[1.0], [2], [3], [4]]), 4, "value", np.zeros(0)).shape == (4,)
    assert _check_predictions(WORDS[[0, 1, 2, 0]], 4, "label", WORDS).tolist() == ["cat", "dog", "eel", "cat"]
    p = np.full((4, 3), 1 / 3, dtype=np.float32)
    assert _check_predictions(p, 4, "proba", INTS).dtype == np.float64


@pytest.mark.usefixtures("no_leftovers")
@needs_linux
def test_the_documented_example_recipe_works(digits):
    text = (RECIPES.parents[1] / "docs" / "recipes.md").read_text()
    source = text.split("## Example", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    info = inspect_recipe(source)
    assert info.search_space and info.hyperparameters["epochs"] == 15
    out = run_file_source(source, digits)
    assert out.status == "succeeded", out.error + out.log
    assert out.test_score > 0.9


# -- what the recipe sees of the run's resample --------------------------------------------------


def _hidden_rows(data):
    rows = np.random.default_rng(MASTER_SEED).permutation(len(data.y))
    return np.sort(rows[int(len(data.y) * 0.7) :])  # the rows `plan` keeps hidden


def test_a_recipe_predicts_every_hidden_row_once_whatever_the_resample_drew():
    """Found by an attacker: each run's test inputs were its bootstrap resample of the hidden rows, repeated rows
    repeated. The draws, within classes, come from the published split seed: a recipe that logged how often it saw
    each row, matched across the k runs against the replayed draws, read every hidden label and each row's board
    (360 of 360 at k = 10, through the API alone). The recipe now predicts every hidden row once in every run; the
    resample is scored from those predictions."""
    from execution.workspace import build_inputs

    n = 300
    data = RecipeData(
        X=np.arange(n, dtype=float)[:, None],  # a row's only feature is its own index
        y=np.arange(n) % 3,
        ids=np.arange(n).astype(str),
        feature_names=["row"],
        classes=[0, 1, 2],
    )
    hidden = _hidden_rows(data)

    def build(split, seeds, test_rows):
        return build_inputs(
            recipe_source="",
            data=data,
            split=split,
            trials=[{}],
            seeds=seeds,
            device="cpu",
            prediction_kind="label",
            test_rows=test_rows,
        )

    for run in range(3):
        seeds, split = plan(data, run)
        assert np.unique(split.test, return_counts=True)[1].max() > 1  # the resample repeats rows
        inputs = build(split, seeds, hidden)
        with np.load(io.BytesIO(inputs.files["inputs/test_inputs.npz"])) as test_inputs:
            seen = test_inputs["X"][:, 0].astype(int)
        assert sorted(seen[~np.isin(seen, split.valid)]) == hidden.tolist()  # each hidden row, once
        stacked = np.empty(inputs.n_rows, dtype=int)
        stacked[inputs.order] = seen  # predictions come back in this order: the resample's rows are found again
        assert stacked[inputs.n_valid :][inputs.test_index].tolist() == split.test.tolist()
    with pytest.raises(ValueError, match="every row of `split.test`"):
        build(split, seeds, np.setdiff1d(hidden, split.test[:1]))


@pytest.mark.usefixtures("no_leftovers")
@needs_linux
def test_the_resample_scores_the_same_from_every_hidden_row_predicted_once(digits):
    """The run's test score and per-example outcomes are those of its resample (repeated rows counted as often as
    drawn), whether the recipe predicted the resample's distinct rows or every hidden row."""
    drawn = run_file(RECIPES / "logistic_regression.py", digits)
    every = run_file(RECIPES / "logistic_regression.py", digits, test_rows=_hidden_rows(digits))
    assert drawn.status == every.status == "succeeded", every.error
    _, split = plan(digits, 0)
    assert every.outcomes.shape == (len(split.test),)
    assert every.test_score == drawn.test_score and np.array_equal(every.outcomes, drawn.outcomes)
