"""Issue 23 on results-only boards (slow lane): imported entries (generic CSV, lm-eval JSONL, solved-id lists; 0/1
and graded outcomes; a lower-is-better metric) are published alike by every surface: the JSON board, its CSV, the page,
each entry's API score, the history and compare of every pair agree; an incremental update equals a full recomputation;
one import of every model, one import per model in reverse order and the other formats give the same ranks, letters and
estimates; an MAE board of the errors 1 - x ranks as its accuracy board (its letters may differ by design: MAE outcomes
of 0 and 1 are not proportions, evaluation.report.values.outcomes_are_proportions). The sota endpoint names a rank-1
entry and keeps its estimate in range. A CSV import of 0/1 outcomes and an lm-eval import of graded ones give the same
board in either order. Searched by stats10: seeds 0-4 x (0/1, graded), 3-6 models on 30-120 instances (4 boards each);
6 boards of graded outcomes piled at 0 or 1 (10-30 instances); 2 seeds x rounded and Ladder
feedback, one import per model forward and reversed; 4 seeds of mixed 0/1 and graded imports in both
orders: no counterexample; a few are kept here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from leaderboard.services.reports import report_current, report_recompute
from leaderboard.services.results_import import ImportFile, challenge_create_results_only, results_import_create

from .test_board_surfaces_seeded import VOLATILE, _by_name, _problems
from .test_published_values import client_for

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def _outcomes(seed: int, n: int, m: int, graded: bool) -> dict[str, list[float]]:
    """n models on m instances; the last duplicates the first (a tie)."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(n):
        p = 0.5 + 0.08 * rng.integers(0, 5)
        if graded:
            values = np.round(np.clip(p + 0.3 * rng.standard_normal(m), 0, 1), int(rng.integers(1, 4)))
        else:
            values = (rng.random(m) < p).astype(float)
        out[f"m{i}"] = [float(v) for v in values]
    out[f"m{n - 1}"] = list(out["m0"])
    return out


def _csv(outcomes: dict, names: list[str], flip: bool = False) -> bytes:
    lines = ["model,instance_id,score"]
    for name in names:
        lines += [f"{name},q{j},{(1 - v) if flip else v:g}" for j, v in enumerate(outcomes[name])]
    return "\n".join(lines).encode()


def _board(host, title, outcomes, groups: list[list[str]], fmt="csv", metric="accuracy", flip=False):
    challenge = challenge_create_results_only(created_by=host, title=title, metric=metric)
    for names in groups:
        if fmt == "csv":
            files = [ImportFile("r.csv", _csv(outcomes, names, flip))]
            results_import_create(challenge=challenge, user=host, files=files, format="csv")
        elif fmt == "lm-eval-jsonl":
            files = [
                ImportFile(
                    f"{n}.jsonl",
                    "\n".join(json.dumps({"doc_id": j, "acc": v}) for j, v in enumerate(outcomes[n])).encode(),
                    n,
                )
                for n in names
            ]
            results_import_create(challenge=challenge, user=host, files=files, format="lm-eval-jsonl")
        else:
            files = [
                ImportFile(f"{n}.json", json.dumps([f"q{j}" for j, v in enumerate(outcomes[n]) if v]).encode(), n)
                for n in names
            ]
            ids = [f"q{j}" for j in range(len(next(iter(outcomes.values()))))]
            results_import_create(challenge=challenge, user=host, files=files, format="solved-ids", instances=ids)
        report_recompute(challenge_id=challenge.pk)
    return challenge


def _check(challenge, lo=0.0, hi=1.0):
    incremental = report_current(challenge=challenge).data
    report_recompute(challenge_id=challenge.pk, force=True)
    full = report_current(challenge=challenge).data
    strip = [{k: v for k, v in e.items() if k not in VOLATILE} for e in incremental["entries"]]
    assert strip == [{k: v for k, v in e.items() if k not in VOLATILE} for e in full["entries"]]
    data, problems = _problems(challenge, lo, hi)
    assert not problems, problems
    _check_sota(challenge, data, lo, hi)
    return data


def _check_sota(challenge, data, lo, hi) -> None:
    """The sota endpoint names a rank-1 entry, its raw value is that row's mean, and its adjusted estimate and
    bound lie inside the metric's range on the conservative side of the raw value."""
    sota = client_for().get(f"/api/challenges/{challenge.slug}/sota/").json()
    rows = {r["submission_id"]: r for r in data["entries"]}
    sign = 1 if sota["higher_is_better"] else -1
    for section in sota["sota"]:
        if section["raw"] is None:
            continue
        assert rows[section["submission_id"]]["rank"] == 1, section
        assert section["raw"] == pytest.approx(rows[section["submission_id"]]["mean"]["estimate"], abs=1e-12)
        if section["estimate"] is None:  # withheld (rounded or Ladder feedback), saying why
            assert section["bound"] is None and section["note"], section
            continue
        assert lo <= section["estimate"] <= hi and lo <= section["bound"] <= hi, section
        assert sign * section["bound"] <= sign * section["estimate"] + 1e-12 <= sign * section["raw"] + 2e-12


@pytest.mark.parametrize(("seed", "graded"), [(2, False), (3, True)])
def test_every_surface_of_a_seeded_imported_board_agrees_whatever_the_import_order_and_format(host, seed, graded):
    rng = np.random.default_rng(1000 + seed)
    n, m = int(rng.integers(3, 7)), int(rng.choice([30, 60, 120]))
    out = _outcomes(seed, n, m, graded)
    names = list(out)
    data = _check(_board(host, f"One {seed}", out, [names]))
    each = _check(_board(host, f"Each {seed}", out, [[x] for x in names[::-1]]))
    assert _by_name(data) == _by_name(each)
    fmt = "lm-eval-jsonl" if graded else "solved-ids"
    assert _by_name(data) == _by_name(_check(_board(host, f"Fmt {seed}", out, [names[:2], names[2:]], fmt=fmt)))
    errors = _check(_board(host, f"Err {seed}", out, [names], metric="mae", flip=True), hi=float("inf"))
    left, right = _by_name(data), _by_name(errors)
    for name in names:
        for key in ("rank", "rank_display", "tied", "rank_interval"):
            assert left[name][key] == right[name][key], (name, key, left[name], right[name])
        assert left[name]["mean"] == pytest.approx(1 - right[name]["mean"], abs=1e-9)


def _mixed(host, title: str, binary: dict, graded: dict, binary_first: bool):
    challenge = challenge_create_results_only(created_by=host, title=title, metric="accuracy")

    def import_binary():
        files = [ImportFile("r.csv", _csv(binary, list(binary)))]
        results_import_create(challenge=challenge, user=host, files=files, format="csv")

    def import_graded():
        files = [
            ImportFile(
                f"{n}.jsonl",
                "\n".join(json.dumps({"doc_id": f"q{j}", "acc": v}) for j, v in enumerate(graded[n])).encode(),
                n,
            )
            for n in graded
        ]
        results_import_create(challenge=challenge, user=host, files=files, format="lm-eval-jsonl")

    for step in (import_binary, import_graded) if binary_first else (import_graded, import_binary):
        step()
        report_recompute(challenge_id=challenge.pk)
    return challenge


def test_a_board_of_0_1_and_graded_imports_is_the_same_in_either_import_order(host):
    rng = np.random.default_rng(2001)
    m = int(rng.choice([30, 60, 120]))
    binary = _outcomes(1, int(rng.integers(2, 5)), m, False)
    graded = {f"g{k}": v for k, v in _outcomes(51, int(rng.integers(2, 5)), m, True).items()}
    graded["g_dup"] = list(binary["m0"])  # a graded import holding 0/1 values only
    first = _check(_mixed(host, "Binary first", binary, graded, True))
    second = _check(_mixed(host, "Graded first", binary, graded, False))
    assert _by_name(first) == _by_name(second)


@pytest.mark.parametrize("feedback", ["rounded", "ladder"])
def test_an_imported_board_under_rounded_or_ladder_feedback_is_the_same_in_either_import_order(host, feedback):
    """One import per model, forward and reversed, on a board with rounded (2 digits) or Ladder feedback: every
    surface agrees, the sota endpoint withholds its adjusted estimate saying why, ranks and letters match."""
    from leaderboard.services.challenges import challenge_update

    out = _outcomes(1, 4, 60, True)
    boards = []
    for order in (list(out), list(out)[::-1]):
        challenge = challenge_create_results_only(created_by=host, title=f"{feedback} {order[0]}", metric="accuracy")
        challenge = challenge_update(
            challenge=challenge, user=host, feedback=feedback, feedback_digits=2, ladder_margin=0.02
        )
        for name in order:
            files = [ImportFile("r.csv", _csv(out, [name]))]
            results_import_create(challenge=challenge, user=host, files=files, format="csv")
            report_recompute(challenge_id=challenge.pk)
        boards.append(_by_name(_check(challenge)))
    assert boards[0] == boards[1]
