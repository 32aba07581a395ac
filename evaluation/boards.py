"""Public and private boards: which hidden rows each board scores on, and feedback that resists mining.

Pure numpy, no Django. A challenge's hidden test rows are cut once, from its master seed and
stratified by class, into a *public* part (the public board) and a *private* part (the private
board, hidden until the hosts reveal it), as Kaggle does. Recipe runs resample their test rows
from each part separately (:func:`split_with_parts`), so every run has a public and a private
score. What the public board shows can be coarsened (:func:`round_floats`, :func:`ladder`) so
that repeated submissions reveal little about the labels of the public rows.

References
----------
A. Blum & M. Hardt (2015), "The Ladder: A Reliable Leaderboard for Machine Learning
Competitions", ICML, Algorithm 1.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np

from evaluation.report.comparisons import table_pairs
from evaluation.report.entries import EntryRuns
from evaluation.report.ranking import inversion_reason
from evaluation.report.settings import ROUNDED_PREDICTIONS_LABEL
from evaluation.splits import Split, out_of_bootstrap_split, public_split_id
from evaluation.stats.groups import compact_letters, split_letters
from evaluation.stats.sparse import DENSE_LETTERS, order_from_verdicts

__all__ = [
    "ladder",
    "ladder_anchor",
    "pack_mask",
    "public_part",
    "publish_rounded",
    "publish_shown_sota",
    "round_floats",
    "rounded_predictions_reason",
    "rounded_tie_reason",
    "shown_entries",
    "shown_run_scores",
    "shown_score",
    "shown_submission_score",
    "split_with_parts",
    "unpack_mask",
]

#: Mixed into the master seed so the partition's stream differs from every run's seeds.
_PARTITION_KEY = 0x0B0A2D


def public_part(n_rows: int, fraction: float, seed, *, stratify=None) -> np.ndarray:
    """Which of ``n_rows`` hidden rows are on the public board.

    Parameters
    ----------
    n_rows : int
        Hidden test rows, in test order.
    fraction : float
        Public fraction, ``0 < fraction <= 1``; 1 puts every row on the public board.
    seed : int or sequence of int
        The challenge's master seed (with a secret salt, when the seed is public).
    stratify : array_like, shape (n_rows,), optional
        Class labels: each class is cut with the same fraction (round half up, at least one
        public row per class when the fraction allows).

    Returns
    -------
    ndarray of bool, shape (n_rows,)
        True for public rows. With ``fraction < 1`` and at least 2 rows, both parts are non-empty.

    Examples
    --------
    >>> m = public_part(10, 0.3, seed=1)
    >>> int(m.sum()), m.dtype.name
    (3, 'bool')
    """
    if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or n_rows < 1:
        raise ValueError(f"`n_rows` must be a positive integer, got {n_rows!r}")
    if not 0.0 < float(fraction) <= 1.0:
        raise ValueError(f"`fraction` must be greater than 0 and at most 1, got {fraction!r}")
    mask = np.ones(n_rows, dtype=bool)
    if fraction >= 1.0 or n_rows < 2:
        return mask
    keys = [int(k) for k in np.atleast_1d(np.asarray(seed, dtype=object))]
    rng = np.random.default_rng([*keys, _PARTITION_KEY])
    groups = [np.arange(n_rows)] if stratify is None else _groups(np.asarray(stratify), n_rows)
    mask[:] = False
    for rows in groups:
        take = int(math.floor(fraction * len(rows) + 0.5))
        mask[rng.permutation(rows)[:take]] = True
    if not mask.any():
        mask[rng.integers(0, n_rows)] = True
    if mask.all():
        mask[rng.choice(np.flatnonzero(mask))] = False
    return mask


def _groups(labels: np.ndarray, n_rows: int) -> list[np.ndarray]:
    if labels.shape != (n_rows,):
        raise ValueError(f"`stratify` must hold one label per row ({n_rows}), got shape {labels.shape}")
    return [np.flatnonzero(labels == value) for value in np.unique(labels)]


def pack_mask(mask: np.ndarray) -> bytes:
    """A boolean mask as bytes (``numpy.packbits``)."""
    return np.packbits(np.asarray(mask, dtype=bool)).tobytes()


def unpack_mask(data: bytes | None, n_rows: int) -> np.ndarray:
    """The mask stored by :func:`pack_mask`; ``None`` means every row (no private part)."""
    if data is None:
        return np.ones(n_rows, dtype=bool)
    return np.unpackbits(np.frombuffer(bytes(data), dtype=np.uint8), count=n_rows).astype(bool)


def split_with_parts(public_idx, hidden_parts: Sequence, seed: int, *, stratify=None) -> Split:
    """An out-of-bootstrap split whose test rows are resampled from each hidden part separately.

    Train and validation rows are those of
    :func:`evaluation.splits.out_of_bootstrap_split` with the same seed (identical for every
    part); part j's test rows are a bootstrap resample of part j (within classes when
    ``stratify`` is given) drawn from ``SeedSequence([seed, j])``. With one part this is exactly
    ``out_of_bootstrap_split(public_idx, hidden_parts[0], seed)``.

    Returns
    -------
    Split
        ``test`` holds every part's resample, sorted; a row's part is found with ``numpy.isin``.
    """
    parts = [np.asarray(part, dtype=np.int64) for part in hidden_parts if len(part)]
    if not parts:
        raise ValueError("`hidden_parts` must hold at least one non-empty part")
    base = out_of_bootstrap_split(public_idx, parts[0], seed, stratify=stratify)
    if len(parts) == 1:
        return base
    labels = None if stratify is None else np.asarray(stratify)
    tests = [base.test]
    for j, part in enumerate(parts[1:], start=1):
        rng = np.random.default_rng([int(seed), j])
        tests.append(np.sort(_resample(part, rng, labels)))
    test = np.sort(np.concatenate(tests))
    test.setflags(write=False)
    split_id = public_split_id("oob", b"out_of_bootstrap/parts", base.train, base.valid)  # never the test rows
    return Split(base.train, base.valid, test, split_id=split_id, scheme=base.scheme)


def _resample(rows: np.ndarray, rng: np.random.Generator, labels) -> np.ndarray:
    if labels is None:
        return rows[rng.integers(0, len(rows), size=len(rows))]
    out = []
    for value in np.unique(labels[rows]):
        members = rows[labels[rows] == value]
        out.append(members[rng.integers(0, len(members), size=len(members))])
    return np.concatenate(out)


def ladder(
    scores: Sequence[float], margin: float, *, higher_is_better: bool = True, anchor: float = 0.0
) -> list[float | None]:
    """The Ladder's released score after each submission of one team, in submission order.

    Parameters
    ----------
    scores : sequence of float or None
        The exact score of each submission (None: not scored; the release is unchanged).
    margin : float
        η > 0, in the metric's units; ``math.inf`` releases the first scored submission alone, as it is (a metric one
        row moves without bound, :func:`evaluation.row_moves.largest_row_move`: no grid of η to round it to).
    higher_is_better : bool
    anchor : float
        A point of the release grid ``anchor + k·η``: the metric's best possible score where it has one
        (:func:`ladder_anchor`), so that a board and its mirror (accuracy and error rate) release mirrored
        scores at any η; 0 (the multiples of η) otherwise.

    Returns
    -------
    list of float or None
        ``R_t``: ``[s_t]_η`` (rounded to a multiple of η) when ``s_t`` beats ``R_{t-1}`` by
        more than η, else ``R_{t-1}`` (None before the first scored submission).

    Notes
    -----
    Blum & Hardt (2015), Algorithm 1 (the Ladder), written for a score: a contestant learns
    only whether a submission improved on its best by more than η, so adaptive probing of
    single labels (each moving the score by at most :func:`evaluation.row_moves.largest_row_move`, 1/n for an
    accuracy; the board's η is at least that, ``services.boards.ladder_margin``) releases little until it adds up to η.
    (The best release is rounded to the grid of η: a file scoring up to η/2 better than its release gains that much
    more, see docs/integrity.md.)

    Examples
    --------
    >>> ladder([0.5, 0.505, 0.53, None, 0.52], 0.01)
    [0.5, 0.5, 0.53, 0.53, 0.53]
    >>> ladder([None, 2.5, 0.1], math.inf, higher_is_better=False)
    [None, 2.5, 2.5]
    """
    if not margin > 0:
        raise ValueError(f"`margin` must be positive, got {margin!r}")
    sign = 1.0 if higher_is_better else -1.0
    best: float | None = None
    out: list[float | None] = []
    for score in scores:
        # The gain in units of the margin, to 9 decimals: in floating point a one-row gain of exactly the margin
        # (0.04 - 0.03 = 0.010000000000000002 > 0.01) was released (80 of 99 one-row gains at n = 100, eta = 1/n).
        if (
            score is not None
            and math.isfinite(score)
            and (best is None or round(sign * (score - best) / margin, 9) > 1)
        ):
            best = score if math.isinf(margin) else _released(score, margin, sign, anchor)
        out.append(best)
    return out


def ladder_anchor(score_range: tuple[float | None, float | None], *, higher_is_better: bool) -> float:
    """Where the Ladder's grid of multiples of η starts: the metric's best possible score (1 for an accuracy, 0 for
    an error rate or a loss), else 0.

    Anchored at 0, the grid mirrored under ``x -> 1 - x`` only when η divides 1: at η = 0.03 accuracies 0.50 and 0.51
    were both released as 0.51 (one rank) while their error rates 0.50 and 0.49 were released as 0.51 and 0.48 (two
    ranks; a property hunt's finding). The best score is a point both orientations share (an accuracy of 1 is an
    error of 0), so the two grids are mirrors at every η; where η divides the range, the grid is the one of before.
    """
    best = score_range[1] if higher_is_better else score_range[0]
    return 0.0 if best is None or not math.isfinite(best) else float(best)


def _released(score: float, margin: float, sign: float, anchor: float = 0.0) -> float:
    """``[score]_η``, the point ``anchor + k·η`` nearest ``score``, a score half-way between two going to the worse one.

    Blum & Hardt (2015) round to the nearest multiple and leave ties open. Python's ``round`` sends them to the
    even multiple, after the quotient's floating-point noise: an accuracy of 0.925 at η = 0.05 was released as
    0.90 while its error, 0.075, was released as 0.05 (accuracy 0.95); 0.425 at η = 0.01 as 0.42 and its error
    0.575 as 0.57 (0.43). A tie, the quotient to 9 decimals (as the gain), now goes to the worse multiple in the
    board's orientation, so a loss board and its accuracy mirror release mirrored scores, and a half-way score is
    never credited the better step.
    """
    quotient = round(sign * (score - anchor) / margin, 9)
    return round(anchor + sign * math.ceil(quotient - 0.5) * margin, 12) + 0.0  # + 0.0: never -0.0


#: Decimals of ``value * 10**digits`` kept before a rounded board decides whether a value is half-way: past the
#: binary representation's noise (0.425 is stored as 0.42499999999999998890), below any difference a score carries.
HALF_WAY_DECIMALS = 9


def shown_score(value: float, digits: int) -> float:
    """``value`` as a rounded board publishes it: the nearest multiple of ``10**-digits``, half-way to the even one.

    The one rule for every number a board under ``rounded`` feedback shows (each run's score, a submission's,
    every figure of the report, the API's and the pages'). Whether a value is half-way is read from
    ``value * 10**digits`` to :data:`HALF_WAY_DECIMALS` decimals, not from the binary value: Python's ``round``
    sent 0.425 (0.42499999...) to 0.42 and its mirror 0.575 (0.57499999...) to 0.57, so a loss board and its
    accuracy mirror published different ties and orders (24 of 400 boards of scores on a decimal grid, found by a
    property hunt). Round half to even (IEEE 754's default) is symmetric under ``x -> -x`` and, for ``digits >= 1``,
    under ``x -> 1 - x``: a lower-is-better board publishes its mirror's numbers. (The Ladder's release,
    :func:`_released`, rounds to multiples of an arbitrary η instead, half-way to the worse one.) Not finite values
    pass through; so do magnitudes whose ``value * 10**digits`` holds no fraction in a float (2^52 and up).

    >>> shown_score(0.425, 2), shown_score(0.575, 2), shown_score(0.435, 2), shown_score(0.8151, 2)
    (0.42, 0.58, 0.44, 0.82)
    """
    scale = 10.0**digits
    scaled = value * scale
    if not math.isfinite(scaled) or abs(scaled) >= 2.0**52:
        return value
    # numpy's ``round(x, 9)`` and ``rint`` written out: the same floating-point operations as shown_run_scores
    cleaning = 10.0**HALF_WAY_DECIMALS
    cleaned = round(scaled * cleaning) / cleaning  # Python's round of a float: the nearest integer, half to even
    return round(cleaned) / scale + 0.0


def round_floats(value, digits: int):
    """``value`` (JSON-like: dicts, lists, numbers) with every float rounded to ``digits`` decimals (:func:`shown_score`)."""
    if isinstance(value, float):
        return shown_score(value, digits) if math.isfinite(value) else value
    if isinstance(value, dict):
        return {key: round_floats(item, digits) for key, item in value.items()}
    if isinstance(value, list):
        return [round_floats(item, digits) for item in value]
    return value


def shown_run_scores(values: np.ndarray, digits: int) -> np.ndarray:
    """Each value as a rounded board shows it (:func:`shown_score`, at once for an array), NaN and ±inf kept.

    The quotient by ``10**digits`` is the correctly rounded float of the shown decimal, the value Python's
    ``round(value, digits)`` returns for it.
    """
    values = np.asarray(values, dtype=np.float64)
    scale = 10.0**digits
    scaled = values * scale
    exact = np.isfinite(scaled) & (np.abs(scaled) < 2.0**52)
    steps = np.rint(np.round(np.where(exact, scaled, 0.0), HALF_WAY_DECIMALS))  # rint: half to even
    return np.where(exact, steps / scale, values) + 0.0  # + 0.0: never -0.0


def shown_entries(entries: Sequence[EntryRuns], digits: int) -> list[EntryRuns]:
    """The entries a board under ``rounded`` feedback is computed from: what it shows, nothing finer.

    Each run's test score (and secondary metric scores) rounded to ``digits``, as the board publishes
    them, and no per-example outcomes (a prediction file's, or a secondary metric's): every
    interval, P(A>B), Boo_n, group and rank interval is then a function of the shown per-run
    scores, so a one-row change that leaves every shown score as it was moves no published number.
    Computed from the exact scores and rounded afterwards, one such change moved a Boo_n limit
    0.80 -> 0.81 and P(A>B) 0.6 -> 0.7 (a two-worlds crawl, docs/integrity.md). Validation scores
    (the recipe's own split of the training data: no hidden row) stay exact.
    """
    out = []
    for e in entries:
        secondary = None
        if e.secondary is not None:
            secondary = {name: (shown_run_scores(scores, digits), None) for name, (scores, _) in e.secondary.items()}
        out.append(dataclasses.replace(e, test=shown_run_scores(e.test, digits), outcomes=None, secondary=secondary))
    return out


def shown_submission_score(
    run_scores: Sequence[float | None], feedback: str, digits: int, pool: Callable | None = None
) -> float | None:
    """A submission's score as published: under ``rounded``, the mean of its runs' shown (rounded) scores, rounded.

    Parameters
    ----------
    run_scores : sequence of float or None
        The exact score of each run on the board read (None: not scored, left out).
    feedback : str
        ``"exact"`` or ``"rounded"``; ``"ladder"`` publishes a release per submission instead
        (:func:`ladder`), so it returns None here.
    digits : int
        Decimals shown under ``"rounded"``.
    pool : callable, optional
        How the exact scores combine (a prediction entry's files: :meth:`evaluation.metrics.Metric.pool_files`,
        as the board pools them); default their mean. Under ``"rounded"`` the board pools the shown scores.

    Returns
    -------
    float or None
        The same number the published report shows for the entry: the board under ``rounded``
        feedback is computed from the runs' shown scores (:func:`shown_entries`), so its mean is
        ``shown_score(mean(shown_score(run, digits)), digits)``; the mean of the shown runs is rounded again,
        never published with a further digit. Under ``exact``, the mean (or pooled score) to 15 significant
        digits (:func:`float_precision`): the runs' mean without the last bit of summation noise.

    Examples
    --------
    >>> shown_submission_score([0.8149, 0.8251], "rounded", 2)
    0.82
    >>> shown_submission_score([0.8149, 0.8201], "exact", 2)
    0.8175
    >>> shown_submission_score([0.95, 0.95, 0.95], "exact", 2)  # not np.mean's 0.9499999999999998
    0.95
    """
    values = [float(v) for v in run_scores if v is not None and math.isfinite(float(v))]
    if feedback == "ladder" or not values:
        return None
    if feedback == "rounded":
        shown = shown_run_scores(np.array(values), digits)
        return shown_score(float(pool(shown)) if pool is not None else float(np.mean(shown)), digits)
    mean = float(pool(values)) if pool is not None else float(np.mean(values))
    if feedback != "exact":
        raise ValueError(f"`feedback` must be 'exact', 'rounded' or 'ladder', got {feedback!r}")
    return float_precision(mean)


#: Significant digits a float64 holds faithfully (``sys.float_info.dig``): any decimal of 15 digits survives the
#: round trip through a float, so none of them is summation noise.
FLOAT_DIGITS = 15


def float_precision(value: float) -> float:
    """``value`` to :data:`FLOAT_DIGITS` significant digits: a mean without its summation's last-bit noise.

    The mean of three runs of 0.95 is 0.9499999999999998 in floating point (the sum 2.8499999999999996 is
    rounded before the division); a reader who sees runs of 0.95 is shown 0.95. The change is at most half a
    unit of the 15th significant digit, below any difference a score can carry.

    >>> float_precision(float(np.mean([0.95, 0.95, 0.95]))), float_precision(0.8175)
    (0.95, 0.8175)
    """
    return float(f"{value:.{FLOAT_DIGITS}g}")


def rounded_tie_reason(digits: int) -> str:
    """Why a comparison between two entries with the same rounded score is not published."""
    return (
        f"feedback is rounded to {digits} digit{'s' if digits != 1 else ''}: these entries show the "
        "same score, so no comparison between them is published"
    )


def rounded_predictions_reason(digits: int) -> str:
    """Why a board under rounded feedback compares no prediction entries (their statistics are per test row)."""
    return (
        f"feedback is rounded to {digits} digit{'s' if digits != 1 else ''}: prediction entries are ranked by "
        "their shown score; comparisons, groups and rank intervals, computed from each test row's outcome, are "
        "published with exact feedback and on the private board after the reveal"
    )


def _rank_predictions_by_shown_score(section: dict, rows: dict, digits: int) -> None:
    """A prediction section under rounded feedback: every entry with a shown score is ranked by it alone.

    Its comparisons, groups and rank intervals come from each test row's outcome, which the board
    withholds (:func:`shown_entries`), so none is published: ``compared`` is empty and each row says why.
    """
    reason = rounded_predictions_reason(digits)
    for sid in section["entries"]:
        row = rows[sid]
        if row.get("ranking_value") is None:
            continue
        row.update(
            compared=False,
            groups="",
            group_letters=[],
            rank_interval=None,
            runs_needed_for_decision=None,
            too_few_runs=False,
            excluded_reason=reason,
        )
    section["compared"] = []
    section["comparisons"] = []
    section.pop("comparison_table", None)
    section.pop("groups_note", None)  # no letters published: no note on how they were drawn
    section["outcomes_withheld"] = reason  # the page says it in place of how examples are resampled
    section["label"] = ROUNDED_PREDICTIONS_LABEL  # not "paired bootstrap": nothing is resampled


def publish_rounded(data: dict, digits: int, *, higher_is_better: bool = True) -> dict:
    """A board's report under ``rounded`` feedback: every number a reader gets is a function of the shown values.

    ``data`` is built from :func:`shown_entries` (each run's shown score, no per-example outcomes); a
    prediction section is then ranked by shown score alone (:func:`_rank_predictions_by_shown_score`).

    Every float is rounded to ``digits`` but a pair's (P(A>B), its limits, its p-values): like every number
    here they are functions of the shown run scores, and they keep the precision their verdict is read at
    (rounded, a limit of 0.50012 showed as 0.5 and an adjusted p of 0.04986 as 0.05 beside "better", whose
    rule is low > 1/2 and p < alpha: found by a statistician). Within each section the ranked entries are re-ranked on
    their shown ``ranking_value``: equal shown values tie (same rank, ``=k``), share a letter
    (:func:`_published_letters`; above ``DENSE_LETTERS`` entries the union of the block's letters) and their rank interval (the block's hull, then carried along the published verdicts: :func:`_verdict_consistent_intervals`), and are listed
    among themselves in a public order (``created``, then ``submission_id``), never by the exact
    score. Comparisons between entries that show the same value are removed (a pair's P(A>B) would
    tell them apart), as is ``runs_needed_for_decision`` of tied entries; ``compared`` follows the public order,
    the leader group and the shown state of the art's ``beaten_by`` (:func:`publish_shown_sota`) read the published
    relation (its verdicts and the differences its letters show: :class:`_PublishedRelation`). ``data`` is a report of
    :func:`evaluation.report` (changed in place and returned).
    """
    alphas = [section["sota"].get("alpha") for section in data["sections"]]  # a setting, not a score
    pairs = [
        {key: section.pop(key) for key in ("comparisons", "comparison_table") if key in section}
        for section in data["sections"]
    ]
    data["entries"] = round_floats(data["entries"], digits)
    data["sections"] = round_floats(data["sections"], digits)
    for section, kept in zip(data["sections"], pairs):
        section.update(kept)  # a pair's P(A>B), limits and p-values stay exact: see the docstring
    rows = {row["submission_id"]: row for row in data["entries"]}
    sign = -1.0 if higher_is_better else 1.0

    def public_order(sid, value):
        """Shown value (None last), then time, then id: never the exact score."""
        return (value is None, 0.0 if value is None else sign * value, str(rows[sid].get("created") or ""), sid)

    for section, alpha in zip(data["sections"], alphas):
        section["sota"]["alpha"] = alpha
        if section["kind"] == "predictions":
            _rank_predictions_by_shown_score(section, rows, digits)
        withheld = bool(section.get("outcomes_withheld"))  # then every shown score ranks, compared or not
        ranked = [
            sid
            for sid in section["entries"]
            if (withheld or rows[sid].get("rank") is not None) and rows[sid].get("ranking_value") is not None
        ]
        ranked_ids = set(ranked)
        # The entries not ranked (too few runs) follow too: by their shown mean, then time, never the exact one.
        rest = sorted(
            (sid for sid in section["entries"] if sid not in ranked_ids),
            key=lambda sid: public_order(sid, rows[sid]["mean"].get("estimate")),
        )
        ranked.sort(key=lambda sid: public_order(sid, rows[sid]["ranking_value"]))
        _drop_tied_pairs(section, rows)
        ranked = _order_by_shown_values_and_verdicts(section, rows, ranked)
        blocks: list[list[int]] = []
        for sid in ranked:  # adjacent equal shown values tie
            if blocks and rows[blocks[-1][0]]["ranking_value"] == rows[sid]["ranking_value"]:
                blocks[-1].append(sid)
            else:
                blocks.append([sid])
        exact_letters = {sid: set(rows[sid].get("group_letters") or ()) for sid in ranked}
        position = 1
        for block in blocks:
            _tie_block([rows[sid] for sid in block], position)
            position += len(block)
        _verdict_consistent_intervals(section, rows, ranked)
        note = _published_letters(rows, exact_letters, ranked, blocks)
        if note is not None:  # the published letters are runs of the order (stats.groups.compact_letters)
            section["groups_note"] = note
        section["entries"] = ranked + rest
        compared = set(section.get("compared") or ())
        section["compared"] = [sid for sid in section["entries"] if sid in compared]  # the public order
        # as on every board: the compared entries nothing beats (decided or inferred), else the first block
        relation = _PublishedRelation(section, rows)
        unbeaten = [sid for sid in ranked if sid in compared and not relation.beaten(sid)]
        section["leader_group"] = unbeaten or [sid for sid in ranked if rows[sid]["rank"] == 1]
        publish_shown_sota(section, rows, higher_is_better=higher_is_better, note=rounded_sota_note(digits))
    data["entries"] = [rows[sid] for section in data["sections"] for sid in section["entries"]]
    return data


def _order_by_shown_values_and_verdicts(section: dict, rows: dict, ranked: list) -> list:
    """The public order of ``ranked`` (sorted by shown value, then time and id) once the published verdicts
    are applied as the exact board applies its own: a winner above its losers (Kahn's order, the best shown
    value first; :func:`evaluation.stats.sparse.order_from_verdicts`), every verdict the order goes against or
    moves flagged in ``section["inversions"]`` and ``pair["inversion"]``. Everything it uses is published
    (shown values, verdicts, time), so the order tells nothing more. Found by a statistician: A beat B on 11
    of 12 seeds but showed the lower mean; the rounded board listed B first, unflagged. Returns the order.
    """
    index = {sid: k for k, sid in enumerate(ranked)}
    for pair in section.get("comparisons", []):
        pair["inversion"] = False  # flagged below against the public order, not the exact board's
    verdicts = [
        (pair, pair["better"], pair["b"] if pair["better"] == pair["a"] else pair["a"])
        for pair in section.get("comparisons", [])
        if pair["verdict"] in ("a_better", "b_better") and pair["a"] in index and pair["b"] in index
    ]
    order = order_from_verdicts(
        len(ranked), [index[w] for _, w, _ in verdicts], [index[lo] for _, _, lo in verdicts], np.arange(len(ranked))
    )
    ranked = [ranked[k] for k in order]
    shown = {sid: k for k, sid in enumerate(ranked)}
    inversions = []
    for pair, winner, loser in verdicts:
        kind = "verdict" if shown[winner] > shown[loser] else "statistic" if index[winner] > index[loser] else None
        pair["inversion"] = kind is not None
        if kind is not None:
            above, below = (loser, winner) if kind == "verdict" else (winner, loser)
            reason = inversion_reason(rows[above]["method_name"], rows[below]["method_name"], kind)
            inversions.append({"above": above, "below": below, "kind": kind, "reason": reason})
    inversions.sort(key=lambda inv: (shown[inv["above"]], shown[inv["below"]]))
    section["inversions"] = inversions
    return ranked


def _verdict_consistent_intervals(section: dict, rows: dict, ranked: list) -> None:
    """The published rank intervals carried along the published verdicts, as the exact board carries its own
    (:func:`evaluation.report.ranking.verdict_consistent_ranks`): for every winner shown above its loser, the
    loser's lower limit is below the winner's and the winner's upper limit above the loser's.

    A tie block's hull (:func:`_tie_block`) takes the widest limits of its members, so a tied entry could reach
    past an entry it beats: B and C tie at a shown 0.731, C beats E (published) and B does not; the hull [1, 6]
    of C's [2, 4] and B's [1, 6] let C's interval reach rank 6 beside E's [3, 5], though C is shown, and
    decided, above E. Each limit moved is the bound the published verdicts and order force, never past the
    shown rank (a winner's lower limit is at most its rank, a loser's upper limit at least its own), and the
    interval is marked ``widened`` (no longer the bootstrap's own). Everything used is published.
    """
    shown = {sid: k for k, sid in enumerate(ranked)}
    intervals = {sid: rows[sid]["rank_interval"] for sid in ranked if isinstance(rows[sid].get("rank_interval"), dict)}
    edges = []
    for pair in section.get("comparisons", []):
        if pair["verdict"] not in ("a_better", "b_better"):
            continue
        winner = pair["better"]
        loser = pair["b"] if winner == pair["a"] else pair["a"]
        if winner in intervals and loser in intervals and shown[winner] < shown[loser]:
            edges.append((winner, loser))
    if not edges:
        return
    low = {sid: interval["low"] for sid, interval in intervals.items()}
    high = {sid: interval["high"] for sid, interval in intervals.items()}
    by_loser = sorted(edges, key=lambda edge: shown[edge[1]])  # display order: winners settled first
    by_winner = sorted(edges, key=lambda edge: -shown[edge[0]])  # reverse display order
    for _ in range(len(ranked) + 1):
        before = (dict(low), dict(high))
        for winner, loser in by_loser:
            low[loser] = max(low[loser], low[winner] + 1)
        for winner, loser in by_winner:
            high[winner] = min(high[winner], high[loser] - 1)
        if (low, high) == before:
            break
    for sid, interval in intervals.items():
        if (low[sid], high[sid]) != (interval["low"], interval["high"]):
            rows[sid]["rank_interval"] = {**interval, "low": low[sid], "high": high[sid], "widened": True}


def rounded_sota_note(digits: int) -> str:
    """Why a board under rounded feedback shows its best score but no adjusted state of the art."""
    return (
        f"Feedback is rounded to {digits} digit{'s' if digits != 1 else ''}: the adjusted estimate and its bound, "
        "computed from the exact scores and each test row's outcome, are published with exact feedback and on the "
        "private board after the reveal."
    )


class _PublishedRelation:
    """Which compared entries beat which, as a published section says: the one relation a rounded board's letters,
    leader group and state of the art (``beaten_by``) read, as :attr:`evaluation.stats.sparse.SparseComparisons.beats`
    is the exact board's.

    It is the exact board's relation restricted to what the section publishes: W beats L when a published verdict
    says so, or when the two share no letter (the exact board's inferred differences, which the published letters
    keep), W shown above L (an inferred difference always points down the order) and no published verdict saying
    the reverse. The pairs tied on shown values are in neither: their verdicts are not published and the tie shares
    a letter (:func:`_published_letters`). Where the letters are runs of the order (``groups_note``: some entries
    that do not differ share no letter) they say nothing about differing, and only the published verdicts count.
    The rounded board read the published verdicts alone: an entry beaten only by inference, lettered apart from an
    entry above it, sat in its leader group and was its state of the art's unbeaten best (found by a statistician).
    Under the Ladder, which publishes no verdict, no letter and compares no entry, nothing beats anything.

    Sharing is read per letter as a bit set of display positions, so a 20,000-entry board is read in one pass.
    """

    def __init__(self, section: dict, rows: dict):
        compared = set(section.get("compared") or ())
        self.order = [sid for sid in section["entries"] if sid in compared]
        self.position = {sid: k for k, sid in enumerate(self.order)}
        self.beats: dict[int, set[int]] = {}  # winner -> losers, published verdicts between compared entries
        self.beaten_by_verdict: dict[int, set[int]] = {}
        for pair in section.get("comparisons") or ():
            if pair["verdict"] not in ("a_better", "b_better") or not {pair["a"], pair["b"]} <= compared:
                continue
            winner = pair["better"]
            loser = pair["b"] if winner == pair["a"] else pair["a"]
            self.beats.setdefault(winner, set()).add(loser)
            self.beaten_by_verdict.setdefault(loser, set()).add(winner)
        self.letters: dict[int, list[str]] = {}
        self.holders: dict[str, int] = {}  # letter -> bit set of the positions holding it
        self.lettered = 0  # bit set of the positions holding a letter
        if section.get("groups_note") is None:
            for k, sid in enumerate(self.order):
                letters = rows[sid].get("group_letters") or split_letters(rows[sid].get("groups") or "")
                if letters:
                    self.letters[sid] = list(letters)
                    self.lettered |= 1 << k
                    for letter in letters:
                        self.holders[letter] = self.holders.get(letter, 0) | 1 << k

    def _apart_above(self, sid: int) -> int:
        """Bit set of the lettered positions above ``sid`` sharing no letter with it that it does not beat."""
        if sid not in self.letters:
            return 0
        shared = 0
        for letter in self.letters[sid]:
            shared |= self.holders[letter]
        apart = self.lettered & ((1 << self.position[sid]) - 1) & ~shared
        for loser in self.beats.get(sid, ()):  # a published verdict the other way: the verdict stands
            apart &= ~(1 << self.position[loser])
        return apart

    def beaten(self, sid: int) -> bool:
        """Whether some compared entry beats ``sid``."""
        return bool(self.beaten_by_verdict.get(sid)) or self._apart_above(sid) != 0

    def beaten_by(self, sid: int) -> list[int]:
        """The compared entries that beat ``sid``, in the published order."""
        apart = self._apart_above(sid)
        by = self.beaten_by_verdict.get(sid, set())
        return [other for k, other in enumerate(self.order) if other in by or apart >> k & 1]


def publish_shown_sota(section: dict, rows: dict, *, higher_is_better: bool, note: str) -> None:
    """A section's state of the art as a board under rounded or Ladder feedback publishes it: from shown values only.

    ``raw`` is the best shown mean among the section's compared entries (all its entries when none is
    compared) and ``submission_id`` the entry the published order (``section["entries"]``, which the
    caller has put in a public order: shown values, then time or name) lists first among those showing it; ``m``
    counts every evaluation, repeated outcome vectors included. The adjusted estimate, its bound, the
    dependence ``rho`` and the count of repeated outcome vectors are ``None``: they come from the exact
    scores and each row's outcome, so a one-row probe that leaves every shown score as it was would still
    move them (and name which of two tied entries is better, or whether a changed row was right).
    ``beaten_by`` follows what the board publishes, as its leader group does: the entries that beat
    ``submission_id`` by the published relation (:class:`_PublishedRelation`: a published verdict, or a difference
    the published letters show), in the published order; None when none does, so always under the Ladder, which
    publishes no verdict and no letter.
    ``rows`` (submission id -> published row) and ``section`` are the published ones; changed in place.
    """
    sign = 1.0 if higher_is_better else -1.0
    compared = set(section.get("compared") or ())
    shown = [
        sid
        for sid in section["entries"]
        if (not compared or sid in compared) and rows[sid]["mean"].get("estimate") is not None
    ]
    leader = max(shown, key=lambda sid: sign * rows[sid]["mean"]["estimate"], default=None)  # the first of ties
    winners = [] if leader is None or leader not in compared else _PublishedRelation(section, rows).beaten_by(leader)
    sota = section["sota"]
    section["sota"] = {
        **sota,
        "raw": None if leader is None else rows[leader]["mean"]["estimate"],
        "estimate": None,
        "bound": None,
        "bound_side": None,
        "method": None,
        "n": None,
        "se": None,
        "submission_id": leader,
        "beaten_by": winners or None,
        "note": note,
        "model": None,
        "shrinkage": None,
        "m": sota["m"] + (sota.get("duplicates") or 0),
        "rho": None,
        "duplicates": None,
    }


def _published_letters(rows: dict, exact_letters: dict, ranked: list, blocks: list[list]) -> str | None:
    """The letters of a rounded board of up to ``DENSE_LETTERS`` lettered entries, redone in the public order from
    the exact display's "not different" relation (two entries differ when they share no letter: Piepho 2004)
    with every tie block forced to share: each entry then keeps its own letters, and no verdict the board
    publishes is contradicted. The block's union (:func:`_tie_block`, kept above that size) gave a tied
    entry its neighbour's letters: where A beat D and its tie B did not, A shared B's letter with D beside
    the published "A better than D" (found by a statistician). Returns the display's note where its letters had to
    be runs of the order (:func:`evaluation.stats.groups.compact_letters`), else None."""
    lettered = [sid for sid in ranked if exact_letters[sid]]
    if not 2 <= len(lettered) <= DENSE_LETTERS:
        return None
    sets = [exact_letters[sid] for sid in lettered]
    differ = np.array([[not (a & b) for b in sets] for a in sets], dtype=bool)
    block_of = {sid: k for k, block in enumerate(blocks) for sid in block}
    tie = np.array([[block_of[a] == block_of[b] for b in lettered] for a in lettered], dtype=bool)
    letters, note = compact_letters(differ & ~tie, np.arange(len(lettered)))
    for sid, groups in zip(lettered, letters):
        rows[sid].update(groups=groups, group_letters=split_letters(groups))
    return note


def _tie_block(block: list[dict], rank: int) -> None:
    letters = sorted(
        {letter for row in block for letter in split_letters(row.get("groups") or "")},
        key=lambda letter: (len(letter), letter),
    )
    intervals = [row["rank_interval"] for row in block if isinstance(row.get("rank_interval"), dict)]
    hull = (
        None
        if not intervals
        else {
            "rank": rank,
            "low": min([rank, *(i["low"] for i in intervals)]),
            "high": max([rank + len(block) - 1, *(i["high"] for i in intervals)]),
            "widened": False,
        }
    )
    tied = len(block) > 1
    for row in block:
        row.update(rank=rank, tied=tied, rank_display=f"={rank}" if tied else str(rank))
        if tied:  # a row without a rank interval of its own (too few runs: sections.ranks_withheld) gets none
            own = hull if isinstance(row.get("rank_interval"), dict) else None
            row.update(groups="".join(letters), rank_interval=own, runs_needed_for_decision=None)
        elif isinstance(row.get("rank_interval"), dict):
            interval = row["rank_interval"]
            interval.update(low=min(interval["low"], rank), high=max(interval["high"], rank))
        else:
            continue
        if "group_letters" in row:
            row["group_letters"] = letters  # the block's union, as ``groups``: never a tied row's own


def _drop_tied_pairs(section: dict, rows: dict) -> None:
    if "comparison_table" in section:
        names = {sid: rows[sid]["method_name"] for sid in section["entries"]}
        section["comparisons"] = table_pairs(section.pop("comparison_table"), names)
    if "comparisons" in section:
        section["comparisons"] = [
            pair
            for pair in section["comparisons"]
            if rows.get(pair["a"], {}).get("ranking_value") is None
            or rows[pair["a"]]["ranking_value"] != rows.get(pair["b"], {}).get("ranking_value")
        ]
