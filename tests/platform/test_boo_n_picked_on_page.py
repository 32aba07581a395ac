"""A recipe entry without validation scores has its Boo_n's best run picked on test scores: its row on the page says
so ("picked on test"), and "How to read this" counts such entries on a Boo_n board (stats19's finding on the real runs:
the same 74 runs read Boo_3 0.6899 without their validation scores, 0.6854 with them, ranks 1 and 2)."""

from __future__ import annotations

import numpy as np
import pytest

from .factories import digits_challenge, make_user
from .test_report_api import add_entry

pytestmark = pytest.mark.django_db


def test_the_page_marks_the_entry_picked_on_test_and_the_note_counts_it(client):
    host = make_user("host")
    challenge, _ = digits_challenge(
        host, k_runs=30, boo_n=3, ranking_statistic="boo_n", bootstrap_resamples=200, master_seed=7
    )
    rng = np.random.default_rng(19)
    test = 0.8 + 0.01 * rng.standard_normal(30)
    add_entry(challenge, host, "with-valid", "recipe", test, valid=test + 0.01 * rng.standard_normal(30))
    add_entry(challenge, host, "no-valid", "recipe", test)
    page = client.get(f"/c/{challenge.slug}/").content.decode()
    assert page.count("data-boo-n-picked-on-test") == 1
    row = page[page.index("no-valid") :]
    assert row.index("data-boo-n-picked-on-test") < row.index("</tr>")
    assert "1 entry has no validation scores: its Boo_3 picks the best run on the test scores" in page
    # its rank intervals are shown (k = 30 = 10n), and the account of the design says what they resample
    assert "rank intervals resample\n      the 30 seed-paired runs most of them share" in page
    data = client.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    picked = {e["method_name"]: e["boo_n"]["picked_on"] for e in data["entries"]}
    assert picked == {"with-valid": "validation", "no-valid": "test"}
