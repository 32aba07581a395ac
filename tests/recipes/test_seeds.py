import numpy as np
import pytest

from evaluation.seeds import SOURCES, seed_record


def test_record_has_one_seed_per_source_in_order():
    record = seed_record(7, 0, SOURCES)
    assert list(record) == list(SOURCES)
    assert all(isinstance(v, int) and 0 <= v < 2**31 for v in record.values())
    assert len(set(record.values())) == len(SOURCES)


def test_same_master_and_index_give_the_same_record_whatever_the_call_order():
    forward = [seed_record(11, i, SOURCES) for i in range(5)]
    backward = [seed_record(11, i, SOURCES) for i in reversed(range(5))][::-1]
    assert forward == backward
    assert seed_record(11, 3, SOURCES) == forward[3]


def test_record_matches_spawned_seed_sequence():
    # run i's sequence is SeedSequence(master).spawn(k)[i], whatever k > i
    child = np.random.SeedSequence(5).spawn(10)[4]
    expected = [int(c.generate_state(1, dtype=np.uint32)[0]) & 0x7FFFFFFF for c in child.spawn(len(SOURCES))]
    assert list(seed_record(5, 4, SOURCES).values()) == expected


def test_different_runs_differ_and_masters_differ():
    records = [seed_record(11, i, SOURCES) for i in range(20)]
    for source in SOURCES:
        assert len({r[source] for r in records}) == 20
    assert seed_record(1, 0, SOURCES) != seed_record(2, 0, SOURCES)


def test_sources_not_randomized_are_held_at_run_zero():
    fixed = seed_record(3, 0, ("split",))
    for i in range(1, 6):
        record = seed_record(3, i, ("split",))
        assert record["split"] != fixed["split"]
        assert {k: v for k, v in record.items() if k != "split"} == {k: v for k, v in fixed.items() if k != "split"}
    assert seed_record(3, 4, ()) == seed_record(3, 0, SOURCES)


@pytest.mark.parametrize(
    "randomize, message",
    [
        (("split", "colour", "mood"), "unknown source(s) 'colour', 'mood'"),
        ("split", "not the string 'split'"),
        ((1,), "must hold source names"),
        (5, "must be an iterable"),
    ],
)
def test_bad_randomize_is_rejected(randomize, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        seed_record(1, 0, randomize)


@pytest.mark.parametrize(
    "master, index, message",
    [
        (-1, 0, "`master_seed` must be a non-negative integer, got -1"),
        (1.5, 0, "`master_seed` must be a non-negative integer"),
        (True, 0, "`master_seed` must be a non-negative integer"),
        (1, -2, "`run_index` must be a non-negative integer, got -2"),
        (1, "3", "`run_index` must be a non-negative integer"),
    ],
)
def test_bad_seed_or_index_is_rejected(master, index, message):
    with pytest.raises(ValueError, match=message.replace("`", ".")):
        seed_record(master, index, SOURCES)
