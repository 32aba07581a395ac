"""A new user's Boo_1 board (boo_n = 1, ranked by Boo_1): a prediction entry of 3 files showed Boo_1 = 0.9877 with
the "k < 6" flag and no interval ("fewer than 6, as for the mean") beside its mean 0.9877 in [0.8911, 0.9987] from
the test examples and files. Boo_1 is the mean of the runs (Bajgar et al. 2018, eq. 7): the page shows the mean's
interval for it, as for a recipe entry (evaluation.report.rows.boo_1_as_the_mean), and says nothing of its having none."""

from __future__ import annotations

import pytest

from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import submission_create_predictions

from .factories import digits_challenge, make_user
from .test_newuser7 import _files, _text

pytestmark = pytest.mark.django_db


def test_a_prediction_entry_s_boo_1_shows_its_mean_s_interval_on_a_boo_1_board(client, host):
    challenge, frame = digits_challenge(
        host, title="Boo one", k_runs=3, boo_n=1, ranking_statistic="boo_n", bootstrap_resamples=200
    )
    sub = submission_create_predictions(
        challenge=challenge, user=make_user("pia"), method_name="Good", files=_files(frame, [0.99, 0.98, 0.99])
    )
    submission_score(submission_id=sub.pk)
    report = client.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    (row,) = report["entries"]
    assert row["runs_succeeded"] == 3 and row["mean"]["low"] is not None
    assert [row["boo_n"].get(key) for key in ("low", "high", "method", "source")] == [
        row["mean"][key] for key in ("low", "high", "method", "source")
    ]
    assert not row["boo_n"].get("warning") and report["settings"]["boo_n_warning"] is None
    html = client.get(challenge.get_absolute_url()).content.decode()
    assert "data-boo-n-withheld" not in html
    boon = html[html.index("data-boon>") :].split("</td>")[0]
    assert "data-boon-interval" in boon, _text(boon)
    assert "no interval" not in _text(html[html.index("<table") : html.index("</table>")])
