"""A new user's walk through hosting and entering challenges (newuser8, 2026-12-01): what the pages say against what
the board shows."""

from __future__ import annotations

import html as html_module
import re

import pandas as pd
import pytest

from leaderboard.models import Run
from leaderboard.services.reports import report_recompute
from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import UploadedFile, submission_create_predictions

from .factories import csv_bytes, make_user, regression_challenge, stored_recipe

pytestmark = pytest.mark.django_db


def _text(html: str) -> str:
    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", "", html)).split())


def _entry_captions(html: str) -> dict[str, str]:
    """Each entry's "<label> — N runs" details block, as text."""
    blocks = html.split("<details data-entry-details=")[1:]
    return {
        _text(block.split("</summary>")[0].split(">", 1)[1]): _text(block.split("</details>")[0]) for block in blocks
    }


def test_an_entry_s_boo_n_curve_note_follows_the_board_s_direction_and_the_entry_s_kind(client, host):
    """Under each entry's Boo_n-against-n chart the page said "Boo_n may fall with n: the best of n runs is chosen on
    validation, not on test" for every entry. On a lower-is-better board (the new user's cost board of a scoring
    program, here RMSE) falling is the expected direction (the section's own caption says "Lower is better here, so a
    curve falls as n grows"), the surprise is a rise; and a prediction entry's files have no validation score, so its
    best of n is chosen on test (README) and its curve never moves against the board: the note was wrong for both. The
    prediction section's caption under the curves explained the same non-existent rise by validation scores."""
    challenge, frame, _ = regression_challenge(host, k_runs=5, bootstrap_resamples=200, allow_recipes=True)
    test = frame[frame.is_test == 1]
    truth = test.target.astype(float).to_numpy()
    files = [
        UploadedFile(f"p{i}.csv", csv_bytes(pd.DataFrame({"id": test.id.to_numpy(), "prediction": truth + shift})))
        for i, shift in enumerate((0.5, 1.0, 2.0))
    ]
    sub = submission_create_predictions(challenge=challenge, user=make_user("pia"), method_name="Files", files=files)
    submission_score(submission_id=sub.pk)
    recipe = stored_recipe(challenge, make_user("quinn"), "Retrained", 5, scores=[1.0, 1.2, 0.9, 1.1, 1.3])
    for run, valid in zip(recipe.runs.order_by("index"), (0.5, 0.1, 0.9, 0.3, 0.7), strict=True):
        Run.objects.filter(pk=run.pk).update(valid_score=valid)
    report_recompute(challenge_id=challenge.pk, force=True)
    html = client.get(challenge.get_absolute_url()).content.decode()
    sections = {
        kind: _text(html.split(f'id="section-{kind}"')[1].split("</section>")[0]) for kind in ("recipe", "predictions")
    }
    assert "Why one can rise" in sections["recipe"], sections["recipe"]
    assert "Why one can rise" not in sections["predictions"] and "every curve falls" in sections["predictions"]
    captions = _entry_captions(html)
    files_note = next(text for label, text in captions.items() if label.startswith("Files"))
    recipe_note = next(text for label, text in captions.items() if label.startswith("Retrained"))
    assert "may fall with n" not in files_note and "chosen on validation" not in files_note, files_note
    assert "no validation score" in files_note, files_note
    assert "may fall with n" not in recipe_note, recipe_note
    assert "may rise with n: the best of n runs is chosen on validation, not on test" in recipe_note, recipe_note


def test_a_challenge_without_recipes_is_not_warned_about_recipe_entries(host):
    """The new user's prediction challenge (scoring program, k = 5, Boo_3, no recipes) came back from
    ``POST /api/challenges/`` warning "k = 5 runs per entry is fewer than the 6 the mean's interval needs: the
    leaderboard will show every recipe entry's mean without an interval, flagged "k < 6". Raise k to 6.": there is no
    recipe entry to flag, and a prediction entry's mean interval comes from the test examples whatever its number of
    files (its board showed [0.2328, 0.6064] for 5 files). Nor, ranked by Boo_n, does such a board withhold "every
    recipe entry['s] rank interval". The Boo_n warning stays for n >= 2 (prediction entries are flagged "k < 10n"
    too), not for Boo_1, which is a prediction entry's mean (evaluation.report.rows: never flagged there)."""
    from leaderboard.services.challenges import challenge_warnings

    from .factories import digits_challenge

    files_only, _ = digits_challenge(host, title="Files only", k_runs=5, allow_recipes=False, ranking_statistic="boo_n")
    said = " ".join(challenge_warnings(challenge=files_only, user=host))
    assert "recipe" not in said and "the mean's interval needs" not in said, said
    assert 'flag every entry "k < 10n". Raise k to 30.' in said, said
    boo_1, _ = digits_challenge(host, title="Files, Boo_1", k_runs=5, boo_n=1, allow_recipes=False)
    assert challenge_warnings(challenge=boo_1, user=host) == []  # Boo_1 of prediction files is their mean: no flag
    both, _ = digits_challenge(host, title="Both kinds", k_runs=5, allow_recipes=True, ranking_statistic="boo_n")
    said = " ".join(challenge_warnings(challenge=both, user=host))
    assert "every recipe entry's mean without an interval" in said, said
    assert "and, ranked by it, every recipe entry without a rank interval" in said, said


def test_your_submissions_offers_no_final_tick_for_a_public_only_phase_s_entry(host):
    """A development phase scoring the public part only: its entries cannot be final (the choice refuses them), and
    "Your submissions" no longer offers their tick (newuser8: ticked, then refused on saving); a final-phase entry
    keeps its tick. The refusal's reason is the tick's title (services.submissions.final_candidate_refusal)."""
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard.models import Phase, Submission
    from leaderboard.services.phases import phase_create

    from .factories import digits_challenge
    from .test_published_values import client_for

    now = timezone.now()
    challenge, _ = digits_challenge(
        host, public_fraction=0.5, k_runs=6, opens_at=now - timedelta(days=10), closes_at=now - timedelta(days=5)
    )
    dev = challenge.phases.get()
    Phase.objects.filter(pk=dev.pk).update(test_rows="public")
    final = phase_create(
        challenge=challenge,
        user=host,
        name="final",
        opens_at=now - timedelta(days=4),
        closes_at=now + timedelta(days=1),
        test_rows="all",
    )
    alice = make_user("nu8alice")
    early = stored_recipe(challenge, alice, "early", 6, [0.7] * 6)
    late = stored_recipe(challenge, alice, "late", 6, [0.71] * 6)
    Submission.objects.filter(pk=early.pk).update(phase=dev)
    Submission.objects.filter(pk=late.pk).update(phase=final)
    page = client_for(alice).get(f"/c/{challenge.slug}/").content.decode()
    rows = {sid: page[page.index(f'data-submission="{sid}"') :].split("</tr>")[0] for sid in (early.pk, late.pk)}
    assert "data-final" in rows[late.pk] and "data-final-refused" not in rows[late.pk]
    assert 'name="final"' not in rows[early.pk] and "data-final-refused" in rows[early.pk]
    assert 'class="muted small nowrap"' in rows[early.pk]  # "not eligible" on one line in its narrow column
    assert "scores on the public part only; it cannot be on the private board" in rows[early.pk]
    assert "Entries marked “not eligible” cannot be on the private board" in page  # said in words, not only a title
