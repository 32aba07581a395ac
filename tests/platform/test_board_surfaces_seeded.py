"""Issue 23 through the services, on seeded random boards (slow lane): the JSON board, its CSV, the page, each
submission's API score, the history, and compare for every pair agree; ranks, letters, the leader group, rank
intervals and compare never disagree in direction; intervals hold their estimates inside the metric's range; an
incremental update equals a full recomputation; ranks, letters and estimates do not depend on creation order; a
lower-is-better mirror board ranks as its accuracy board. Searched by stats9: 6 seeds x 3 feedback modes (mean and
Boo_n ranking), 3 mirror seeds, 3 private-board seeds: no counterexample; a few are kept here."""

from __future__ import annotations

import csv
import io
import itertools
import re

import numpy as np
import pytest
from django.contrib.auth.models import AnonymousUser

from leaderboard.services.boards import board_scope
from leaderboard.services.history import history_entry
from leaderboard.services.reports import report_current, report_recompute

from .factories import digits_challenge, make_user, stored_recipe
from .test_published_values import client_for as _client

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

VOLATILE = {"version", "versions", "created"}


def _runs(seed: int, n: int, k: int) -> dict[str, list[float]]:
    """n entries of k runs near 0.8 with 2-4 decimals; the last one duplicates the first (a tie)."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(n):
        base = 0.8 - 0.01 * rng.integers(0, 4)
        out[f"m{i}"] = [
            float(x) for x in np.round(np.clip(base + 0.02 * rng.standard_normal(k), 0, 1), rng.integers(2, 5))
        ]
    out[f"m{n - 1}"] = list(out["m0"])
    return out


def _build(host, title: str, runs: dict, order: list[str], **fields):
    challenge, _ = digits_challenge(host, title=title, bootstrap_resamples=200, **fields)
    for name in order:  # one report update per new submission: the incremental path
        stored_recipe(challenge, make_user(f"{title[:6]}{name}"), name, len(runs[name]), runs[name])
        report_recompute(challenge_id=challenge.pk)
    return challenge


def _row_problems(challenge, rows, table, page, reader, lo, hi) -> list:
    problems = []
    scope = board_scope(challenge=challenge, user=AnonymousUser())
    for sid, row in rows.items():
        line = table[sid]
        if (line["rank_display"].lstrip("'"), line["groups"], float(line["mean.estimate"])) != (
            row["rank_display"],
            row["groups"],
            row["mean"]["estimate"],
        ):
            problems.append(("csv", sid))
        shown = re.search(rf'data-submission="{sid}".*?data-rank>([^<]*)<.*?data-groups>(.*?)</td>', page, re.S)
        letters = "".join(re.findall(r">([a-z]+)</span>", shown.group(2))) if shown else None
        if shown is None or (shown.group(1), letters) != (row["rank_display"], "".join(row["groups"])):
            problems.append(("page", sid))
        score = reader.get(f"/api/submissions/{sid}/").json()["score"]
        if score is None or abs(score - row["mean"]["estimate"]) > 1e-12:
            problems.append(("submission score", sid, score, row["mean"]["estimate"]))
        last = history_entry(challenge=challenge, submission_id=sid, scope=scope)["public"][-1]
        if (last["value"], last["rank"]) != (row["ranking_value"], row["rank"]):
            problems.append(("history", sid, last, row["ranking_value"], row["rank"]))
        for key in ("mean", "boo_n"):
            if (
                row[key]["low"] is not None
                and not lo <= row[key]["low"] <= row[key]["estimate"] <= row[key]["high"] <= hi
            ):
                problems.append(("interval", key, sid, row[key]))
        interval = row.get("rank_interval")
        if interval and not interval["low"] <= row["rank"] <= interval["high"]:
            problems.append(("rank interval", sid))
    return problems


def _pair_problems(challenge, data, rows, reader) -> list:
    problems = []
    sign = 1 if data["higher_is_better"] else -1
    ordered = sorted(rows.values(), key=lambda r: r["rank"])
    for a, b in zip(ordered, ordered[1:]):
        if a["rank"] < b["rank"] and sign * a["ranking_value"] < sign * b["ranking_value"] - 1e-12:
            problems.append(("order", a["submission_id"], b["submission_id"]))
    top, leaders = ordered[0]["submission_id"], data["sections"][0]["leader_group"]
    for a, b in itertools.combinations(rows, 2):
        pair = reader.get(f"/api/challenges/{challenge.slug}/compare/?a={a}&b={b}").json()["comparison"]
        share = bool(set(rows[a]["groups"]) & set(rows[b]["groups"]))
        if pair is not None and pair["better"] is not None:
            better, worse = pair["better"], b if pair["better"] == a else a
            if (
                rows[better]["rank"] >= rows[worse]["rank"]
                or share
                or worse == top
                or (better == top and worse in leaders)
            ):
                problems.append(("compare", a, b, pair["verdict"], rows[a]["groups"], rows[b]["groups"]))
        elif pair is not None and not share:
            problems.append(("letters apart, compare not significant", a, b))
        ia, ib = rows[a].get("rank_interval"), rows[b].get("rank_interval")
        if ia and ib and (ia["high"] < ib["low"]) and rows[a]["rank"] >= rows[b]["rank"]:
            problems.append(("rank intervals", a, b))
    return problems


def _problems(challenge, lo=0.0, hi=1.0) -> tuple[dict, list]:
    reader = _client()
    data = reader.get(f"/api/challenges/{challenge.slug}/leaderboard/?limit=100").json()
    rows = {row["submission_id"]: row for row in data["entries"]}
    body = b"".join(reader.get(f"/api/challenges/{challenge.slug}/leaderboard/?format=csv").streaming_content)
    table = {int(line["submission_id"]): line for line in csv.DictReader(io.StringIO(body.decode()))}
    page = reader.get(f"/c/{challenge.slug}/").content.decode()
    problems = _row_problems(challenge, rows, table, page, reader, lo, hi)
    return data, problems + _pair_problems(challenge, data, rows, reader)


def _by_name(data: dict) -> dict:
    keep = ("rank", "rank_display", "groups", "tied", "ranking_value", "rank_interval", "runs_needed_for_decision")
    out = {
        r["method_name"]: {k: r.get(k) for k in keep} | {"mean": r["mean"]["estimate"], "boo": r["boo_n"]["estimate"]}
        for r in data["entries"]
    }
    names = {r["submission_id"]: r["method_name"] for r in data["entries"]}
    out["leader group"] = sorted(names[i] for i in data["sections"][0]["leader_group"])
    return out


@pytest.mark.parametrize(("feedback", "seed"), [("exact", 2), ("rounded", 5), ("ladder", 7)])
def test_every_surface_of_a_seeded_board_agrees(host, feedback, seed):
    rng = np.random.default_rng(100 + seed)
    n, k = int(rng.integers(3, 7)), int(rng.choice([6, 8, 10]))
    runs = _runs(seed, n, k)
    fields = dict(
        k_runs=k,
        feedback=feedback,
        feedback_digits=int(rng.integers(1, 4)),
        ladder_margin=0.01,
        ranking_statistic=["mean", "boo_n"][seed % 2],
    )
    forward = _build(host, f"Fwd {seed}", runs, list(runs), **fields)
    incremental = report_current(challenge=forward).data
    report_recompute(challenge_id=forward.pk, force=True)
    full = report_current(challenge=forward).data
    strip = [{key: v for key, v in e.items() if key not in VOLATILE} for e in incremental["entries"]]
    assert strip == [{key: v for key, v in e.items() if key not in VOLATILE} for e in full["entries"]]
    data, problems = _problems(forward)
    assert not problems, problems
    backward = _build(host, f"Rev {seed}", runs, list(runs)[::-1], **fields)
    again, problems = _problems(backward)
    assert not problems, problems
    assert _by_name(data) == _by_name(again)


def test_a_lower_is_better_mirror_board_ranks_as_its_accuracy_board(host):
    runs = _runs(1, 5, 10)
    accuracy = _build(host, "Acc", runs, list(runs), k_runs=10)
    errors = {m: [round(1 - x, 6) for x in v] for m, v in runs.items()}
    error = _build(host, "Err", errors, list(runs), k_runs=10, metric="mae")
    (a, pa), (e, pe) = _problems(accuracy), _problems(error, hi=float("inf"))
    assert not pa and not pe, (pa, pe)
    left, right = _by_name(a), _by_name(e)
    for name in runs:
        for key in ("rank", "rank_display", "groups", "tied", "rank_interval", "runs_needed_for_decision"):
            assert left[name][key] == right[name][key], (name, key)
        assert left[name]["mean"] == pytest.approx(1 - right[name]["mean"], abs=1e-9)
    assert left["leader group"] == right["leader group"]
