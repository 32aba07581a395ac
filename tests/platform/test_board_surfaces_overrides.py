"""Issue 23 at the HTTP level, where earlier hunts had not looked: query overrides (``n``, ``gamma``, ``alpha``,
``statistic``) on every feedback mode, boards of prediction and recipe entries together, and suites over tasks with
rounded and Ladder feedback.

Searched by stats13 (no counterexample unless said): 4 seeds x {exact, rounded, Ladder} x 8 override sets, board
order / letters / leader group / rank intervals / CSV against ``compare`` under the same overrides (up to 9 verdicts
a board); every run of a rounded board moved inside its rounding cell and every Ladder entry's runs re-spread and
re-paired at the same mean, under each override set: the board, compare of every ordered pair, ``/sota/`` and the
CSV unchanged (overrides recompute from what the board shows, nothing more); 25 bad values x 4 endpoints; 5 seeds
x 3 modes of mixed boards; suites over rounded/exact/Ladder tasks with a team joining, and with the runs moved as
above. Found: the private board recomputed with overrides was cached under the *public* board's inputs version, so
it kept a team's former final choice after the team changed it (fixed); a suite said it read the "public part" of
a Ladder task that has no private part (fixed)."""

from __future__ import annotations

import csv
import io
import itertools
import re

import numpy as np
import pytest
from django.conf import settings
from django.core.cache import caches

from leaderboard.models import Run
from leaderboard.services.reports import report_recompute
from leaderboard.services.submissions import submission_select_final
from leaderboard.services.suites import suite_create

from .factories import digits_challenge, make_user, stored_recipe
from .test_published_values import client_for as _client
from .test_report_api import add_entry

pytestmark = pytest.mark.django_db

OVERRIDES = [{}, {"n": 2}, {"n": 5, "statistic": "boo_n"}, {"gamma": 0.9, "alpha": 0.2}, {"alpha": 0.5, "gamma": 0.55}]


def _query(overrides: dict) -> str:
    return "".join(f"&{key}={value}" for key, value in overrides.items())


def _board(host, title: str, runs: dict, **fields):
    challenge, _ = digits_challenge(host, title=title, bootstrap_resamples=200, **fields)
    for name, scores in runs.items():
        stored_recipe(challenge, make_user(f"{title[:8]}-{name}"), name, len(scores), scores)
    report_recompute(challenge_id=challenge.pk)
    return challenge


def _runs(seed: int, n: int, k: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(seed)
    return {
        f"m{i}": [float(x) for x in np.round(0.8 - 0.01 * rng.integers(0, 6) + 0.01 * rng.standard_normal(k), 4)]
        for i in range(n)
    }


# ------------------------------------------------------------------ overrides
def test_a_private_board_recomputed_with_overrides_shows_the_team_s_current_final_choice(host):
    """The overridden report was cached under the public board's inputs version, which a final choice does not move
    (it is the team's secret until the reveal): after alice chose version 2, ``?board=private`` listed version 2 and
    ``?board=private&n=2`` still version 1, for the cache's ten minutes."""
    challenge, _ = digits_challenge(host, title="Private", public_fraction=0.5, final_entries=1, k_runs=6)
    alice = make_user("alice-private")
    first, second = (stored_recipe(challenge, alice, "m", 6, [b + 0.01 * i for i in range(6)]) for b in (0.7, 0.9))
    stored_recipe(challenge, make_user("bob-private"), "o", 6, [0.8 + 0.01 * i for i in range(6)])
    for run in Run.objects.filter(submission__challenge=challenge):
        Run.objects.filter(pk=run.pk).update(public_score=run.test_score, private_score=run.test_score)
    reader = _client(host)

    def shown(query: str = "") -> set[int]:
        response = reader.get(f"/api/challenges/{challenge.slug}/leaderboard/?board=private{query}")
        assert response.status_code == 200, response.content
        return {row["submission_id"] for row in response.json()["entries"]}

    submission_select_final(submission=first, user=alice)
    report_recompute(challenge_id=challenge.pk)
    assert first.pk in shown() and first.pk in shown("&n=2")
    submission_select_final(submission=first, user=alice, selected=False)
    submission_select_final(submission=second, user=alice)
    report_recompute(challenge_id=challenge.pk)
    assert second.pk in shown() and first.pk not in shown()
    assert shown("&n=2") == shown()


@pytest.mark.parametrize(
    ("name", "value"),
    [("n", "0"), ("n", "1e3"), ("n", "1001"), ("gamma", "0.5"), ("gamma", "nan"), ("alpha", "inf"), ("alpha", "1e-7")]
    + [("statistic", "MEAN")],
)
def test_a_bad_override_is_a_400_naming_it_on_every_report_endpoint(host, name, value):
    challenge = _board(host, "Bad override", _runs(3, 3, 6), k_runs=6)
    a, b = challenge.submissions.values_list("pk", flat=True)[:2]
    reader = _client()
    for url in (
        f"/api/challenges/{challenge.slug}/leaderboard/?{name}={value}",
        f"/api/challenges/{challenge.slug}/leaderboard/?format=csv&{name}={value}",
        f"/api/challenges/{challenge.slug}/compare/?a={a}&b={b}&{name}={value}",
        f"/api/challenges/{challenge.slug}/sota/?{name}={value}",
    ):
        response = reader.get(url)
        assert response.status_code == 400 and list(response.json()["errors"]) == [name], (url, response.content)


def _strip(value):
    """A response with what differs between two reports of the same board taken apart (ids in texts, times)."""
    if isinstance(value, dict):
        return {key: _strip(item) for key, item in value.items() if key not in ("created", "computed_at")}
    if isinstance(value, list):
        return [_strip(item) for item in value]
    return re.sub(r"submission \d+", "submission N", value) if isinstance(value, str) else value


def _surfaces(challenge, overrides: dict) -> dict:
    """Everything a reader gets with ``overrides``: the board, its CSV, /sota/ and compare of every ordered pair."""
    reader = _client()
    slug, query = challenge.slug, _query(overrides)
    board = reader.get(f"/api/challenges/{slug}/leaderboard/?limit=100{query}").json()
    ids = sorted(row["submission_id"] for row in board["entries"])
    body = b"".join(reader.get(f"/api/challenges/{slug}/leaderboard/?format=csv{query}").streaming_content)
    out = {
        "board": _strip({key: board[key] for key in ("entries", "sections", "settings")}),
        "csv": [
            {k: v for k, v in line.items() if k != "created"} for line in csv.DictReader(io.StringIO(body.decode()))
        ],
        "sota": _strip(reader.get(f"/api/challenges/{slug}/sota/?format=json{query}").json()["sota"]),
    }
    for a, b in itertools.permutations(ids, 2):
        answer = reader.get(f"/api/challenges/{slug}/compare/?a={a}&b={b}{query}").json()
        out[f"{a}-{b}"] = _strip({key: answer[key] for key in ("comparison", "reason", "a", "b")})
    return out


def _moved(before: dict, after: dict) -> list[str]:
    return [key for key in before if before[key] != after[key]]


@pytest.mark.parametrize("feedback", ["rounded", "ladder"])
def test_overrides_on_rounded_and_ladder_boards_read_only_what_the_board_shows(host, feedback):
    """An override recomputes the board: from the shown runs (rounded) or the releases (Ladder), never the exact
    scores. Every run moved inside its rounding cell, or an entry's runs spread 3x and re-paired at the same mean
    (the same Ladder release): every surface under every override set is unchanged (an exact board: most move)."""
    rng = np.random.default_rng(1)
    cells = {f"m{i}": np.round(0.8 - 0.01 * i + 0.02 * rng.standard_normal(10), 2) for i in range(4)}
    exact = {m: [float(v + 0.004 * rng.uniform(-1, 1)) for v in values] for m, values in cells.items()}
    fields = dict(k_runs=10, feedback=feedback, feedback_digits=2, ladder_margin=0.001)
    challenge = _board(host, f"Hidden {feedback}", exact, **fields)
    before = {str(o): _surfaces(challenge, o) for o in OVERRIDES}
    for run in Run.objects.filter(submission__challenge=challenge).select_related("submission"):
        values = np.array(exact[run.submission.method_name])
        if feedback == "rounded":
            moved = cells[run.submission.method_name][run.index] + 0.004 * rng.uniform(-1, 1)
        else:
            moved = (values.mean() + 3 * (values - values.mean()))[(run.index + 3) % len(values)]
        Run.objects.filter(pk=run.pk).update(test_score=float(moved))
    report_recompute(challenge_id=challenge.pk)
    for alias in settings.CACHES:
        caches[alias].clear()
    for overrides in OVERRIDES:
        assert not _moved(before[str(overrides)], _surfaces(challenge, overrides)), overrides


def _pair_problems(challenge, overrides: dict, data: dict, section: dict) -> list:
    """The section's order, letters, leader group and rank intervals against compare under the same overrides."""
    reader, query = _client(), _query(overrides)
    rows = {row["submission_id"]: row for row in data["entries"]}
    sign = 1 if data["higher_is_better"] else -1
    problems = []
    ranked = sorted((rows[i] for i in section["entries"] if rows[i]["rank"] is not None), key=lambda r: r["rank"])
    for a, b in zip(ranked, ranked[1:]):
        if a["rank"] < b["rank"] and sign * a["ranking_value"] < sign * b["ranking_value"] - 1e-12:
            problems.append(("order", a["submission_id"], b["submission_id"]))
    beaten = set()
    for a, b in itertools.combinations(section["entries"], 2):
        answer = reader.get(f"/api/challenges/{challenge.slug}/compare/?a={a}&b={b}{query}").json()
        for side, sid in (("a", a), ("b", b)):
            if any(answer[side][key] != rows[sid][key] for key in ("rank", "groups", "ranking_value", "mean")):
                problems.append(("compare's row", sid))
        pair, share = answer["comparison"], bool(set(rows[a]["groups"]) & set(rows[b]["groups"]))
        if pair is not None and pair["better"] is not None:
            better, worse = pair["better"], b if pair["better"] == a else a
            beaten.add(worse)
            if rows[better]["rank"] >= rows[worse]["rank"] or share or worse in section["leader_group"]:
                problems.append(("compare", a, b, pair["verdict"], rows[a]["groups"], rows[b]["groups"]))
        elif pair is not None and rows[a]["groups"] and rows[b]["groups"] and not share:
            problems.append(("letters apart, compare undecided", a, b))
        ia, ib = rows[a].get("rank_interval"), rows[b].get("rank_interval")
        if ia and ib and ia["high"] < ib["low"] and rows[a]["rank"] >= rows[b]["rank"]:
            problems.append(("rank intervals", a, b))
    compared = set(section.get("compared") or ())
    if compared and set(section["leader_group"]) != compared - beaten:
        problems.append(("leader group", section["leader_group"], sorted(compared - beaten)))
    return problems


@pytest.mark.slow
@pytest.mark.parametrize("feedback", ["exact", "rounded", "ladder"])
@pytest.mark.parametrize("seed", [1, 4])
def test_the_board_and_compare_agree_under_overrides(host, feedback, seed):
    """Seeds 1 and 4: 4 and 5 entries, 4-7 verdicts under most override sets, none at alpha = 0.001."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(3, 7)), int(rng.choice([6, 10]))
    challenge = _board(host, f"Agree {seed} {feedback}", _runs(seed, n, k), k_runs=k, feedback=feedback)
    for overrides in OVERRIDES:
        data = _client().get(f"/api/challenges/{challenge.slug}/leaderboard/?limit=100{_query(overrides)}").json()
        assert data["overrides"] == overrides
        problems = _pair_problems(challenge, overrides, data, data["sections"][0])
        assert not problems, (overrides, problems)


# ------------------------------------------------------------------ prediction and recipe entries on one board
@pytest.mark.slow
@pytest.mark.parametrize("feedback", ["exact", "rounded", "ladder"])
def test_a_board_of_prediction_and_recipe_entries_agrees_section_by_section(host, feedback):
    rng = np.random.default_rng(2)
    challenge, _ = digits_challenge(
        host, title=f"Mixed {feedback}", bootstrap_resamples=200, k_runs=6, feedback=feedback
    )
    for i in range(4):
        add_entry(challenge, host, f"r{i}", "recipe", np.round(0.8 - 0.01 * i + 0.01 * rng.standard_normal(6), 4))
    for i in range(3):
        outcomes = (rng.random((int(rng.integers(1, 4)), 72)) < rng.uniform(0.55, 0.95)).astype(float)
        add_entry(challenge, host, f"p{i}", "predictions", outcomes.mean(axis=1), outcomes=outcomes)
    report_recompute(challenge_id=challenge.pk)
    reader, slug = _client(), challenge.slug
    for overrides in OVERRIDES[:3]:
        query = _query(overrides)
        data = reader.get(f"/api/challenges/{slug}/leaderboard/?limit=100{query}").json()
        rows = {row["submission_id"]: row for row in data["entries"]}
        sections = {section["kind"]: section for section in data["sections"]}
        body = b"".join(reader.get(f"/api/challenges/{slug}/leaderboard/?format=csv{query}").streaming_content)
        table = {int(line["submission_id"]): line for line in csv.DictReader(io.StringIO(body.decode()))}
        assert {
            sid: (line["kind"], line["rank_display"].lstrip("'"), line["groups"]) for sid, line in table.items()
        } == {sid: (row["kind"], row["rank_display"], row["groups"]) for sid, row in rows.items()}
        sota = {s["kind"]: s for s in reader.get(f"/api/challenges/{slug}/sota/?format=json{query}").json()["sota"]}
        for kind, section in sections.items():
            assert all(rows[sid]["kind"] == kind for sid in section["entries"])
            assert min(rows[sid]["rank"] for sid in section["entries"]) == 1  # ranks count within the section
            candidates = section.get("compared") or section["entries"]
            assert sota[kind]["raw"] == max(rows[sid]["mean"]["estimate"] for sid in candidates)
            assert sota[kind]["submission_id"] in section["entries"]
            assert not _pair_problems(challenge, overrides, data, section), (overrides, kind)
        for a, b in itertools.product(sections["recipe"]["entries"], sections["predictions"]["entries"]):
            answer = reader.get(f"/api/challenges/{slug}/compare/?a={a}&b={b}{query}")
            assert answer.status_code == 400 and list(answer.json()["errors"]) == ["b"]


# ------------------------------------------------------------------ suites over tasks with feedback
def _tasks(host, tag: str, modes: tuple[str, ...]) -> list:
    return [
        digits_challenge(host, title=f"{tag} {i}", k_runs=6, feedback=mode, feedback_digits=2, ladder_margin=0.01)[0]
        for i, mode in enumerate(modes)
    ]


def _suite_numbers(slug: str) -> dict:
    """Each entry's IQM and mean with their limits, and P(improvement) and the Bayesian test of each pair, by name."""
    data = _client().get(f"/api/suites/{slug}/").json()
    names = [entry["method_name"] for entry in data["entries"]]
    out = {name: (entry["iqm"], entry["mean"]) for name, entry in zip(names, data["entries"])}
    poi = data["probability_of_improvement"]
    for (i, a), (j, b) in itertools.permutations(enumerate(names), 2):
        out[f"{a}>{b}"] = (poi["p"][i][j], poi["low"][i][j], poi["high"][i][j])
    for pair in data["bayesian"]:
        out[f"{names[pair['a']]}~{names[pair['b']]}"] = (pair["p_a_better"], pair["p_rope"], pair["p_b_better"])
    return out | {"taus": data["profile"]["taus"], "scores": [task["scores"] for task in data["tasks"]]}


def test_a_team_joining_a_suite_over_rounded_and_ladder_tasks_moves_no_other_entry_s_numbers(host):
    """Issue 23 row 9 under feedback: a fourth team scoring inside the others' range on every task (the min-max
    scale and the profile's thresholds stay) leaves every number of the first three as it was."""
    rng = np.random.default_rng(5)
    tasks = _tasks(host, "Join", ("rounded", "exact", "ladder"))

    def join(name: str, base: float) -> None:
        user = make_user(f"join-{name}")
        for task in tasks:
            stored_recipe(task, user, name, 6, [float(x) for x in np.round(base + 0.01 * rng.standard_normal(6), 4)])
            report_recompute(challenge_id=task.pk)

    for name, base in (("top", 0.9), ("low", 0.6), ("mid", 0.75)):
        join(name, base)
    suite = suite_create(created_by=host, title="Join suite", challenges=tasks)
    before = _suite_numbers(suite.slug)
    join("mid2", 0.76)
    after = _suite_numbers(suite.slug)
    assert {key: after[key] for key in before} == before


def test_a_suite_over_rounded_and_ladder_tasks_reads_only_what_their_boards_show(host):
    """Every run of the rounded task moved inside its rounding cell, every entry of the Ladder task re-spread 2x
    and re-paired at the same mean (the same release): the suite is unchanged. Its account of each task names what
    was read: the Ladder task has no private part, so its releases are of all hidden rows, not a 'public part'."""
    rng = np.random.default_rng(9)
    tasks = _tasks(host, "Shown", ("rounded", "ladder"))
    for name, base in (("a", 0.9), ("b", 0.8), ("c", 0.7)):
        user = make_user(f"shown-{name}")
        for task in tasks:
            cells = np.round(base + 0.02 * rng.standard_normal(6), 2)
            stored_recipe(task, user, name, 6, [float(c + 0.004 * rng.uniform(-1, 1)) for c in cells])
            report_recompute(challenge_id=task.pk)
    suite = suite_create(created_by=host, title="Shown suite", challenges=tasks)
    before = _client().get(f"/api/suites/{suite.slug}/").json()
    assert [task["scores"] for task in before["tasks"]] == [
        "all hidden rows, rounded to 2 digits",
        # the host's 0.01 raised to twice one of the 72 rows' move, a row drawn 5 times in a recipe run's resample
        # counting 5 times (2 x 5/72; tests/platform/test_ladder_resamples.py)
        "all hidden rows, Ladder releases (η = 0.138889)",
    ]
    for run in Run.objects.filter(submission__challenge=tasks[0]):
        Run.objects.filter(pk=run.pk).update(test_score=float(round(run.test_score, 2) + 0.004 * rng.uniform(-1, 1)))
    for submission in tasks[1].submissions.all():
        runs = list(Run.objects.filter(submission=submission).order_by("index"))
        values = np.array([run.test_score for run in runs])
        for run, value in zip(runs, np.roll(values.mean() + 2 * (values - values.mean()), 2)):
            Run.objects.filter(pk=run.pk).update(test_score=float(value))
    for task in tasks:
        report_recompute(challenge_id=task.pk)
    assert _client().get(f"/api/suites/{suite.slug}/").json() == before
