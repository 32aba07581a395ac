"""Small datasets, users and prediction files for platform tests."""

from __future__ import annotations

import io
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
from django.contrib.auth.models import User
from django.utils import timezone
from sklearn.datasets import load_digits

from leaderboard.services.challenges import DatasetUpload, challenge_create

PASSWORD = "a-long-test-password-7"

#: One whole minute for a whole test module: dates a test computes twice (once to send, once to compare
#: with an error message that names them) must not straddle a minute boundary.
_ANCHOR = timezone.now().replace(second=0, microsecond=0)


def days_ahead(days: float) -> datetime:
    """The same whole minute, ``days`` after this module was imported, however often it is asked for."""
    return _ANCHOR + timedelta(days=days)


def make_user(username: str) -> User:
    return User.objects.create_user(username=username, password=PASSWORD)


def digits_frame(n_rows: int = 240, test_fraction: float = 0.3, seed: int = 0) -> pd.DataFrame:
    """Digits rows with columns id, pixel_0..63, label, is_test (stratification not needed here)."""
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(y), size=n_rows, replace=False)
    frame = pd.DataFrame(X[rows].astype(int), columns=[f"pixel_{j}" for j in range(64)])
    frame.insert(0, "id", [f"img-{i:04d}" for i in range(n_rows)])
    frame["label"] = y[rows]
    frame["is_test"] = (np.arange(n_rows) < int(n_rows * test_fraction)).astype(int)
    return frame


def csv_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    return buffer.getvalue().encode()


def digits_challenge(host: User, **overrides):
    frame = digits_frame()
    fields = dict(
        title="Digits test",
        metric="accuracy",
        k_runs=5,
        boo_n=3,
        daily_quota=10,
        total_quota=50,
        allow_predictions=True,
        allow_recipes=True,
        master_seed=7,
    )
    fields.update(overrides)
    upload = DatasetUpload(
        data=csv_bytes(frame), filename="digits.csv", id_column="id", label_column="label", test_column="is_test"
    )
    return challenge_create(created_by=host, dataset=upload, **fields), frame


def regression_challenge(host: User, **overrides):
    """Hidden test labels are distinctive decimals, so a leak would be unmistakable."""
    rng = np.random.default_rng(3)
    n = 60
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(n)], "x1": rng.normal(size=n), "x2": rng.normal(size=n)})
    frame["target"] = [f"{9000 + i}.{rng.integers(10**5, 10**6)}7" for i in range(n)]  # no trailing 0
    frame["is_test"] = (np.arange(n) % 3 == 0).astype(int)
    fields = dict(title="Regression leak test", metric="rmse", k_runs=3)
    fields.update(overrides)
    upload = DatasetUpload(
        data=csv_bytes(frame), filename="reg.csv", id_column="id", label_column="target", test_column="is_test"
    )
    challenge = challenge_create(created_by=host, dataset=upload, **fields)
    hidden = frame.loc[frame.is_test == 1, "target"].tolist()
    return challenge, frame, hidden


def label_predictions(frame: pd.DataFrame, *, correct_fraction: float = 1.0, seed: int = 0) -> bytes:
    """A valid predictions file for the test rows of ``frame`` (column ``prediction``)."""
    test = frame[frame.is_test == 1]
    rng = np.random.default_rng(seed)
    labels = test.label.to_numpy().copy()
    wrong = rng.random(len(labels)) > correct_fraction
    labels[wrong] = (labels[wrong] + 1) % 10
    return csv_bytes(pd.DataFrame({"id": test.id.to_numpy(), "prediction": labels}))


def stored_recipe(challenge, user: User, name: str, runs_expected: int, scores=None):
    """A scored recipe submission of ``user``'s own team, without a sandbox; with ``scores``, its runs stored too
    (seed-paired runs 0..k-1, each with its test score)."""
    from leaderboard.models import Run, Submission
    from leaderboard.services.teams import team_personal_for

    submission = Submission.objects.create(
        challenge=challenge,
        team=team_personal_for(user=user),
        submitted_by=user,
        kind="recipe",
        method_name=name,
        status="scored",
        runs_expected=runs_expected,
    )
    for i, score in enumerate(scores if scores is not None else ()):
        Run.objects.create(
            submission=submission, index=i, status="succeeded", test_score=score, seeds={"split": i}, split_id=f"s{i}"
        )
    return submission


def kish_trials(files: np.ndarray) -> int:
    """The binomial state of the art's trials for an entry of several files of 0/1 outcomes, computed apart from the
    engine: Kish's effective sample size p(1-p) / (s²_examples/n + s²_files/k) in [1, k·n], rounded, at most the n
    test examples (docs/statistics.md, REPORT_FORMAT 11)."""
    k, n = files.shape
    p = files.mean()
    variance = files.mean(axis=0).var(ddof=1) / n + files.mean(axis=1).var(ddof=1) / k
    return min(n, int(np.floor(round(float(np.clip(p * (1 - p) / variance, 1, k * n)), 6) + 0.5)))


def board_row(**fields) -> dict:
    """One entry of the leaderboard API's answer, as the CLI reads it (``fields`` replace the defaults)."""
    return {
        "submission_id": 1,
        "rank_display": "1",
        "groups": "a",
        "runs_succeeded": 1,
        "runs_expected": 1,
        **fields,
    }
