"""schemathesis against the live OpenAPI schema: no request, however odd, gets a 5xx.

Anonymous and with a contestant's token, on a challenge with scored entries (path parameters
point at it, so the fuzzed queries and bodies reach real code rather than a 404). Bounded:
``--max-examples`` per operation and a time budget per pass.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from leaderboard.models import Run
from leaderboard.services.accounts import token_create
from leaderboard.services.scoring import submission_score
from leaderboard.services.submissions import UploadedFile, submission_create_predictions
from tests.platform.factories import digits_challenge, label_predictions, make_user

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MAX_EXAMPLES = 8
SECONDS_PER_PASS = 45


@pytest.fixture
def scored_challenge(monkeypatch):
    monkeypatch.setattr("leaderboard.services.dispatch.send", lambda *args, **kwargs: None)  # scored here
    host, alice, bob = make_user("host"), make_user("alice"), make_user("bob")
    challenge, frame = digits_challenge(host, k_runs=3)
    entries = [
        submission_create_predictions(
            challenge=challenge,
            user=user,
            method_name=f"entry {i}",
            files=[
                UploadedFile(f"p{j}.csv", label_predictions(frame, correct_fraction=0.6 + 0.1 * i, seed=j))
                for j in range(3)
            ],
        )
        for i, user in enumerate((alice, bob))
    ]
    for entry in entries:
        submission_score(submission_id=entry.pk)
    assert Run.objects.filter(status="succeeded").count() == 6
    return challenge, entries[0], token_create(user=alice)[1]


def fuzz(base_url: str, tmp_path, label: str, parameters: dict, headers: list[str]) -> dict:
    """One schemathesis pass; returns {"cases": N, "server_errors": [...], "output": text}."""
    config = tmp_path / f"{label}.toml"
    config.write_text(
        "[parameters]\n" + "".join(f'"{key}" = {json.dumps(value)}\n' for key, value in parameters.items())
    )
    report = tmp_path / f"{label}.ndjson"
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(config),
        "run",
        f"{base_url}/api/schema/",
        "--checks",
        "not_a_server_error",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--max-time",
        str(SECONDS_PER_PASS),
        "--workers",
        "1",
        "--seed",
        "1",
        "--suppress-health-check",
        "all",
        "--request-timeout",
        "30",
        "--no-color",
        "--generation-database",
        "none",
        "--report",
        "ndjson",
        "--report-ndjson-path",
        str(report),
        "--warnings",
        "off",
    ]
    for header in headers:
        command += ["-H", header]
    # One worker thread: with two, schemathesis crashed once in a fresh-clone CI run with CPython
    # 3.11's "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905: the ast
    # module's recursion counter goes wrong after a failed construction, seen in threaded programs).
    # One thread still makes 775-933 cases per pass in its 45 s.
    # In the temporary folder: schemathesis keeps a cache of crashes in its working directory.
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=SECONDS_PER_PASS + 240)
    cases, server_errors = 0, []
    for line in report.read_text().splitlines() if report.exists() else []:
        event = json.loads(line)
        for name, data in event.items():
            if name == "ScenarioFinished":
                cases += len(data.get("recorder", {}).get("cases", {}))
                for check in data.get("recorder", {}).get("checks", {}).values():
                    for result in check:
                        if str(result.get("status")).lower() in ("failure", "error"):
                            server_errors.append(result.get("failure_info") or result)
    return {
        "cases": cases,
        "server_errors": server_errors,
        "returncode": done.returncode,
        "output": (done.stdout + done.stderr)[-6000:],
    }


def only_network_errors(result: dict) -> bool:
    """A failed pass whose only errors are network errors (the client lost a connection), with no 5xx."""
    output = result["output"]
    summary = output.split("SUMMARY")[-1]
    return (
        result["returncode"] != 0
        and "Network Error" in summary
        and "Failures" not in summary
        and "Server error" not in output
    )


def test_no_5xx_anonymous_or_with_a_token(live_server, scored_challenge, tmp_path):
    challenge, entry, token = scored_challenge
    parameters = {"path.slug": challenge.slug, "path.id": entry.pk, "path.index": 0, "path.part": "train"}
    results = {}
    for label, headers in (("anonymous", []), ("token", [f"Authorization: Token {token}"])):
        results[label] = fuzz(live_server.url, tmp_path, label, parameters, headers)
        if only_network_errors(results[label]):
            # Django's development server (live_server) dropped a connection once under load (seen once in
            # CI-like runs: "Connection aborted" on a PATCH, no 5xx): the pass runs again, and must be clean.
            sys.__stderr__.write(f"[schemathesis] {label}: a network error only; the pass runs again\n")
            results[label] = fuzz(live_server.url, tmp_path, label, parameters, headers)
        print(
            f"[schemathesis] {label}: {results[label]['cases']} cases, "
            f"{len(results[label]['server_errors'])} server errors"
        )
        sys.__stderr__.write(
            f"[schemathesis] {label}: {results[label]['cases']} cases, "
            f"{len(results[label]['server_errors'])} server errors\n"
        )
    for result in results.values():
        assert result["cases"] >= 50, result["output"]  # it did exercise the API
        assert result["server_errors"] == [] and result["returncode"] == 0, result["output"]


def test_an_absurd_override_is_a_400_naming_it(client, scored_challenge):
    """Regression: ?alpha=1e-300 was a 500; overrides use the model's validators."""
    challenge, _, _ = scored_challenge
    for query, field in (("alpha=1e-300", "alpha"), ("gamma=1", "gamma"), ("n=0", "n"), ("alpha=nan", "alpha")):
        response = client.get(f"/api/challenges/{challenge.slug}/leaderboard/?{query}")
        assert response.status_code == 400, (query, response.content)
        assert field in response.json()["detail"], (query, response.json())
