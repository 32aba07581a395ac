"""Issue 21, "Row order": test rows are stored in one fixed shuffled order, inputs and labels alike."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaluation.datasets import shuffle_test_rows


def sorted_by_label(n: int = 200, k: int = 10):
    labels = np.repeat(np.arange(k), n // k).astype(str)
    ids = [f"t{i:04d}" for i in range(n)]
    inputs = pd.DataFrame({"id": ids, "x": np.arange(n)})
    hidden = pd.DataFrame({"id": ids, "label": labels})
    return inputs, hidden


def naive_positional_accuracy(labels: np.ndarray, k: int = 10) -> float:
    """The attacker's reader: row j of n is guessed as class floor(j k / n) (a label-sorted table)."""
    guess = (np.arange(len(labels)) * k // len(labels)).astype(str)
    return float(np.mean(guess == labels))


def test_inputs_and_labels_move_together_and_the_order_hides_the_labels():
    inputs, hidden = sorted_by_label()
    assert naive_positional_accuracy(hidden["label"].to_numpy()) == 1.0  # the attack works on the host's order
    shuffled_inputs, shuffled_hidden = shuffle_test_rows(inputs, hidden, seed=12345)
    assert (shuffled_inputs["id"].to_numpy() == shuffled_hidden["id"].to_numpy()).all()
    assert sorted(shuffled_inputs["id"]) == list(inputs["id"])  # the same rows, none lost or repeated
    # each row keeps its own features and label
    assert (shuffled_inputs["x"].to_numpy() == shuffled_inputs["id"].str[1:].astype(int).to_numpy()).all()
    label_of = dict(zip(hidden["id"], hidden["label"]))
    assert [label_of[i] for i in shuffled_hidden["id"]] == shuffled_hidden["label"].tolist()
    assert naive_positional_accuracy(shuffled_hidden["label"].to_numpy()) < 0.25  # chance is 0.1
    assert list(shuffled_inputs.index) == list(range(len(inputs)))


def test_the_order_is_fixed_by_the_seed():
    inputs, hidden = sorted_by_label()
    first, _ = shuffle_test_rows(inputs, hidden, seed=[7, 99])
    again, _ = shuffle_test_rows(inputs, hidden, seed=[7, 99])
    other, _ = shuffle_test_rows(inputs, hidden, seed=[7, 100])
    assert first["id"].tolist() == again["id"].tolist()
    assert first["id"].tolist() != other["id"].tolist()


def test_labels_that_do_not_match_the_inputs_are_refused():
    inputs, hidden = sorted_by_label()
    with pytest.raises(ValueError, match="hidden_labels has 199 rows for 200 test inputs"):
        shuffle_test_rows(inputs, hidden.iloc[:-1], seed=0)
