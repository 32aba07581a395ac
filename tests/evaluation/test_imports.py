"""Per-instance results produced elsewhere: the three formats and their alignment."""

import json

import numpy as np
import pytest

from evaluation.imports import (
    ResultsImportError,
    combine,
    read_csv_results,
    read_lm_eval_samples,
    read_results,
    read_solved_ids,
)


def test_generic_csv_with_correct_and_with_score():
    r = read_csv_results(b"model,instance_id,correct\nA,q1,1\nA,q2,0\nB,q1,true\nB,q2,yes\n")
    assert r.models == ("A", "B") and r.instances == ("q1", "q2") and r.binary and r.metric == "correct"
    np.testing.assert_array_equal(r.outcomes, [[1, 0], [1, 1]])
    s = read_csv_results(b"instance_id,model,score\nq1,A,0.25\nq2,A,1\n")
    assert not s.binary and s.metric == "score" and s.outcomes.tolist() == [[0.25, 1.0]]


def test_lm_evaluation_harness_samples():
    lines = [
        {"doc_id": i, "doc": {"question": "?"}, "target": "x", "acc": float(i % 2), "acc_norm": 1.0} for i in range(4)
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    r = read_lm_eval_samples(data, model="pythia-160m")
    assert r.metric == "acc" and r.instances == ("0", "1", "2", "3") and r.binary
    assert read_lm_eval_samples(data, model="m", metric="acc_norm").outcomes.tolist() == [[1.0] * 4]


def test_solved_ids_in_three_spellings():
    everything = ["a", "b", "c"]
    for data in (b'["a", "c"]', b'{"resolved": ["a", "c"]}', b"a\nc\n"):
        r = read_solved_ids(data, model="agent", instances=everything)
        assert r.outcomes.tolist() == [[1.0, 0.0, 1.0]] and r.binary


def test_combine_aligns_on_the_instances():
    a = read_csv_results(b"model,instance_id,correct\nA,2,1\nA,1,0\n")
    b = read_solved_ids(b'["1"]', model="B", instances=["1", "2"])
    both = combine([a, b], instances=["1", "2"])
    assert both.models == ("A", "B") and both.outcomes.tolist() == [[0, 1], [1, 0]]
    partial = read_csv_results(b"model,instance_id,correct\nC,1,1\n")
    assert combine([both, partial], on_missing="intersect").instances == ("1",)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: read_csv_results(b"model,instance\nA,1\n"), r"the header lacks instance_id, score or correct"),
        (
            lambda: read_csv_results(b"model,instance_id,correct\nA,1,maybe\n"),
            r"row 2: `correct` must be 0/1 or true/false",
        ),
        (lambda: read_csv_results(b"model,instance_id,score\nA,1,abc\n"), r"row 2: `score` must be a number"),
        (lambda: read_csv_results(b"model,instance_id,score\nA,1,inf\n"), r"row 2: `score` must be finite"),
        (lambda: read_csv_results(b"model,instance_id,score\nA,1,1\nA,1,2\n"), r"row 3: a second result of 'A' on '1'"),
        (lambda: read_csv_results(b"model,instance_id,score\nA,1\n"), r"row 2: 2 cells for 3 columns"),
        (lambda: read_csv_results(b"model,instance_id,score\n,1,2\n"), r"row 2: empty `model` or `instance_id`"),
        (lambda: read_csv_results(b"model,instance_id,score\n"), r"no result rows"),
        (lambda: read_csv_results(b""), r"the file is empty"),
        (lambda: read_csv_results(b"x" * 20, max_bytes=10), r"the limit is"),
        (lambda: read_lm_eval_samples(b"{bad", model="m"), r"line 1: not JSON"),
        (lambda: read_lm_eval_samples(b'{"acc": 1}', model="m"), r"line 1: a sample needs a `doc_id`"),
        (lambda: read_lm_eval_samples(b'{"doc_id": 1, "loss": 1}', model="m"), r"line 1: no metric among acc"),
        (
            lambda: read_lm_eval_samples(b'{"doc_id": 1, "acc": 1}', model="m", metric="f1"),
            r"line 1: no `f1` in this sample",
        ),
        (lambda: read_lm_eval_samples(b'{"doc_id": 1, "acc": "yes"}', model="m"), r"line 1: `acc` must be a number"),
        (
            lambda: read_lm_eval_samples(b'{"doc_id": 1, "acc": 1}\n{"doc_id": 1, "acc": 0}', model="m"),
            r"line 2: a second sample with doc_id 1",
        ),
        (lambda: read_lm_eval_samples(b"\n\n ", model="m"), r"the file is empty|no samples"),
        (lambda: read_solved_ids(b'{"other": 1}', model="m", instances=["a"]), r"expected a list of solved ids"),
        (lambda: read_solved_ids(b'["z"]', model="m", instances=["a"]), r"1 solved id\(s\) are not instances: 'z'"),
        (
            lambda: read_results(b"x", format="xml", filename="x"),
            r"`format` must be one of csv, lm-eval-jsonl, solved-ids",
        ),
        (lambda: read_results(b"x", format="lm-eval-jsonl", filename="x"), r"name the model these results belong to"),
        (
            lambda: read_results(b"x", format="solved-ids", filename="x", model="m"),
            r"solved ids need the list of every instance",
        ),
        (lambda: combine([]), r"nothing to import"),
        (lambda: combine([read_solved_ids(b"[]", model="m", instances=["a"])] * 2), r"model 'm' appears in two files"),
        (
            lambda: combine([read_solved_ids(b"[]", model="m", instances=["a"])], instances=["b"]),
            r"1 instance\(s\) are not in this challenge: 'a'",
        ),
        (
            lambda: combine([read_solved_ids(b"[]", model="m", instances=["a"])], instances=["a", "b"]),
            r"model 'm' has no result on 1 instance\(s\): 'b'",
        ),
        (
            lambda: combine(
                [
                    read_solved_ids(b"[]", model="m", instances=["a"]),
                    read_solved_ids(b"[]", model="n", instances=["b"]),
                ],
                on_missing="intersect",
            ),
            r"no instance has a result from every model",
        ),
    ],
)
def test_errors(call, match):
    with pytest.raises(ResultsImportError, match=match):
        call()


def test_a_score_past_what_stored_outcomes_hold_is_refused():
    """A host's review: a generic CSV with `score` 1e99 was imported; runs store outcomes as float32, so it became
    inf and the challenge's board answered "cannot be computed" for everyone. Refused, naming row and bound."""
    with pytest.raises(ResultsImportError, match=r"row 2: `score` must lie within ±1e\+18 \(got '1e99'\)"):
        read_csv_results(b"model,instance_id,score\nA,1,1e99\n")
    with pytest.raises(ResultsImportError, match=r"line 1: `loss` must lie within ±1e\+18"):
        read_lm_eval_samples(b'{"doc_id": 1, "loss": -1e40}', model="m", metric="loss")
    kept = read_csv_results(b"model,instance_id,score\nA,1,1e18\nA,2,-1e18\n")
    assert np.all(np.isfinite(kept.outcomes.astype(np.float32)))
