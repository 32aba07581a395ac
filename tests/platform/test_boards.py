"""Public and private boards: before the reveal nothing a contestant reads depends on a private row; after it
both boards are right. Also entries and versions, final selection, phases and their quotas, rescoring, audit."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.models import AuditEntry, Challenge, ReportVersion, Run, Submission
from leaderboard.services.boards import board_public_mask
from leaderboard.services.dataset_files import dataset_hidden_labels, dataset_test_ids
from leaderboard.services.errors import ChallengeClosed, QuotaExceeded, ServiceError
from leaderboard.services.phases import phase_create
from leaderboard.services.reports import report_recompute
from leaderboard.services.rescoring import challenge_rescore
from leaderboard.services.scoring import submission_rescore, submission_score
from leaderboard.services.submissions import UploadedFile, submission_create_predictions

from .factories import PASSWORD, csv_bytes, digits_challenge

pytestmark = pytest.mark.django_db


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        assert client.login(username=user.username, password=PASSWORD)
    return client


def predictions(challenge: Challenge, labels) -> bytes:
    ids = dataset_test_ids(dataset=challenge.dataset)
    return csv_bytes(pd.DataFrame({"id": ids, "prediction": list(labels)}))


def submit(challenge, user, labels, name="m", **kwargs) -> Submission:
    submission = submission_create_predictions(
        challenge=challenge,
        user=user,
        method_name=name,
        files=[UploadedFile("p.csv", predictions(challenge, labels))],
        **kwargs,
    )
    submission_score(submission_id=submission.pk)
    report_recompute(challenge_id=challenge.pk)
    return Submission.objects.get(pk=submission.pk)


@pytest.fixture
def two_boards(host, alice, bob):
    """Alice's and Bob's files agree on the public rows; on the private rows Alice is right, Bob wrong."""
    challenge, _ = digits_challenge(host, public_fraction=0.5, bootstrap_resamples=200, title="Boards")
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    public = board_public_mask(dataset=challenge.dataset)
    rng = np.random.default_rng(0)
    base = np.where(rng.random(len(truth)) < 0.7, truth, "0")
    wrong = np.array([str((int(t) + 1) % 10) for t in truth])
    a = submit(challenge, alice, np.where(public, base, truth), "alice's model")
    b = submit(challenge, bob, np.where(public, base, wrong), "bob's model")
    return challenge, a, b, truth, public


# Everything a contestant or a reader can open, JSON and pages alike.
READABLE = [
    "/api/challenges/{slug}/",
    "/api/challenges/{slug}/leaderboard/",
    "/api/challenges/{slug}/leaderboard/?format=csv",
    "/api/challenges/{slug}/runs/",
    "/api/challenges/{slug}/runs/?format=csv",
    "/api/challenges/{slug}/sota/",
    "/api/challenges/{slug}/compare/?a={a}&b={b}",
    "/api/submissions/{a}/",
    "/api/submissions/{b}/",
    "/api/challenges/{slug}/submissions/",
    "/c/{slug}/",
    "/c/{slug}/compare/?a={a}&b={b}",
    "/submissions/{a}/",
    "/submissions/{b}/",
    "/api/challenges/{slug}/leaderboard/?statistic=boo_n&n=2",
]
VOLATILE = re.compile(r"\d{4}-\d\d-\d\dT?[ \d:.+Z-]*|\"ETag\"|W?/?\"[0-9a-f]{32}\"|csrfmiddlewaretoken\" value=\"\w+\"")


def crawl(client, challenge, a, b) -> dict[str, str]:
    out = {}
    for url in READABLE:
        url = url.format(slug=challenge.slug, a=a.pk, b=b.pk)
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        body = b"".join(response.streaming_content) if response.streaming else response.content  # CSV streams
        out[url] = VOLATILE.sub("", body.decode())
    return out


def relabel_private_rows(challenge, host, truth, public) -> None:
    """Change every private row's hidden label (public ones stay) and rescore, as a host correcting labels would."""
    changed = np.where(public, truth, [str((int(t) + 3) % 10) for t in truth])
    labels = csv_bytes(pd.DataFrame({"id": dataset_test_ids(dataset=challenge.dataset), "label": changed}))
    challenge_rescore(challenge=challenge, user=host, hidden_labels=("labels.csv", labels))
    for submission_id in challenge.submissions.values_list("pk", flat=True):
        submission_rescore(submission_id=submission_id)
    report_recompute(challenge_id=challenge.pk)


def test_before_the_reveal_no_number_a_contestant_reads_depends_on_a_private_row(two_boards, host, alice):
    challenge, a, b, truth, public = two_boards
    ra, rb = Run.objects.get(submission=a), Run.objects.get(submission=b)
    assert ra.public_score == rb.public_score and ra.private_score == 1.0 and rb.private_score == 0.0
    viewers = {"anonymous": APIClient(), "alice": client_for(alice)}
    before = {name: crawl(viewer, challenge, a, b) for name, viewer in viewers.items()}
    relabel_private_rows(challenge, host, truth, public)
    ra.refresh_from_db()
    assert ra.private_score == 0.0 and ra.test_score != Run.objects.get(submission=a).public_score  # it did change
    for name, viewer in viewers.items():
        after = crawl(viewer, challenge, a, b)
        for url in READABLE:
            url = url.format(slug=challenge.slug, a=a.pk, b=b.pk)
            # Every private label changed, every public one stayed: every page reads the same.
            assert after[url] == before[name][url], (name, url)
        runs = viewer.get(f"/api/challenges/{challenge.slug}/runs/").json()["results"]
        assert {run["private_score"] for run in runs} == {None}
        assert {run["test_score"] for run in runs} == {ra.public_score}
        for board in ("private",):
            response = viewer.get(f"/api/challenges/{challenge.slug}/leaderboard/?board={board}")
            assert response.status_code in (401, 403), response.content
        assert viewer.get(f"/c/{challenge.slug}/?board=private").status_code == 403


def test_after_the_reveal_both_boards_are_right(two_boards, host, alice):
    challenge, a, b, truth, public = two_boards
    host_client = client_for(host)
    private = host_client.get(f"/api/challenges/{challenge.slug}/leaderboard/?board=private").json()
    assert private["board"] == "private"
    assert client_for(alice).post(f"/api/challenges/{challenge.slug}/reveal/").status_code == 403
    response = host_client.post(f"/api/challenges/{challenge.slug}/reveal/")
    assert response.status_code == 200 and response.json()["private_board_revealed"] is True
    report_recompute(challenge_id=challenge.pk)
    for viewer in (APIClient(), client_for(alice)):
        public_board = viewer.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
        private_board = viewer.get(f"/api/challenges/{challenge.slug}/leaderboard/?board=private").json()
        pub = {row["method_name"]: row for row in public_board["entries"]}
        prv = {row["method_name"]: row for row in private_board["entries"]}
        expected_public = float(np.mean(Run.objects.get(submission=a).public_score))
        assert pub["alice's model"]["mean"]["estimate"] == pytest.approx(expected_public)
        assert pub["bob's model"]["mean"]["estimate"] == pytest.approx(expected_public)
        assert prv["alice's model"]["mean"]["estimate"] == pytest.approx(1.0)
        assert prv["bob's model"]["mean"]["estimate"] == pytest.approx(0.0)
        assert prv["alice's model"]["rank"] == 1 and prv["bob's model"]["rank"] == 2
        assert prv["bob's model"]["public_rank"] is not None and "rank_change" in prv["bob's model"]
        runs = viewer.get(f"/api/challenges/{challenge.slug}/runs/?board=private").json()["results"]
        assert sorted(run["test_score"] for run in runs) == [0.0, 1.0]
        page = viewer.get(f"/c/{challenge.slug}/?board=private").content.decode()
        assert "data-rank-change" in page
        # the entry's page shows both scores, as Kaggle does once the private board is out
        entry = viewer.get(f"/submissions/{a.pk}/").content.decode()
        other = re.search(r'data-other-board-score="private">(.*?)</p>', entry, re.S).group(1)
        assert "<strong>1.0000</strong> · rank <strong>1</strong>" in other and "?board=private" in other
    assert AuditEntry.objects.filter(challenge=challenge, action="private_board_revealed").count() == 1


def test_the_public_fraction_is_stratified_and_returned(host):
    challenge, _ = digits_challenge(host, public_fraction=0.4)
    body = client_for(host).get(f"/api/challenges/{challenge.slug}/").json()
    assert body["public_fraction"] == 0.4 and body["private_board_revealed"] is False
    mask = board_public_mask(dataset=challenge.dataset)
    labels = dataset_hidden_labels(dataset=challenge.dataset)
    for label in np.unique(labels):
        members = labels == label
        assert abs(mask[members].sum() - 0.4 * members.sum()) <= 0.5 + 1e-9
    anonymous = APIClient().get(f"/api/challenges/{challenge.slug}/").json()
    assert "version" not in anonymous["dataset"]  # a hash over the hidden labels: hosts only


@pytest.mark.parametrize("fraction", [0, 1.5, -0.1])
def test_bad_public_fraction_is_refused(host, fraction):
    with pytest.raises(ServiceError, match="public_fraction"):
        digits_challenge(host, public_fraction=fraction)


def test_identical_resubmission_is_refused_naming_the_earlier_one(challenge, alice):
    challenge, frame = challenge
    labels = ["1"] * challenge.dataset.n_test
    first = submit(challenge, alice, labels, "first")
    with pytest.raises(ServiceError, match=f"submission {first.pk}"):
        submit(challenge, alice, labels, "second")


def test_the_same_predictions_re_encoded_are_the_same_submission(challenge, alice):
    """Found by a contestant: one file re-encoded (a BOM, CRLF line ends, spaces after the commas, the columns
    swapped) passed the resubmission check four times, each scored alike and charged to the quota. (The same file
    twice in one submission is still taken: a deterministic method's runs are alike, and the design effect gives
    such files the interval of one.)"""
    challenge, frame = challenge
    ids = dataset_test_ids(dataset=challenge.dataset)
    labels = ["1"] * len(ids)
    first = submit(challenge, alice, labels, "first")
    plain = "id,prediction\n" + "".join(f"{i},{label}\n" for i, label in zip(ids, labels))
    variants = {
        "bom.csv": ("\ufeff" + plain).encode(),
        "crlf.csv": plain.replace("\n", "\r\n").encode(),
        "swapped.csv": ("prediction,id\n" + "".join(f"{label},{i}\n" for i, label in zip(ids, labels))).encode(),
        "reordered.csv": (
            "id,prediction\n" + "".join(f"{i},{label}\n" for i, label in reversed(list(zip(ids, labels))))
        ).encode(),
    }
    for name, data in variants.items():
        with pytest.raises(ServiceError, match=f"submission {first.pk}"):
            submission_create_predictions(
                challenge=challenge, user=alice, method_name=name, files=[UploadedFile(name, data)]
            )
    assert Submission.objects.filter(challenge=challenge).count() == 1


def test_a_development_file_can_be_resubmitted_in_the_final_phase(host, alice):
    """Found by a new host: a file made in a development phase on the public rows was refused in the final phase as
    'submitted exactly this already', and could not be selected for the private board either: only a changed file
    could reach it. The same file on other test rows is taken again; on the same rows it is still refused."""
    from datetime import timedelta

    from leaderboard.models import Phase

    now = timezone.now()
    challenge, _ = digits_challenge(host, public_fraction=0.5, bootstrap_resamples=200)
    development = challenge.phases.get()
    Phase.objects.filter(pk=development.pk).update(test_rows="public", closes_at=now + timedelta(days=3))
    final = phase_create(
        challenge=challenge, user=host, name="final", opens_at=now + timedelta(days=3), test_rows="all"
    )
    labels = ["1"] * challenge.dataset.n_test
    first = submit(challenge, alice, labels, "m")
    # the development phase is over, the final one open
    Phase.objects.filter(pk=development.pk).update(opens_at=now - timedelta(days=9), closes_at=now - timedelta(days=1))
    Phase.objects.filter(pk=final.pk).update(opens_at=now - timedelta(days=1))
    second = submit(challenge, alice, labels, "m")  # the same file, now scored on every row
    assert second.phase_id == final.pk and first.phase_id == development.pk
    with pytest.raises(ServiceError, match=f"submission {second.pk}"):
        submit(challenge, alice, labels, "again")  # twice on the same rows: refused as before


def test_a_new_submission_under_the_same_name_is_a_new_version(challenge, alice, host):
    challenge, _ = challenge
    n = challenge.dataset.n_test
    submit(challenge, alice, ["1"] * n, "mlp")
    latest = submit(challenge, alice, ["2"] * n, "mlp")
    board = APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    assert [(r["submission_id"], r["version"], r["versions"]) for r in board["entries"]] == [(latest.pk, 2, 2)]
    page = client_for(alice).get(f"/submissions/{latest.pk}/").content.decode()
    assert "Versions of this entry" in page
    assert board["settings"]["m_total"]["predictions"] == 2  # both versions were scored on the test rows


def test_final_selection_is_limited_and_defaults_to_the_best(host, alice):
    challenge, _ = digits_challenge(host, public_fraction=0.5, final_entries=1, bootstrap_resamples=200)
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    good = submit(challenge, alice, truth, "good")
    poor = submit(challenge, alice, ["0"] * len(truth), "poor")
    host_client = client_for(host)
    board = host_client.get(f"/api/challenges/{challenge.slug}/leaderboard/?board=private").json()
    assert [row["submission_id"] for row in board["entries"]] == [good.pk]  # best 1 by default
    api = client_for(alice)
    assert api.post(f"/api/submissions/{poor.pk}/select/", {"selected": True}).status_code == 200
    refused = api.post(f"/api/submissions/{good.pk}/select/", {"selected": True})
    assert refused.status_code == 400 and str(poor.pk) in refused.json()["detail"]
    report_recompute(challenge_id=challenge.pk)
    board = host_client.get(f"/api/challenges/{challenge.slug}/leaderboard/?board=private").json()
    assert [row["submission_id"] for row in board["entries"]] == [poor.pk]


def test_phases_take_submissions_in_turn_and_count_files(host, alice):
    now = timezone.now()
    challenge, _ = digits_challenge(host, public_fraction=0.5, closes_at=now + timezone.timedelta(days=2))
    dev = challenge.phases.get()
    dev.closes_at, dev.test_rows, dev.daily_file_quota = now + timezone.timedelta(hours=1), "public", 2
    dev.save()
    final = phase_create(
        challenge=challenge,
        user=host,
        name="final",
        order=1,
        opens_at=now + timezone.timedelta(hours=1),
        closes_at=now + timezone.timedelta(days=2),
    )
    n = challenge.dataset.n_test
    first = submit(challenge, alice, ["1"] * n)
    assert first.phase == dev and Run.objects.get(submission=first).private_score is None
    files = [UploadedFile(f"p{i}.csv", predictions(challenge, [str(i)] * n)) for i in (2, 3)]
    with pytest.raises(QuotaExceeded, match="files"):
        submission_create_predictions(challenge=challenge, user=alice, method_name="two", files=files)
    response = client_for(alice).post(
        f"/api/challenges/{challenge.slug}/submissions/",
        {"method_name": "two", "files": [SimpleUploadedFile(f.name, f.data) for f in files]},
        format="multipart",
    )
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    dev.closes_at = now - timezone.timedelta(minutes=1)
    dev.save()
    final.opens_at = now - timezone.timedelta(minutes=1)
    final.save()
    later = submit(challenge, alice, ["2"] * n)
    assert later.phase == final and Run.objects.get(submission=later).private_score is not None
    final.closes_at = now - timezone.timedelta(seconds=1)
    final.save()
    with pytest.raises(ChallengeClosed, match="final phase closed"):
        submit(challenge, alice, ["3"] * n)


def test_rescoring_with_corrected_labels_keeps_the_earlier_report(challenge, host, alice):
    challenge, _ = challenge
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    submission = submit(challenge, alice, truth)
    ids = dataset_test_ids(dataset=challenge.dataset)
    corrected = truth.copy()
    corrected[:5] = [str((int(t) + 1) % 10) for t in truth[:5]]
    labels = csv_bytes(pd.DataFrame({"id": ids, "label": corrected}))
    assert client_for(alice).post(f"/api/challenges/{challenge.slug}/rescore/", {}).status_code == 403
    response = client_for(host).post(
        f"/api/challenges/{challenge.slug}/rescore/",
        {"hidden_labels": SimpleUploadedFile("fixed.csv", labels)},
        format="multipart",
    )
    assert response.status_code == 202, response.content
    submission_rescore(submission_id=submission.pk)
    report_recompute(challenge_id=challenge.pk)
    run = Run.objects.get(submission=submission)
    assert run.test_score == pytest.approx(1 - 5 / len(truth))
    assert ReportVersion.objects.filter(challenge=challenge, board="public").count() == 1
    actions = set(AuditEntry.objects.filter(challenge=challenge).values_list("action", flat=True))
    assert {"hidden_labels_replaced", "rescore"} <= actions
    audit = client_for(host).get(f"/api/challenges/{challenge.slug}/audit/").json()["results"]
    assert audit[0]["actor"] == "hostess"
    assert client_for(alice).get(f"/api/challenges/{challenge.slug}/audit/").status_code == 403
    assert client_for(alice).get(f"/c/{challenge.slug}/audit/").status_code == 403
    page = client_for(host).get(f"/c/{challenge.slug}/audit/").content.decode()
    assert 'data-action="hidden_labels_replaced">hidden labels replaced<' in page
    # details in words, not Python's reprs (a new user read {'phases_ended': ['final']})
    AuditEntry.objects.create(challenge=challenge, action="phases_ended", details={"phases": ["dev", "final"], "n": 2})
    page = client_for(host).get(f"/c/{challenge.slug}/audit/").content.decode()
    assert "<code>phases</code>: dev, final</div>" in page and "['dev'" not in page and "{'" not in page


def test_settings_changes_are_audited_with_old_and_new_values(challenge, host):
    challenge, _ = challenge
    response = client_for(host).patch(
        f"/api/challenges/{challenge.slug}/", {"gamma": 0.8, "feedback": "rounded"}, format="json"
    )
    assert response.status_code == 200, response.content
    entry = AuditEntry.objects.get(challenge=challenge, action="settings_changed")
    assert entry.details["changes"] == {"gamma": [0.75, 0.8], "feedback": ["exact", "rounded"]}
    assert entry.actor == host


def test_rounded_feedback_rounds_every_public_number(challenge, alice):
    challenge, _ = challenge
    challenge.feedback, challenge.feedback_digits = "rounded", 2
    challenge.save()
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    labels = np.where(np.arange(len(truth)) % 7 == 0, "0", truth)
    submission = submit(challenge, alice, labels)
    run = APIClient().get(f"/api/challenges/{challenge.slug}/runs/").json()["results"][0]
    assert run["test_score"] == round(Run.objects.get(submission=submission).test_score, 2)
    board = APIClient().get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    mean = board["entries"][0]["mean"]
    assert mean["estimate"] == run["test_score"]  # one file: its shown score
    # its interval came from each test row's outcome, which a rounded board withholds (shown_entries)
    assert mean["low"] is None and mean["high"] is None


def test_ladder_pages_and_endpoints_show_only_the_ladder(challenge, alice):
    challenge, _ = challenge
    challenge.feedback, challenge.ladder_margin = "ladder", 0.05
    challenge.save()
    truth = dataset_hidden_labels(dataset=challenge.dataset)
    first = submit(challenge, alice, np.where(np.arange(len(truth)) % 2 == 0, truth, "0"), "a")
    second = submit(challenge, alice, np.where(np.arange(len(truth)) % 4 == 0, truth, "0"), "b")  # no better
    anonymous = APIClient()
    board = anonymous.get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    shown = {row["submission_id"]: row["mean"]["estimate"] for row in board["entries"]}
    assert shown[first.pk] == shown[second.pk]  # the second did not beat the first by η: same release
    assert all(row["mean"]["low"] is None and row["std"] is None for row in board["entries"])
    # nor the letters or the unbiased Boo_n, each an exact function of the runs (found by a two-worlds crawl)
    assert all(row["group_letters"] == [] and row["boo_n_unbiased"]["estimate"] is None for row in board["entries"])
    pair = anonymous.get(f"/api/challenges/{challenge.slug}/compare/?a={first.pk}&b={second.pk}").json()
    assert pair["a"]["run_scores"] == [] and pair["comparison"] is None
    runs = anonymous.get(f"/api/challenges/{challenge.slug}/runs/").json()["results"]
    assert {run["test_score"] for run in runs} == {None}
    assert anonymous.get(f"/api/submissions/{second.pk}/").json()["score"] == shown[first.pk]
    page = anonymous.get(f"/c/{challenge.slug}/")
    assert page.status_code == 200 and "Ladder" in page.content.decode()


def test_the_data_migration_gives_every_challenge_one_phase(transactional_db):
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    old = [("leaderboard", "0002_run_isolation_and_hidden_test_rows")]
    executor.migrate(old)
    apps = executor.loader.project_state(old).apps
    User = apps.get_model("auth", "User")
    user = User.objects.create(username="old-host")
    Challenge_ = apps.get_model("leaderboard", "Challenge")
    Team_ = apps.get_model("leaderboard", "Team")
    challenge = Challenge_.objects.create(
        slug="old", title="Old", created_by=user, metric="accuracy", higher_is_better=True, daily_quota=3, total_quota=9
    )
    submission = apps.get_model("leaderboard", "Submission").objects.create(
        challenge=challenge,
        team=Team_.objects.create(name="t"),
        submitted_by=user,
        kind="predictions",
        method_name="m",
        runs_expected=2,
    )
    apps.get_model("leaderboard", "Run").objects.create(
        submission=submission, index=0, status="succeeded", test_score=0.75
    )
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    migrated = Challenge.objects.get(slug="old")
    phase = migrated.phases.get()
    assert (phase.name, phase.daily_quota, phase.total_quota, migrated.public_fraction) == ("main", 3, 9, 1.0)
    moved = Submission.objects.get(pk=submission.pk)
    assert moved.phase == phase and moved.n_files == 2
    assert Run.objects.get(submission=moved).public_score == 0.75


def test_an_unknown_board_is_a_bad_parameter_and_a_missing_private_board_is_not_found(challenge):
    challenge, _ = challenge  # public_fraction 1: no private board
    reader = APIClient()
    nope = reader.get(f"/api/challenges/{challenge.slug}/leaderboard/?board=nope")
    assert nope.status_code == 400 and nope.json()["detail"] == "Unknown board 'nope'; choose public or private."
    assert reader.get(f"/c/{challenge.slug}/?board=nope").status_code == 400
    for path in (f"/api/challenges/{challenge.slug}/leaderboard/", f"/c/{challenge.slug}/"):
        assert reader.get(path + "?board=private").status_code == 404


def test_the_site_s_error_pages_say_the_reason_the_view_gave(challenge, alice):
    """With DEBUG off (as in production, and under pytest) Django's bare "Bad Request (400)", "403 Forbidden" and
    "Not Found" dropped the reason a page refused with, which the API gives (a new user's review). The site's pages
    say it in its own layout; Django's own reasons (the resolver's, get_object_or_404's) get a plain sentence."""
    from django.test import Client

    challenge, _ = challenge  # public_fraction 1: no private board
    reader = Client()
    nope = reader.get(f"/c/{challenge.slug}/?board=nope")
    assert nope.status_code == 400 and "Unknown board &#x27;nope&#x27;; choose public or private." in nope.text
    assert 'class="site-footer"' in nope.text  # the site's layout, not a bare line
    private = reader.get(f"/c/{challenge.slug}/?board=private")
    assert private.status_code == 404 and "This challenge has no private board" in private.text
    missing = reader.get("/c/no-such-challenge/")
    assert missing.status_code == 404 and "There is no page at this address." in missing.text
    assert "matches the given query" not in missing.text
    assert reader.get("/no/such/page/").status_code == 404
    reader.force_login(alice)
    hosts_only = reader.get(f"/c/{challenge.slug}/phases/")
    assert hosts_only.status_code == 403 and "Only the challenge&#x27;s hosts can change its phases." in hosts_only.text
    api = reader.get("/api/no-such-endpoint/")
    assert api.status_code == 404 and api["Content-Type"] == "application/json"
