"""Issue 26, host scoring programs on a challenge: uploaded by the hosts (API and edit page), checked by a worker
on the challenge's own sample submission before the challenge can be published, then scoring every prediction
file: the program's primary metric (which must give per-example outcomes) ranks the board, the others are shown
with their intervals. A program's errors reach the hosts only; a contestant whose file breaks it reads a
generic message and is charged (a refund would make the failure a free question about the labels), and after
``VARBOARD_PROGRAM_MAX_FAILURES`` failures the program is suspended until its hosts resume it. A check holds
for what it ran on (``program_check_key``); a public-only phase never shows the program a private row.

The unit lane runs the program in-process (:func:`in_process`, the same checks of its result as the sandbox's
runner); the ``slow`` tests at the end run it in the real sandbox (``leaderboard.worker.program_check``).
"""

from __future__ import annotations

import json
import textwrap
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from django.urls import reverse
from django.utils.timezone import now as timezone_now
from sklearn.metrics import f1_score

from evaluation.boards import round_floats
from evaluation.scoring_programs import ProgramScores, ScoringProgramError, parse_metrics, parse_scores
from leaderboard.choices import ProgramStatus, RunStatus, Visibility
from leaderboard.models import AuditEntry, Challenge, Run, Submission
from leaderboard.services.boards import board_public_mask
from leaderboard.services.challenges import DatasetUpload, challenge_create, challenge_update
from leaderboard.services.dataset_files import dataset_hidden_labels, dataset_test_ids
from leaderboard.services.dispatch import CHECK_SCORING_PROGRAM
from leaderboard.services.errors import ServiceError
from leaderboard.services.metrics import (
    RECIPES_REFUSED,
    challenge_metrics,
    primary_metric,
    program_primary_error,
)
from leaderboard.services.programs import (
    PROGRAM_FAILED,
    program_check_key,
    program_checks_resend,
    program_store_check,
    program_truth,
    program_upload,
)
from leaderboard.services.reports import report_current, report_recompute
from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import UploadedFile, submission_create_predictions

from .factories import csv_bytes, make_user
from .test_boards import client_for

pytestmark = pytest.mark.django_db

PROGRAM = (Path(__file__).parent / "programs" / "cost_and_macro_f1.py").read_bytes()
CLASSES = ("cat", "dog", "fox")
COSTS = {("cat", "fox"): 5.0, ("fox", "cat"): 5.0}


def animals_challenge(host, **overrides) -> Challenge:
    """A 3-class prediction challenge (cat, dog, fox), 150 rows of which 60 are hidden test rows; private."""
    rng = np.random.default_rng(11)
    n = 150
    frame = pd.DataFrame({"id": [f"a{i:03d}" for i in range(n)], "x1": rng.normal(size=n), "x2": rng.normal(size=n)})
    frame["label"] = np.array(CLASSES)[rng.integers(0, 3, n)]
    frame["is_test"] = (np.arange(n) % 5 < 2).astype(int)
    fields = dict(
        title="Animals",
        metric="accuracy",
        k_runs=3,
        allow_predictions=True,
        allow_recipes=False,
        bootstrap_resamples=200,
        master_seed=5,
        visibility=Visibility.PRIVATE,
    )
    fields.update(overrides)
    upload = DatasetUpload(
        data=csv_bytes(frame), filename="animals.csv", id_column="id", label_column="label", test_column="is_test"
    )
    return challenge_create(created_by=host, dataset=upload, **fields)


def in_process(source: bytes, y_true: pd.DataFrame, y_pred: pd.DataFrame) -> ProgramScores:
    """The program run in this process, its result checked as the sandbox's runner checks it (unit lane)."""
    namespace: dict = {}
    exec(compile(source, "scoring.py", "exec"), namespace)  # noqa: S102 - the tests' own program
    metrics = parse_metrics(namespace["METRICS"])
    raw = namespace["score"](y_true.copy(), y_pred.copy())
    as_json = json.loads(json.dumps(raw, default=lambda value: value.tolist()))  # as the harness sends it back
    return parse_scores(as_json, metrics, len(y_true))


def metrics_in_process(source: bytes):
    namespace: dict = {}
    exec(compile(source, "scoring.py", "exec"), namespace)  # noqa: S102 - the tests' own program
    return parse_metrics(namespace["METRICS"])


def check_in_process(challenge: Challenge, run=in_process) -> Challenge:
    """The worker's check (``leaderboard.worker.program_check``), with :func:`in_process` in place of the sandbox."""
    from leaderboard.worker.program_check import program_check

    program_check(challenge_id=challenge.pk, run=run, read_metrics=metrics_in_process)
    challenge.refresh_from_db()
    return challenge


def cost(truth, guess) -> np.ndarray:
    return np.array([0.0 if t == p else COSTS.get((t, p), 1.0) for t, p in zip(truth, guess)])


def guesses(truth: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    wrong = np.array(CLASSES)[rng.integers(0, 3, truth.size)]
    return np.where(rng.random(truth.size) < fraction, truth, wrong)


def submit(challenge, user, labels_list, name, runner=in_process) -> Submission:
    ids = dataset_test_ids(dataset=challenge.dataset)
    files = [
        UploadedFile(f"p{i}.csv", csv_bytes(pd.DataFrame({"id": ids, "prediction": list(labels)})))
        for i, labels in enumerate(labels_list)
    ]
    submission = submission_create_predictions(challenge=challenge, user=user, method_name=name, files=files)
    submission_score(submission_id=submission.pk, runner=runner)
    return Submission.objects.get(pk=submission.pk)


def ready(host, **overrides) -> Challenge:
    """An animals challenge with the program uploaded, checked (in-process) and published."""
    challenge = animals_challenge(host, **overrides)
    program_upload(challenge=challenge, user=host, data=PROGRAM)
    challenge = check_in_process(challenge)
    assert challenge.program_status == ProgramStatus.OK, challenge.program_error
    return challenge_update(challenge=challenge, user=host, visibility=Visibility.PUBLIC)


# -- the pure parts: which metric ranks, which are shown, what is refused -----------------------------------------


def test_the_programs_primary_ranks_and_its_other_metrics_are_the_secondary_ones(host):
    challenge = animals_challenge(host)
    assert primary_metric(challenge).name == "accuracy" and challenge_metrics(challenge) == []
    challenge = ready(host, title="Ranked")
    primary = primary_metric(challenge)
    assert (primary.name, primary.label, primary.higher_is_better) == ("cost", "Cost-weighted error", False)
    assert (primary.from_mean, primary.score_range) == (None, (None, None))
    assert [(m.name, m.label, m.higher_is_better) for m in challenge_metrics(challenge)] == [
        ("macro_f1", "Macro F1", True)
    ]
    assert challenge.higher_is_better is False and challenge.metric == "accuracy"  # accuracy: the files' format
    challenge_update(challenge=challenge, user=host, title="Renamed", higher_is_better=False)  # no contradiction
    with pytest.raises(ServiceError, match="direction is the scoring program's primary metric's"):
        challenge_update(challenge=challenge, user=host, higher_is_better=True)


def test_a_primary_metric_without_per_example_outcomes_is_refused_naming_it(host):
    metrics = parse_metrics([{"name": "f1", "higher_is_better": True}, {"name": "cost", "higher_is_better": False}])
    assert program_primary_error(metrics, ["f1", "cost"]) is None
    problem = program_primary_error(metrics, ["cost"])
    assert "'f1'" in problem and "outcomes" in problem
    challenge = animals_challenge(host)
    program_upload(challenge=challenge, user=host, data=PROGRAM)
    challenge.refresh_from_db()
    stored = program_store_check(
        challenge_id=challenge.pk,
        program=challenge.scoring_program.name,
        metrics=metrics,
        outcome_names=["cost"],
        key=program_check_key(challenge),
    )
    assert stored.program_status == ProgramStatus.FAILED and "'f1'" in stored.program_error
    with pytest.raises(ServiceError, match="scoring program is not checked.*'f1'"):
        challenge_update(challenge=stored, user=host, visibility=Visibility.PUBLIC)


def test_built_in_secondary_metrics_and_a_program_are_exclusive(host):
    with_secondary = animals_challenge(host, secondary_metrics=["macro_f1"], title="Both")
    with pytest.raises(ServiceError, match="either built-in secondary_metrics or a scoring program"):
        program_upload(challenge=with_secondary, user=host, data=PROGRAM)
    challenge = ready(host)
    with pytest.raises(ServiceError, match="either built-in secondary_metrics or a scoring program"):
        challenge_update(challenge=challenge, user=host, secondary_metrics=["macro_f1"])


def test_recipe_challenges_keep_the_built_in_metrics(host):
    recipes = animals_challenge(host, allow_recipes=True, title="Recipes")
    with pytest.raises(ServiceError, match=RECIPES_REFUSED):
        program_upload(challenge=recipes, user=host, data=PROGRAM)
    challenge = ready(host)
    with pytest.raises(ServiceError, match="recipe challenges use the built-in metrics"):
        challenge_update(challenge=challenge, user=host, allow_recipes=True)


# -- upload and check through the API and the edit page -----------------------------------------------------------


def test_the_api_uploads_checks_shows_and_removes_a_program_for_hosts_only(
    host, queued, django_capture_on_commit_callbacks
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    challenge = animals_challenge(host)
    url = f"/api/challenges/{challenge.slug}/scoring-program/"
    hostess, other = client_for(host), client_for(make_user("nosy"))
    upload = {"program": SimpleUploadedFile("mine.py", PROGRAM, content_type="text/x-python")}
    assert other.put(url, upload, format="multipart").status_code in (403, 404)
    with django_capture_on_commit_callbacks(execute=True):
        response = hostess.put(url, {"program": SimpleUploadedFile("mine.py", PROGRAM)}, format="multipart")
    assert response.status_code == 202, response.content
    assert response.json() == {"status": "checking", "metrics": [], "error": "", "checked_at": None, "failures": 0}
    assert queued.ids(CHECK_SCORING_PROGRAM) == [challenge.pk] and queued.queues(CHECK_SCORING_PROGRAM) == [None]
    refused = hostess.patch(f"/api/challenges/{challenge.slug}/", {"visibility": "public"}, format="json")
    assert refused.status_code == 400 and "has not finished yet" in refused.content.decode()
    check_in_process(challenge)
    body = hostess.get(url).json()
    assert body["status"] == "ok" and body["checked_at"]
    assert [(m["name"], m["primary"]) for m in body["metrics"]] == [("macro_f1", False), ("cost", True)]
    assert other.get(url).status_code in (403, 404)
    assert hostess.delete(url).json()["status"] == ""
    challenge.refresh_from_db()
    assert not challenge.scoring_program and challenge.higher_is_better is True  # accuracy's again


def test_the_edit_page_uploads_and_shows_the_check_and_its_error(host, queued):
    from django.core.files.uploadedfile import SimpleUploadedFile

    challenge = animals_challenge(host)
    client = client_for(host)
    posted = client.post(
        reverse("challenge-scoring-program", kwargs={"slug": challenge.slug}),
        {"program": SimpleUploadedFile("scoring.py", PROGRAM)},
    )
    assert posted.status_code == 302
    page = client.get(reverse("challenge-edit", kwargs={"slug": challenge.slug})).content.decode()
    assert 'data-scoring-program="checking"' in page and "Being checked" in page
    challenge.refresh_from_db()
    program_store_check(
        challenge_id=challenge.pk,
        program=challenge.scoring_program.name,
        error=ScoringProgramError(
            "score(y_true, y_pred) raised ValueError: boom (line 7 of scoring.py)", kind="raised"
        ),
        key=program_check_key(challenge),
    )
    page = client.get(reverse("challenge-edit", kwargs={"slug": challenge.slug})).content.decode()
    assert "Check failed" in page and "raised ValueError: boom" in page
    contestant = client_for(make_user("peeker")).get(reverse("challenge-edit", kwargs={"slug": challenge.slug}))
    assert contestant.status_code in (403, 404)


# -- scoring ------------------------------------------------------------------------------------------------------


def _entries(challenge):
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    files = {
        "good": [guesses(truth, 0.9, 1), guesses(truth, 0.85, 4)],
        "fair": [guesses(truth, 0.7, 2)],
        "poor": [guesses(truth, 0.4, 3)],
    }
    for (name, labels), user in zip(files.items(), ("ann", "ben", "cid")):
        submit(challenge, make_user(user), labels, name)
    report_recompute(challenge_id=challenge.pk)
    return truth, files


def test_the_program_scores_each_file_on_the_test_rows_and_each_part_alone(host):
    challenge = ready(host, public_fraction=0.5)
    truth, files = _entries(challenge)
    public = board_public_mask(dataset=challenge.dataset)
    run = Run.objects.get(submission__method_name="fair")
    guess = files["fair"][0]
    assert run.status == RunStatus.SUCCEEDED and run.test_score == pytest.approx(cost(truth, guess).mean())
    assert run.outcomes_array == pytest.approx(cost(truth, guess))
    assert run.public_score == pytest.approx(cost(truth[public], guess[public]).mean())
    assert run.private_score == pytest.approx(cost(truth[~public], guess[~public]).mean())
    for part, rows in (("test", slice(None)), ("public", public), ("private", ~public)):
        expected = f1_score(truth[rows], guess[rows], average="macro")
        assert run.extra_scores[part]["macro_f1"] == pytest.approx(expected, abs=1e-12)  # each part alone
    assert Run.unpack_extra_outcomes(run.extra_outcomes) == {}  # macro-F1 gives no outcomes


def test_the_board_ranks_by_the_programs_primary_and_shows_the_secondary(host):
    challenge = ready(host)
    truth, files = _entries(challenge)
    data = report_current(challenge=challenge).data
    means = {name: np.mean([cost(truth, g).mean() for g in guess]) for name, guess in files.items()}
    assert [row["method_name"] for row in data["entries"]] == sorted(means, key=means.get)  # lower cost first
    rows = {row["method_name"]: row for row in data["entries"]}
    for name, guess in files.items():
        assert rows[name]["mean"]["estimate"] == pytest.approx(means[name])
        f1 = rows[name]["secondary"][0]
        assert f1["name"] == "macro_f1" and f1["higher_is_better"] is True
        assert f1["mean"]["estimate"] == pytest.approx(np.mean([f1_score(truth, g, average="macro") for g in guess]))
    good = rows["good"]["secondary"][0]["mean"]  # 2 files: an interval over files needs 6 (mean_interval_shown)
    assert good["low"] is None and good["se"] is not None and "6" in good["warning"]
    assert rows["fair"]["secondary"][0]["mean"]["low"] is None
    assert "no per-example outcomes" in rows["fair"]["secondary"][0]["mean"]["note"]
    body = client_for(make_user("reader")).get(f"/api/challenges/{challenge.slug}/leaderboard/").json()
    assert body["metric"] == "cost" and body["higher_is_better"] is False
    assert body["metric_label"] == "Cost-weighted error"
    assert body["secondary_metrics"] == [{"name": "macro_f1", "label": "Macro F1", "higher_is_better": True}]
    page = client_for(make_user("viewer")).get(reverse("challenge-detail", kwargs={"slug": challenge.slug}))
    text = page.content.decode()
    assert "Cost-weighted error" in text and "Macro F1 ↑" in text and "no interval (1 file)" in text


def test_a_program_failing_on_a_file_fails_the_run_for_the_hosts_only_and_charges_it(host):
    challenge = ready(host)
    secret = "hidden label cat of a007"

    def broken(source, y_true, y_pred):
        raise ScoringProgramError(f"score(y_true, y_pred) raised KeyError: {secret}", kind="raised", log=secret)

    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    contestant = make_user("dora")
    submission = submit(challenge, contestant, [truth], "mine", runner=broken)
    run = submission.runs.get()
    assert run.status == RunStatus.FAILED and run.error_message == PROGRAM_FAILED
    assert submission.counts_toward_quota is True  # a refunded failure would be a free question about the labels
    assert "counts toward your quota" in PROGRAM_FAILED
    failure = AuditEntry.objects.get(challenge=challenge, action="scoring_program_failed")
    assert secret in failure.details["error"] and failure.details["submission"] == submission.pk
    seen = client_for(contestant).get(f"/api/submissions/{submission.pk}/").content.decode()
    assert secret not in seen and "hosts have been told" in seen


def test_submissions_wait_for_a_checked_program(host, queued):
    challenge = ready(host)
    Challenge.objects.filter(pk=challenge.pk).update(program_status=ProgramStatus.CHECKING)
    challenge.refresh_from_db()
    with pytest.raises(ServiceError, match="scoring program is not ready"):
        submit(challenge, make_user("early"), [guesses(np.array(["cat"] * 60), 1.0, 0)], "early")


def test_the_program_freezes_at_the_first_submission(host):
    challenge = ready(host)
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    submit(challenge, make_user("first"), [truth], "first")
    with pytest.raises(ServiceError, match="cannot change once submissions exist"):
        program_upload(challenge=challenge, user=host, data=PROGRAM)


# -- the real sandbox (slow lane) ---------------------------------------------------------------------------------

HOSTILE = {
    "raises": (
        """
        METRICS = [{"name": "cost", "higher_is_better": False}]

        def score(y_true, y_pred):
            raise ValueError("boom " + str(y_true.iloc[0, 0]))
        """,
        "raised ValueError: boom",
    ),
    "loops": (
        """
        METRICS = [{"name": "cost", "higher_is_better": False}]

        def score(y_true, y_pred):
            while True:
                pass
        """,
        "wall-time limit",
    ),
    "reads /etc/shadow": (
        """
        METRICS = [{"name": "cost", "higher_is_better": False}]

        def score(y_true, y_pred):
            return {"cost": len(open("/etc/shadow").read())}
        """,
        "FileNotFoundError",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_program_fails_its_check_with_a_message_for_the_host_and_blocks_publishing(host, case, monkeypatch):
    from execution.sandbox import Limits
    from leaderboard.worker.program_check import program_check

    monkeypatch.setattr("execution.scoring_program.DEFAULT_LIMITS", Limits(wall_time_s=8, memory_mb=1024))
    source, message = HOSTILE[case]
    challenge = animals_challenge(host)
    program_upload(challenge=challenge, user=host, data=textwrap.dedent(source).encode())
    checked = program_check(challenge_id=challenge.pk)
    assert checked.program_status == ProgramStatus.FAILED and message in checked.program_error
    with pytest.raises(ServiceError, match="check on the sample submission failed"):
        challenge_update(challenge=checked, user=host, visibility=Visibility.PUBLIC)
    body = client_for(host).get(f"/api/challenges/{challenge.slug}/scoring-program/").json()
    assert body["status"] == "failed" and message in body["error"]


@pytest.mark.slow
def test_a_contestant_whose_file_breaks_the_program_never_sees_its_traceback(host):
    from leaderboard.worker.program_check import program_check, run_program

    source = PROGRAM.replace(
        b"def score(y_true, y_pred):\n",
        b"def score(y_true, y_pred):\n    if (y_pred['prediction'] == 'fox').all():\n"
        b"        raise KeyError('truth ' + ' '.join(y_true['label'].astype(str)))\n",
    )
    challenge = animals_challenge(host)
    program_upload(challenge=challenge, user=host, data=source)
    assert program_check(challenge_id=challenge.pk).program_status == ProgramStatus.OK  # the sample says "cat"
    challenge = challenge_update(challenge=Challenge.objects.get(pk=challenge.pk), user=host, visibility="public")
    contestant = make_user("fred")
    submission = submit(challenge, contestant, [np.array(["fox"] * challenge.dataset.n_test)], "foxes", run_program)
    seen = client_for(contestant).get(f"/api/submissions/{submission.pk}/").content.decode()
    assert PROGRAM_FAILED.split(";")[0] in seen and "truth" not in seen and "KeyError" not in seen
    assert "KeyError: 'truth" in AuditEntry.objects.get(action="scoring_program_failed").details["error"]


@pytest.mark.slow
def test_a_host_program_end_to_end_in_the_sandbox_and_through_a_bundle(
    host, queued, django_capture_on_commit_callbacks
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from leaderboard.services.bundles import bundle_export, bundle_import
    from leaderboard.worker.program_check import program_check, run_program

    challenge = animals_challenge(host, public_fraction=0.5)
    hostess = client_for(host)
    url = f"/api/challenges/{challenge.slug}/scoring-program/"
    with django_capture_on_commit_callbacks(execute=True):
        response = hostess.put(url, {"program": SimpleUploadedFile("s.py", PROGRAM)}, format="multipart")
    assert response.status_code == 202
    assert queued.ids(CHECK_SCORING_PROGRAM) == [challenge.pk]
    program_check(challenge_id=challenge.pk)
    assert hostess.get(url).json()["status"] == "ok"
    assert (
        hostess.patch(f"/api/challenges/{challenge.slug}/", {"visibility": "public"}, format="json").status_code == 200
    )
    challenge.refresh_from_db()
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    files = {"good": [guesses(truth, 0.9, 1)], "fair": [guesses(truth, 0.7, 2)], "poor": [guesses(truth, 0.4, 3)]}
    users = {name: make_user(f"u-{name}") for name in files}

    ids = dataset_test_ids(dataset=challenge.dataset)

    def board(target: Challenge) -> list:
        order = [ids.index(i) for i in dataset_test_ids(dataset=target.dataset)]  # a copy shuffles its test rows
        for name, labels in files.items():
            submit(target, users[name], [labels[0][order]], name, run_program)
        report_recompute(challenge_id=target.pk)
        body = client_for(make_user(f"reader-{target.pk}")).get(f"/api/challenges/{target.slug}/leaderboard/").json()
        assert body["metric"] == "cost"
        # the mean's se is a bootstrap's, seeded by the submission's id: the boards show the interval
        return [
            [e["method_name"], e["rank"], {k: e["mean"][k] for k in ("estimate", "low", "high")}, e["secondary"]]
            for e in body["entries"]
        ]

    original = board(challenge)
    shown = board_public_mask(dataset=challenge.dataset)  # the public board: its rows alone
    means = {name: cost(truth[shown], labels[0][shown]).mean() for name, labels in files.items()}
    assert [row[0] for row in original] == sorted(means, key=means.get)
    for name, _, mean, secondary in original:
        assert mean["estimate"] == pytest.approx(means[name], abs=1e-12)
        assert secondary[0]["mean"]["estimate"] == pytest.approx(
            f1_score(truth[shown], files[name][0][shown], average="macro"), abs=1e-12
        )
    with django_capture_on_commit_callbacks(execute=True):
        copy = bundle_import(data=bundle_export(challenge=challenge, user=host), user=host, slug="animals-copy")
    assert copy.program_status == ProgramStatus.CHECKING and queued.ids(CHECK_SCORING_PROGRAM)[-1] == copy.pk
    assert program_check(challenge_id=copy.pk).program_status == ProgramStatus.OK
    copy = challenge_update(challenge=Challenge.objects.get(pk=copy.pk), user=host, visibility="public")
    # the copy's test rows come in another order: sums differ in the last bits
    assert round_floats(board(copy), 9) == round_floats(original, 9)


def test_the_metric_cannot_be_swapped_under_a_program_by_rescoring(host):
    from leaderboard.services.rescoring import challenge_rescore

    challenge = ready(host)
    with pytest.raises(ServiceError, match="scoring program ranks the board"):
        challenge_rescore(challenge=challenge, user=host, metric="macro_f1")


def test_without_a_private_board_the_program_runs_once_per_file(host):
    challenge = ready(host)  # public_fraction 1: the public board's rows are every test row
    calls = []

    def counting(source, y_true, y_pred):
        calls.append(len(y_true))
        return in_process(source, y_true, y_pred)

    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    run = submit(challenge, make_user("once"), [truth], "once", runner=counting).runs.get()
    assert calls == [challenge.dataset.n_test] and run.test_score == run.public_score == 0.0
    assert run.extra_scores["test"] == run.extra_scores["public"] == {"macro_f1": 1.0}


# -- what keeps the hidden labels hidden ---------------------------------------------------------------------------


def _breaks(source, y_true, y_pred):
    raise ScoringProgramError("score(y_true, y_pred) raised KeyError: 'a007 is cat'", kind="raised")


def test_a_team_whose_files_break_the_program_is_blocked_alone_until_the_hosts_check_it_again(
    host, queued, settings, django_capture_on_commit_callbacks
):
    settings.VARBOARD = {**settings.VARBOARD, "PROGRAM_MAX_FAILURES": 3}
    challenge = ready(host)
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    miner, other = make_user("miner"), make_user("other")
    for probe in range(3):  # each probe costs a submission of the quota
        assert submit(challenge, miner, [truth], f"probe{probe}", runner=_breaks).counts_toward_quota is True
    challenge.refresh_from_db()
    assert challenge.program_status == ProgramStatus.OK and challenge.program_failures == 3
    with pytest.raises(ServiceError, match="Your team's files broke the host's scoring program 3 times"):
        submit(challenge, miner, [truth], "probe3")
    assert submit(challenge, other, [truth], "honest").runs.get().status == RunStatus.SUCCEEDED  # others go on
    url = f"/api/challenges/{challenge.slug}/scoring-program/"
    assert client_for(host).get(url).json()["failures"] == 3
    assert client_for(miner).post(f"{url}resume/").status_code in (403, 404)
    with django_capture_on_commit_callbacks(execute=True):
        resumed = client_for(host).post(f"{url}resume/")
    assert resumed.status_code == 202 and resumed.json()["status"] == "checking"
    assert queued.ids(CHECK_SCORING_PROGRAM)[-1] == challenge.pk
    checked = check_in_process(challenge)
    assert checked.program_status == ProgramStatus.OK and checked.program_failures == 0
    assert submit(checked, miner, [truth], "after").runs.get().status == RunStatus.SUCCEEDED
    assert client_for(host).post(f"{url}resume/").status_code == 400  # nothing to resume: said so


def test_failures_from_several_teams_suspend_the_program_and_hold_the_runs_already_queued(host, queued):
    from leaderboard.services.programs import PROGRAM_HELD_SUSPENDED, SUSPEND_AFTER_TEAMS

    challenge = ready(host)
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    teams = [make_user(f"team{i}") for i in range(SUSPEND_AFTER_TEAMS)]
    for user in teams[:-1]:
        submit(challenge, user, [truth], "breaks", runner=_breaks)
    ids = dataset_test_ids(dataset=challenge.dataset)
    files = [
        UploadedFile(f"p{i}.csv", csv_bytes(pd.DataFrame({"id": ids, "prediction": list(truth)}))) for i in range(3)
    ]
    queued_entry = submission_create_predictions(challenge=challenge, user=teams[0], method_name="queued", files=files)
    last = submit(challenge, teams[-1], [truth], "breaks", runner=_breaks)
    challenge.refresh_from_db()
    assert last.runs.get().error_message == PROGRAM_FAILED
    assert challenge.program_status == ProgramStatus.SUSPENDED and "files of 3 teams" in challenge.program_error
    assert AuditEntry.objects.filter(challenge=challenge, action="scoring_program_suspended").count() == 1
    calls = []
    submission_score(submission_id=queued_entry.pk, runner=lambda *args: calls.append(args))
    held = Submission.objects.get(pk=queued_entry.pk)
    assert calls == [] and {run.error_message for run in held.runs.all()} == {PROGRAM_HELD_SUSPENDED}
    with pytest.raises(ServiceError, match="scoring program is suspended"):
        submit(challenge, make_user("late"), [truth], "late")


def _two_files_scored(challenge, truth, runner) -> Submission:
    """A prober's entry of two files (both the truth), scored by ``runner``, read back."""
    ids = dataset_test_ids(dataset=challenge.dataset)
    files = [
        UploadedFile(f"p{i}.csv", csv_bytes(pd.DataFrame({"id": ids, "prediction": list(truth)}))) for i in range(2)
    ]
    entry = submission_create_predictions(challenge=challenge, user=make_user("prober"), method_name="two", files=files)
    submission_score(submission_id=entry.pk, runner=runner)
    return Submission.objects.get(pk=entry.pk)


def test_a_charged_failure_is_not_refunded_by_a_later_platform_fault(host):
    from leaderboard.services.lifecycle import submission_fail_for_platform

    challenge = ready(host)
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    calls = []

    def breaks_once(source, y_true, y_pred):
        calls.append(len(y_true))
        if len(calls) == 1:
            raise ScoringProgramError("score(y_true, y_pred) raised KeyError", kind="raised")
        raise RuntimeError("a platform bug")

    entry = _two_files_scored(challenge, truth, breaks_once)
    runs = list(entry.runs.order_by("index"))
    assert runs[0].error_message == PROGRAM_FAILED and "platform error" in runs[1].error_message
    assert "a platform bug" not in runs[1].error_message  # its text could quote labels on a program challenge
    submission_fail_for_platform(submission_id=entry.pk, reason="the janitor gave up")
    assert Submission.objects.get(pk=entry.pk).counts_toward_quota is True  # the first run answered


def test_every_part_is_called_even_after_one_failed(host):
    challenge = ready(host, public_fraction=0.5)
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    sizes = []

    def fails_first(source, y_true, y_pred):
        sizes.append(len(y_true))
        if len(sizes) == 1:
            raise ScoringProgramError("score(y_true, y_pred) raised KeyError", kind="raised")
        return in_process(source, y_true, y_pred)

    run = submit(challenge, make_user("timer"), [truth], "timer", runner=fails_first).runs.get()
    public = board_public_mask(dataset=challenge.dataset)
    assert sizes == [public.size, int(public.sum()), int((~public).sum())]
    assert run.error_message == PROGRAM_FAILED and run.duration_s is None


def test_a_check_holds_only_for_what_it_ran_on(host, queued, django_capture_on_commit_callbacks):
    challenge = ready(host, public_fraction=0.5)
    ran_on = challenge.program_check_key
    assert ran_on == program_check_key(challenge)
    challenge = challenge_update(challenge=challenge, user=host, public_fraction=0.4)  # other public rows
    assert program_check_key(challenge) != ran_on
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(ServiceError, match="changed since its scoring program was checked"):
            submit(challenge, make_user("eager"), [truth], "eager")
    challenge.refresh_from_db()
    assert challenge.program_status == ProgramStatus.CHECKING
    assert queued.ids(CHECK_SCORING_PROGRAM)[-1] == challenge.pk
    # a check that ran on the challenge as it was is dropped, and the program sent to be checked again
    with django_capture_on_commit_callbacks(execute=True):
        late = program_store_check(
            challenge_id=challenge.pk,
            program=challenge.scoring_program.name,
            metrics=metrics_in_process(PROGRAM),
            outcome_names=["cost"],
            key=ran_on,
        )
    assert late is None and queued.ids(CHECK_SCORING_PROGRAM)[-2:] == [challenge.pk, challenge.pk]
    checked = check_in_process(challenge)
    assert checked.program_status == ProgramStatus.OK and checked.program_check_key == program_check_key(checked)
    assert submit(checked, make_user("patient"), [truth], "patient").runs.get().status == RunStatus.SUCCEEDED


def test_the_check_calls_the_program_on_every_part_a_submission_may_be_scored_on(host):
    challenge = animals_challenge(host, public_fraction=0.5)
    program_upload(challenge=challenge, user=host, data=PROGRAM)
    public = board_public_mask(dataset=challenge.dataset)
    sizes = []

    def recording(source, y_true, y_pred):
        sizes.append(len(y_true))
        return in_process(source, y_true, y_pred)

    assert check_in_process(challenge, run=recording).program_status == ProgramStatus.OK
    assert sizes == [public.size, int(public.sum()), int((~public).sum())]


def test_a_public_only_phase_never_shows_the_program_a_private_row(host):
    challenge = ready(host, public_fraction=0.5)
    phase = challenge.phases.get()
    phase.test_rows = "public"
    phase.save()
    ids = np.array(dataset_test_ids(dataset=challenge.dataset), dtype=str)
    public_ids = set(ids[board_public_mask(dataset=challenge.dataset)])
    seen: list[set] = []

    def recording(source, y_true, y_pred):
        seen.append(set(y_true.index))
        return in_process(source, y_true, y_pred)

    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    run = submit(challenge, make_user("dev"), [guesses(truth, 0.7, 9)], "dev", runner=recording).runs.get()
    assert seen == [public_ids]  # one call, on the public rows alone
    assert run.private_score is None and run.test_score == run.public_score


def test_a_regression_programs_truth_is_float64(host):
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"id": [f"h{i}" for i in range(40)], "x": rng.normal(size=40), "y": rng.normal(size=40)})
    frame["is_test"] = (np.arange(40) % 2).astype(int)
    upload = DatasetUpload(
        data=csv_bytes(frame), filename="houses.csv", id_column="id", label_column="y", test_column="is_test"
    )
    challenge = challenge_create(
        created_by=host, dataset=upload, title="Houses", metric="mae", allow_predictions=True, allow_recipes=False
    )
    ids = [str(i) for i in dataset_test_ids(dataset=challenge.dataset)]
    truth = program_truth(challenge.dataset, ids)
    assert truth["y"].dtype == np.float64
    assert truth["y"].to_numpy() == pytest.approx(frame.set_index("id").loc[ids, "y"].to_numpy(), abs=1e-12)


def test_a_lost_check_is_sent_again_and_the_hosts_are_told_when_it_keeps_getting_lost(
    host, queued, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from leaderboard.services.janitor import janitor_run
    from leaderboard.services.programs import CHECK_LOST_AFTER

    challenge = animals_challenge(host)
    with django_capture_on_commit_callbacks(execute=True):
        program_upload(challenge=challenge, user=host, data=PROGRAM)
    now = timezone_now()
    assert program_checks_resend(now=now) == 0  # just sent
    with django_capture_on_commit_callbacks(execute=True):
        assert janitor_run(now=now + CHECK_LOST_AFTER + timedelta(minutes=1)).resent_program_checks == 1
    challenge.refresh_from_db()
    assert challenge.program_check_attempts == 2 and queued.ids(CHECK_SCORING_PROGRAM) == [challenge.pk] * 2
    Challenge.objects.filter(pk=challenge.pk).update(
        program_check_sent_at=now - 2 * CHECK_LOST_AFTER, program_check_attempts=3
    )
    assert program_checks_resend(now=now) == 0
    challenge.refresh_from_db()
    assert challenge.program_status == ProgramStatus.FAILED and "its check was lost 3 times" in challenge.program_error


def test_a_program_over_its_limit_is_refused_naming_it(host):
    challenge = animals_challenge(host)
    from django.core.files.uploadedfile import SimpleUploadedFile

    big = b"# padding\n" * (1000 * 1024 // 10 + 1)
    response = client_for(host).put(
        f"/api/challenges/{challenge.slug}/scoring-program/",
        {"program": SimpleUploadedFile("big.py", big)},
        format="multipart",
    )
    assert response.status_code == 413 and "1000 KB" in response.json()["detail"], response.json()
    challenge.refresh_from_db()
    assert not challenge.scoring_program


def test_the_edit_form_says_the_direction_is_the_programs_and_the_metric_only_a_format(host):
    challenge = ready(host)
    page = client_for(host).get(reverse("challenge-edit", kwargs={"slug": challenge.slug})).content.decode()
    assert "The scoring program&#x27;s primary metric&#x27;s." in page
    assert "Only the prediction files&#x27; format: the scoring program&#x27;s primary metric ranks" in page
    from leaderboard.web.forms import ChallengeSettingsForm

    form = ChallengeSettingsForm(instance=challenge)
    assert form.fields["direction"].disabled and form.initial["direction"] == "lower"  # cost: lower is better


def test_runs_wait_for_a_check_without_spending_an_attempt(host, queued):
    from leaderboard.services.programs import ProgramWaiting

    challenge = ready(host)
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    ids = dataset_test_ids(dataset=challenge.dataset)
    files = [UploadedFile("p.csv", csv_bytes(pd.DataFrame({"id": ids, "prediction": list(truth)})))]
    entry = submission_create_predictions(challenge=challenge, user=make_user("patient"), method_name="p", files=files)
    Challenge.objects.filter(pk=challenge.pk).update(program_status=ProgramStatus.CHECKING)  # a re-check, say
    with pytest.raises(ProgramWaiting):
        submission_score(submission_id=entry.pk, runner=in_process)
    run = entry.runs.get()
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and run.attempts == 0  # the task is retried; no attempt spent
    Challenge.objects.filter(pk=challenge.pk).update(program_status=ProgramStatus.OK)
    assert submission_score(submission_id=entry.pk, runner=in_process).runs.get().status == RunStatus.SUCCEEDED


def test_one_user_asks_for_a_bounded_number_of_checks_an_hour(host, queued, monkeypatch):
    from django.core.files.uploadedfile import SimpleUploadedFile

    monkeypatch.setattr("leaderboard.services.programs.CHECKS_PER_HOUR", 2)
    first, second = animals_challenge(host, title="One"), animals_challenge(host, title="Two")
    client = client_for(host)
    put = lambda challenge: client.put(  # noqa: E731
        f"/api/challenges/{challenge.slug}/scoring-program/",
        {"program": SimpleUploadedFile("scoring.py", PROGRAM)},
        format="multipart",
    )
    assert put(first).status_code == 202 and put(second).status_code == 202
    refused = put(first)  # across the user's challenges: the runner is shared
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 3600
    assert "2 checks of scoring programs in the last hour" in refused.json()["detail"]
    assert client_for(make_user("other-host")).get("/api/challenges/").status_code == 200
    AuditEntry.objects.filter(actor=host).update(created=timezone_now() - timedelta(hours=2))
    assert put(first).status_code == 202  # an hour later


def test_a_platform_fault_first_then_a_charged_failure_is_charged(host):
    """A reviewer's finding: the refund of a platform fault on the first file stayed when the program then
    failed on the second (a charged answer): a free probe. The answered run re-charges, whichever came first."""
    challenge = ready(host)
    truth = dataset_hidden_labels(dataset=challenge.dataset).astype(str)
    calls = []

    def platform_then_program(source, y_true, y_pred):
        calls.append(len(y_true))
        if len(calls) == 1:
            raise RuntimeError("a platform bug")
        raise ScoringProgramError("score(y_true, y_pred) raised KeyError", kind="raised")

    entry = _two_files_scored(challenge, truth, platform_then_program)
    runs = list(entry.runs.order_by("index"))
    assert "platform error" in runs[0].error_message and runs[1].error_message == PROGRAM_FAILED
    assert entry.counts_toward_quota is True
