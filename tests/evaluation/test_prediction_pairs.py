"""Prediction boards that contradicted themselves (a statistician's findings, each reproduced here).

* a decided pair showed an interval of P(A>B) holding ½ (the interval mapped d's dual interval through the
  bootstrap distribution re-centred at d, whose share above d is not ½: 0.478 on the board below);
* an entry uploaded as three copies of one file was "significantly different" from that file (rounding);
* equal scores were ordered, ranked and chosen by the state of the art by rounding (0.7999999999999999);
* constant outcomes gave an interval that missed its estimate.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.report import EntryRuns, ReportSettings, build_report


def _entry(sid: int, name: str, outcomes: np.ndarray) -> EntryRuns:
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=np.float64))
    files = len(outcomes)
    return EntryRuns(sid, name, "t", "predictions", files, np.arange(files), outcomes.mean(axis=1), outcomes=outcomes)


def _welch_board() -> list[EntryRuns]:
    """Three files of 76 binary examples against one file (the statistician's search, draw 2080)."""
    rng = np.random.default_rng(3)
    for _ in range(2081):
        n, k = int(rng.integers(15, 80)), int(rng.choice([2, 3]))
        base = rng.random(n) < rng.uniform(0.4, 0.8)
        a = np.array([base ^ (rng.random(n) < rng.uniform(0, 0.3)) for _ in range(k)], dtype=float)
        b = (base ^ (rng.random(n) < rng.uniform(0, 0.3)))[None].astype(float)
    return [_entry(1, "A", a), _entry(2, "B", b)]


def _decided_iff_interval_excludes_half(pair: dict, alpha: float) -> bool:
    return (pair["low"] > 0.5 or pair["high"] < 0.5) == (pair["pvalue"] < alpha)


def test_a_pair_s_interval_of_p_holds_one_half_exactly_when_its_adjusted_p_value_is_not_below_alpha():
    entries = _welch_board()
    pairs = [
        build_report(entries, ReportSettings(n_resamples=2000, master_seed=seed))["sections"][0]["comparisons"][0]
        for seed in range(20)
    ]
    assert all(p["method"] == "welch-t" and 0.04 < p["pvalue"] < 0.05 for p in pairs)  # decided, barely
    assert all(_decided_iff_interval_excludes_half(p, 0.05) for p in pairs), [(p["low"], p["high"]) for p in pairs]
    assert all(p["low"] <= p["p"] <= p["high"] for p in pairs)


def test_on_random_prediction_boards_every_pair_s_interval_agrees_with_its_verdict():
    rng = np.random.default_rng(11)
    checked = 0
    for board in range(25):
        n, entries = int(rng.integers(20, 120)), []
        truth = rng.random(n) < 0.7
        for sid in range(1, int(rng.integers(2, 6)) + 1):
            files = int(rng.choice([1, 1, 2, 3, 5]))
            flips = rng.random((files, n)) < rng.uniform(0.02, 0.35)
            entries.append(_entry(sid, f"m{sid}", (truth ^ flips).astype(float)))
        report = build_report(entries, ReportSettings(n_resamples=400, master_seed=board))
        for pair in report["sections"][0]["comparisons"]:
            assert _decided_iff_interval_excludes_half(pair, 0.05), (board, pair)
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("gamma", [0.75, 0.6])
def test_one_file_uploaded_three_times_is_no_different_from_that_file(gamma):
    x = np.array([0.005, 0.007, 0.0, 0.005, 0.001, 0.002, 0.001, 0.006])  # a graded loss, one value per example
    x = np.tile(x, 63)  # 504 examples: one file shows a rank interval from 500 (predrule23)
    entries = [_entry(1, "A", x), _entry(2, "B", np.tile(x, (3, 1)))]
    report = build_report(entries, ReportSettings(n_resamples=1000, higher_is_better=False, gamma=gamma))
    pair = report["sections"][0]["comparisons"][0]
    assert pair["pvalue"] == 1.0 and pair["verdict"] == "not_significant"
    assert pair["p"] == pair["low"] == pair["high"] == 0.5
    assert [e["rank_display"] for e in report["entries"]] == ["=1", "=1"]
    intervals = {e["method_name"]: e["rank_interval"] for e in report["entries"]}
    assert intervals["B"] is None  # 3 files: no rank interval below 6 (stats20)
    assert (intervals["A"]["low"], intervals["A"]["high"]) == (1, 2)  # B, undecided, may lie on either side


@pytest.mark.parametrize("flip", [False, True])
def test_equal_scores_are_ordered_by_name_and_the_state_of_the_art_mirrors(flip):
    rng = np.random.default_rng(0)

    def files(correct, n=25):
        out = np.zeros((len(correct), n))
        for f, c in enumerate(correct):
            out[f, rng.permutation(n)[:c]] = 1
        return out

    a, b = files([19, 20, 21]), files([20])  # A's files average to 0.7999999999999999, B's one to 0.8
    boards = {}
    for loss in (False, True):
        entries = [_entry(2, "B", 1 - b if loss else b), _entry(1, "A", 1 - a if loss else a)]
        if flip:
            entries.reverse()
        boards[loss] = build_report(entries, ReportSettings(higher_is_better=not loss, n_resamples=2000))
    for report in boards.values():
        assert [e["method_name"] for e in report["entries"]] == ["A", "B"]  # a tie: by name, as documented
        assert [e["rank_display"] for e in report["entries"]] == ["=1", "=1"]
        assert [e["rank"] for e in report["entries"]] == [1, 1]
        assert report["entries"][0]["rank_interval"] is None  # A's 3 files: no rank interval below 6 (stats20)
        assert report["entries"][1]["rank_interval"] is None  # B's one file on 25 examples: none below 500 (predrule23)
    accuracy, loss = (boards[x]["sections"][0]["sota"] for x in (False, True))
    # tied, the state of the art takes the less certain entry (B's one file: the larger standard error), by no name
    assert accuracy["submission_id"] == loss["submission_id"] == 2
    assert accuracy["estimate"] == pytest.approx(1 - loss["estimate"], abs=1e-12)
    assert accuracy["bound"] == pytest.approx(1 - loss["bound"], abs=1e-12)


@pytest.mark.parametrize(("value", "n"), [(0.1, 25), (0.1, 7), (0.3, 10)])
def test_constant_outcomes_give_an_interval_holding_its_estimate(value, n):
    """25 outcomes of 0.1 showed 0.10000000000000002 in [0.10000000000000002, 0.1]."""
    outcomes = np.full((1, n), value)
    row = build_report([_entry(1, "c", outcomes)], ReportSettings(n_resamples=200, higher_is_better=False))
    mean = row["entries"][0]["mean"]
    assert mean["low"] <= mean["estimate"] <= mean["high"] and mean["high"] - mean["low"] < 1e-12


def test_competition_ranks_tie_values_equal_to_rounding_only():
    from evaluation.stats._resample import competition_rank

    values = np.array([0.8, 0.7999999999999999, 0.5, 0.5000001, np.inf, np.inf, -np.inf])
    assert competition_rank(values).tolist() == [3, 3, 6, 5, 1, 1, 7]
    columns = np.stack([values, values[::-1]], axis=1)
    assert competition_rank(columns)[:, 1].tolist() == competition_rank(values[::-1]).tolist()


def _search_board(rng):
    """A random prediction board as the statistician's search drew them (binary or graded outcomes, 1-3 files)."""
    k, n, binary, base = int(rng.integers(2, 7)), int(rng.integers(20, 150)), rng.random() < 0.6, rng.uniform(0.3, 0.9)
    entries = []
    for j in range(k):
        files, rate = int(rng.choice([1, 1, 1, 2, 3])), np.clip(base + rng.normal(0, 0.06), 0.02, 0.98)
        if binary:
            outcomes = (rng.random((files, n)) < rate).astype(float)
        else:
            outcomes = np.round(np.clip(rng.normal(rate, 0.3, (files, n)), 0, None) * 16) / 16
        entries.append(_entry(j + 1, f"p{j + 1}", outcomes))
    settings = ReportSettings(
        higher_is_better=bool(rng.random() < 0.5),
        n_resamples=int(rng.choice([200, 500, 1000])),
        master_seed=int(rng.integers(2**31)),
        correction=str(rng.choice(["holm", "bonferroni", "bh", "none"])),
    )
    return entries, settings


def test_a_pair_decided_just_below_alpha_on_few_resamples_has_an_interval_above_one_half():
    """Board 29 of the search (seed 7; Bonferroni, B = 200): decided at p = 0.0485, its interval was [0.5, 1]: no
    resample fell within the dual interval's low end (0.0003) of d, and G stayed at ½. d itself is one more
    value now (B + 1), so G(δ) > ½ for every δ > 0."""
    rng = np.random.default_rng(7)
    for _ in range(30):
        entries, settings = _search_board(rng)
    pairs = build_report(entries, settings)["sections"][0]["comparisons"]
    assert any(0.04 < p["pvalue"] < 0.05 for p in pairs)
    assert all(_decided_iff_interval_excludes_half(p, settings.alpha) for p in pairs)


def test_a_prediction_board_and_its_mirror_of_losses_give_every_pair_the_same_p():
    """Scored as 1 - outcomes with the direction flipped, P(A>B) moved by up to 0.075 (1,431 of 2,674 pairs):
    resamples landing on the threshold 2d were counted 0, ½ or 1 by rounding. Ties within 1e-12 now count ½."""
    rng = np.random.default_rng(3)
    pairs = 0
    for _ in range(30):
        entries, settings = _search_board(rng)
        mirrored = [
            _entry(e.id, e.name, 1 - e.outcomes)
            for e in entries  # type: ignore[operator]
        ]
        flipped = ReportSettings(
            higher_is_better=not settings.higher_is_better,
            n_resamples=settings.n_resamples,
            master_seed=settings.master_seed,
            correction=settings.correction,
        )
        base = build_report(entries, settings)["sections"][0]["comparisons"]
        mirror = {(p["a"], p["b"]): p for p in build_report(mirrored, flipped)["sections"][0]["comparisons"]}
        for p in base:
            q = mirror[p["a"], p["b"]]
            assert (q["p"], q["low"], q["high"], q["verdict"]) == pytest.approx(
                (p["p"], p["low"], p["high"], p["verdict"])
            )
            pairs += 1
    assert pairs > 100


def _verdicts(report: dict) -> list:
    """What a reader takes from a board: the order, ranks, letters, rank intervals, leader group, state of the
    art's entry, and each pair's P(A>B), interval and verdict."""
    section = report["sections"][0]
    rows = {e["submission_id"]: e for e in report["entries"]}
    shown = [
        (rows[s]["method_name"], rows[s]["rank_display"], rows[s]["groups"], rows[s]["rank_interval"])
        for s in section["entries"]
    ]
    pairs = [(p["a"], p["b"], p["p"], p["low"], p["high"], p["verdict"]) for p in section["comparisons"]]
    return [shown, pairs, section["leader_group"], section["sota"]["submission_id"]]


@pytest.mark.parametrize("unit", [1e-12, 1e-15, 1e6])
def test_a_loss_board_reads_the_same_in_every_unit(unit):
    """An MSE in small units (a statistician's finding): every outcome times 1e-12 turned B (clearly lower, adjusted
    p 6e-82) and A into a tie ranked by name, P(A>B) = ½ in [½, ½], A first and the state of the art; the tie rule
    had an absolute floor of 1e-12. Ties are relative only now (``_resample.TIE_RELATIVE``)."""
    rng = np.random.default_rng(0)
    base = np.abs(rng.normal(1.0, 0.5, 200))
    losses = {"A": base * 1.3 + np.abs(rng.normal(0, 0.05, 200)), "B": base * 0.8, "C": base * 0.8 + 1e-3}
    settings = ReportSettings(higher_is_better=False, n_resamples=1000)

    def board(scale):
        return build_report([_entry(i, n, scale * o) for i, (n, o) in enumerate(losses.items(), 1)], settings)

    reference, scaled = board(1.0), board(unit)
    assert _verdicts(scaled) == _verdicts(reference)
    assert [e["method_name"] for e in scaled["entries"]][0] == "B"
    scaled_pairs = scaled["sections"][0]["comparisons"]
    for mine, theirs in zip(scaled_pairs, reference["sections"][0]["comparisons"], strict=True):
        assert mine["pvalue"] == pytest.approx(theirs["pvalue"], rel=1e-9)


def test_equal_losses_in_small_units_still_tie_to_rounding():
    """The relative rule keeps the tie of rounding in any unit: 0.7999999999999999 and 0.8 times 1e-13."""
    from evaluation.report.ranking import same_value
    from evaluation.stats._resample import competition_rank

    for unit in (1.0, 1e-13, 1e8):
        a, b = unit * (19 + 20 + 21) / 75, unit * 0.8
        assert same_value(a, b) and competition_rank(np.array([a, b, 0.5 * unit])).tolist() == [1, 1, 3]
        assert not same_value(unit * 0.8, unit * 0.8 * (1 + 1e-9))
    assert competition_rank(np.array([np.inf, 0.8, -np.inf, 0.7999999999999999])).tolist() == [1, 2, 4, 2]


def test_the_state_of_the_art_of_a_half_integer_pooled_count_mirrors_for_an_error_rate():
    """Two files of 593 and 594 correct of 1,000: the binomial bound rounded the pooled 593.5 successes to 593 as an
    accuracy and to 594 as 1 - an error rate, bounds 0.5618 and 0.5628 (a statistician's finding)."""
    outcomes = np.zeros((2, 1000))
    outcomes[0, :593], outcomes[1, :594] = 1, 1
    sota = {}
    for loss in (False, True):
        board = [_entry(1, "m", 1 - outcomes if loss else outcomes)]
        settings = ReportSettings(higher_is_better=not loss, accuracy_like=True, n_resamples=200)
        sota[loss] = build_report(board, settings)["sections"][0]["sota"]
    assert sota[False]["bound"] == pytest.approx(1 - sota[True]["bound"], abs=1e-12)
    assert sota[False]["estimate"] == pytest.approx(1 - sota[True]["estimate"], abs=1e-12)


def _files_board(rng, n=200, k=4):
    truth = rng.random(n) < 0.7
    return [(truth ^ (rng.random((k, n)) < p)).astype(float) for p in (0.10, 0.11, 0.12, 0.13, 0.14)]


def _backends() -> list[tuple[str, str]]:
    """numpy, torch on the CPU, and torch on CUDA where a GPU is present (``benchmarks/gpu_check.sh``)."""
    try:
        import torch
    except ImportError:
        return [("numpy", "cpu"), ("torch", "cpu")]
    return [("numpy", "cpu"), ("torch", "cpu")] + ([("torch", "cuda")] if torch.cuda.is_available() else [])


@pytest.mark.parametrize(("backend", "device"), _backends())
def test_two_entries_of_the_same_files_get_the_same_rank_interval(backend, device):
    """Copies of an entry of four files were tied in rank and letters but got rank intervals [1, 5] and [1, 6] (a
    statistician's finding, about 1 board in 10): the entries' files were resampled side by side from one draw. The
    torch backend ("auto" on a CUDA server) draws each entry's files from a generator of its own too."""
    if backend == "torch":
        pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    settings = ReportSettings(n_resamples=500, backend=backend, device=device)
    for _ in range(15):
        files = _files_board(rng)
        board = [_entry(1, "A", files[0]), _entry(2, "A-copy", files[0].copy())]
        board += [_entry(3 + i, f"X{i}", f) for i, f in enumerate(files[1:])]
        shuffled = [board[i] for i in (3, 1, 5, 0, 4, 2)]
        reports = [build_report(b, settings) for b in (board, shuffled)]
        rows = {r["submission_id"]: r for r in reports[0]["entries"]}
        assert rows[1]["rank_interval"] == rows[2]["rank_interval"]
        assert reports[0]["sections"][0]["comparisons"] == reports[1]["sections"][0]["comparisons"]


def test_a_newcomer_of_several_files_moves_no_other_pair_s_p():
    """Without a correction, an entry of five files arriving moved P(A>B) of two other multi-file entries
    (0.2684 [0.0125, 0.8741] to 0.2765 [0.0127, 0.8691]): every entry's files were drawn from one joint stream."""
    rng = np.random.default_rng(1)
    files = _files_board(rng)
    board = [_entry(1, "A", files[0][:3]), _entry(2, "B", files[1][:2])]
    settings = ReportSettings(n_resamples=500, correction="none")

    def pair(entries):
        section = build_report(entries, settings)["sections"][0]
        return next((p["p"], p["low"], p["high"]) for p in section["comparisons"] if {p["a"], p["b"]} == {1, 2})

    alone = pair(board)
    for newcomer in (files[2][:1], files[2][:2], files[2]):
        assert pair([*board, _entry(3, "C", newcomer)]) == alone


@pytest.mark.parametrize("unit", [1.0, 1e6])
def test_means_that_cancel_to_rounding_differ_by_nothing(unit):
    """Signed errors centred on 0, B = A but for the last digit of one example (a reviewer's finding): the means
    2.2e-17 and 0 differed relative to themselves, so the pair was certain (p = 0) with P(A>B) = 1/2 in [1/2, 1/2].
    Rounding is judged against the outcomes' scale."""
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, 40)
    x -= x.mean()
    y = x.copy()
    y[36] = np.nextafter(y[36], -np.inf)
    for loss in (False, True):
        report = build_report(
            [_entry(1, "A", unit * x), _entry(2, "B", unit * y)], ReportSettings(higher_is_better=not loss)
        )
        pair = report["sections"][0]["comparisons"][0]
        assert pair["pvalue"] == 1.0 and pair["p"] == pair["low"] == pair["high"] == 0.5
        assert _decided_iff_interval_excludes_half(pair, 0.05)


def test_one_huge_shared_outcome_ties_no_real_difference():
    """One example every entry got wrong by a squared error of 1e12 (a reviewer's finding): the tie scale was the
    largest outcome (1e12 x 1e-12 = 1), 20 times the real difference of 0.05 at t = 100, and every pair read P = 1/2
    in [1/2, 1/2], not significant, beside ranks 1, 2, 3. The scale is the outcomes' mean magnitude."""
    rng = np.random.default_rng(0)
    base = rng.gamma(2.0, 0.5, 1000)
    losses = [base + rng.normal(0, 0.01, 1000), base + 0.05 + rng.normal(0, 0.01, 1000)]
    for outcomes in losses:
        outcomes[0] = 1e12
    report = build_report(
        [_entry(1, "A", losses[0]), _entry(2, "B", losses[1])], ReportSettings(higher_is_better=False)
    )
    (pair,) = report["sections"][0]["comparisons"]
    assert pair["verdict"] == "a_better" and pair["p"] == pair["low"] == 1.0
