"""Reading a training recipe's declarations without running it.

A recipe is one Python file defining ``fit_predict(train, valid, test_inputs,
hyperparameters, seeds, device)`` and, optionally, the literals ``HYPERPARAMETERS``,
``SEARCH_SPACE`` and ``NEEDS_GPU`` (docs/DESIGN.md §5). The platform reads them with
:mod:`ast`, so contestant code never runs outside the sandbox: the web process validates
an upload with :func:`inspect_recipe`, the worker routes and plans runs with it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from evaluation.hpo import validate_search_space

__all__ = ["PREDICTION_KINDS", "RecipeError", "RecipeInfo", "inspect_recipe"]

#: What a challenge's metric scores: class labels, class probabilities, or values.
PREDICTION_KINDS = ("label", "proba", "value")


@dataclass(frozen=True)
class RecipeInfo:
    """What a recipe declares, read without running it (see `inspect_recipe`)."""

    hyperparameters: dict
    search_space: dict | None
    needs_gpu: bool


class RecipeError(ValueError):
    """The recipe's source is unusable (syntax error, no fit_predict, bad declarations)."""


def inspect_recipe(source: str) -> RecipeInfo:
    """Check a recipe's source and read its declarations without executing it.

    ``HYPERPARAMETERS``, ``SEARCH_SPACE`` and ``NEEDS_GPU`` must be literals (they are
    read with `ast.literal_eval`), so the platform learns them without running
    contestant code outside the sandbox.

    Raises
    ------
    RecipeError
        On a syntax error, a missing top-level ``fit_predict`` taking six positional
        parameters, a non-literal declaration, or an invalid ``SEARCH_SPACE``.
    """
    if not isinstance(source, str) or not source.strip():
        raise RecipeError("the recipe is empty")
    try:
        tree = ast.parse(source, filename="recipe.py")
    except SyntaxError as exc:
        raise RecipeError(f"the recipe has a syntax error on line {exc.lineno}: {exc.msg}") from None
    fit = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "fit_predict"]
    if not fit:
        raise RecipeError(
            "the recipe must define a top-level function "
            "fit_predict(train, valid, test_inputs, hyperparameters, seeds, device)"
        )
    args = fit[-1].args
    n_positional = len(args.posonlyargs) + len(args.args)
    if isinstance(fit[-1], ast.AsyncFunctionDef) or (args.vararg is None and n_positional != 6):
        raise RecipeError(
            f"fit_predict must take 6 parameters (train, valid, test_inputs, hyperparameters, "
            f"seeds, device), it takes {n_positional}"
        )
    declared = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id in ("HYPERPARAMETERS", "SEARCH_SPACE", "NEEDS_GPU"):
                try:
                    declared[target.id] = ast.literal_eval(value)
                except ValueError:
                    raise RecipeError(
                        f"{target.id} (line {node.lineno}) must be a literal (a dict of plain "
                        "values written out), so it can be read without running the recipe"
                    ) from None
    hyperparameters = declared.get("HYPERPARAMETERS", {})
    if not isinstance(hyperparameters, dict) or not all(isinstance(k, str) for k in hyperparameters):
        raise RecipeError("HYPERPARAMETERS must be a dict with string keys")
    space = declared.get("SEARCH_SPACE")
    if space is not None:
        try:
            validate_search_space(space)
        except ValueError as exc:
            raise RecipeError(f"SEARCH_SPACE is invalid: {exc}") from None
    needs_gpu = declared.get("NEEDS_GPU", False)
    if not isinstance(needs_gpu, bool):
        raise RecipeError("NEEDS_GPU must be True or False")
    return RecipeInfo(hyperparameters=hyperparameters, search_space=space, needs_gpu=needs_gpu)
