"""Issue 23 across a phase change (slow lane): a development phase scoring the public part only, then a final phase
scoring every hidden row; entries of both phases, one entry with a version in each. Before and after the reveal the
public board's surfaces agree (test_board_surfaces_seeded._problems); the private board lists final-phase entries
only, its CSV and history read its JSON numbers, and an incremental update equals a forced full recomputation.
Searched by stats10: seeds 0-2 (4 teams x 3 entries, 6 runs): no counterexample; one is kept here."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import numpy as np
import pytest
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from leaderboard.models import Phase, Run, Submission
from leaderboard.services.boards import board_scope
from leaderboard.services.challenges import challenge_reveal
from leaderboard.services.history import history_entry
from leaderboard.services.phases import phase_create
from leaderboard.services.reports import report_current, report_recompute

from .factories import digits_challenge, make_user, stored_recipe
from .test_board_surfaces_seeded import VOLATILE, _problems
from .test_published_values import client_for

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def _stored(challenge, user, name, phase, public, private):
    sub = stored_recipe(challenge, user, name, len(public), list(public))
    Submission.objects.filter(pk=sub.pk).update(phase=phase)
    for run, p, q in zip(sub.runs.order_by("index"), public, private):
        scored = phase.test_rows == "all"
        Run.objects.filter(pk=run.pk).update(
            public_score=p, private_score=q if scored else None, test_score=(p + q) / 2 if scored else p
        )
    return sub


def _strip(data: dict) -> list:
    return [{k: v for k, v in e.items() if k not in VOLATILE} for e in data["entries"]]


@pytest.mark.parametrize("seed", [1])
def test_every_surface_agrees_across_a_phase_change_and_the_reveal(host, seed):
    rng = np.random.default_rng(4000 + seed)
    now = timezone.now()
    challenge, _ = digits_challenge(
        host,
        title=f"Phases {seed}",
        public_fraction=0.5,
        bootstrap_resamples=200,
        k_runs=6,
        opens_at=now - timedelta(days=10),
        closes_at=now - timedelta(days=5),
    )
    dev = challenge.phases.get()
    Phase.objects.filter(pk=dev.pk).update(test_rows="public")
    dev.refresh_from_db()
    final = phase_create(
        challenge=challenge,
        user=host,
        name="final",
        opens_at=now - timedelta(days=4),
        closes_at=now + timedelta(days=1),
        test_rows="all",
    )
    phase_of = {}
    for i in range(4):
        user = make_user(f"ph{seed}u{i}")
        for phase, name in ((dev, "same"), (final, "same"), (final if i % 2 else dev, f"other{i}")):
            public, private = (np.round(0.7 + 0.05 * rng.standard_normal(6), 3) for _ in range(2))
            phase_of[_stored(challenge, user, name, phase, public, private).pk] = phase.name
            report_recompute(challenge_id=challenge.pk)
    _, problems = _problems(challenge)
    assert not problems, problems
    challenge_reveal(challenge=challenge, user=host)
    challenge.refresh_from_db()
    incremental = report_current(challenge=challenge, board="private").data
    report_recompute(challenge_id=challenge.pk, force=True)
    assert _strip(incremental) == _strip(report_current(challenge=challenge, board="private").data)
    reader = client_for()
    rows = {
        r["submission_id"]: r
        for r in reader.get(f"/api/challenges/{challenge.slug}/leaderboard/?board=private&limit=100").json()["entries"]
    }
    assert rows and all(phase_of[sid] == "final" for sid in rows), [(sid, phase_of[sid]) for sid in rows]
    body = b"".join(
        reader.get(f"/api/challenges/{challenge.slug}/leaderboard/?board=private&format=csv").streaming_content
    )
    table = {int(line["submission_id"]): line for line in csv.DictReader(io.StringIO(body.decode()))}
    assert set(table) == set(rows)
    scope = board_scope(challenge=challenge, user=AnonymousUser(), board="private")
    for sid, row in rows.items():
        assert float(table[sid]["mean.estimate"]) == row["mean"]["estimate"]
        assert table[sid]["rank_display"].lstrip("'") == row["rank_display"]
        last = history_entry(challenge=challenge, submission_id=sid, scope=scope)["private"]
        assert last and (last[-1]["value"], last[-1]["rank"]) == (row["ranking_value"], row["rank"]), (last, row)
    _, problems = _problems(challenge)
    assert not problems, problems
