"""The command-line client does what the site does, as a subprocess against a live server: join (accepting
the rules), teams by name (create, invite, accept, decline, leave), submit for a team, final entries, cancel,
download every part served, the leaderboard's team column, and ``--json`` on each (issue 25)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from leaderboard.models import Run, Submission, Team

from .factories import board_row, digits_challenge, label_predictions, make_user
from .test_cli_site import run_cli

pytestmark = pytest.mark.django_db(transaction=True)


class Person:
    """One user's CLI: their own config folder (token), so several people can act in one test."""

    def __init__(self, url: str, home, username: str):
        self.url, self.home = url, home
        home.mkdir(exist_ok=True)
        make_user(username)
        assert self("login", username).returncode == 0

    def __call__(self, *args: str):
        return run_cli(self.url, self.home, *args)

    def json(self, *args: str):
        done = self(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def fails(self, *args: str) -> str:
        done = self(*args)
        assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
        assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr
        return done.stderr


@pytest.fixture
def ruled(live_server):
    host = make_user("host")
    challenge, frame = digits_challenge(host, rules="Be fair: one account each.", final_entries=1, public_fraction=0.5)
    return challenge, frame


def test_join_teams_submit_finals_cancel(live_server, ruled, tmp_path):
    challenge, frame = ruled
    slug = challenge.slug
    carol, dave = (
        Person(live_server.url, tmp_path / "carol", "carol"),
        Person(live_server.url, tmp_path / "dave", "dave"),
    )
    predictions = tmp_path / "p.csv"
    predictions.write_bytes(label_predictions(frame))

    # The server's own words before joining; join without --accept-rules says where the rules are.
    assert "Accept the challenge's rules" in carol.fails("submit", slug, str(predictions), "--method", "early")
    refused = carol.fails("join", slug)
    assert f"/c/{slug}/#rules" in refused and "--accept-rules" in refused
    joined = carol.json("join", slug, "--accept-rules")
    assert joined["status"] == "approved" and joined["rules_accepted_at"] and joined["challenge"] == slug
    assert "joined" in dave("join", slug, "--accept-rules").stdout

    # A team by name: create, invite (any case), the invitee sees it, accepts it by name.
    created = carol.json("teams", "create", "Owls")
    assert created["name"] == "Owls" and created["members"] == ["carol"]
    invited = carol.json("teams", "invite", "owls", "dave")
    assert (invited["team"], invited["invitee"], invited["status"]) == ("Owls", "dave", "pending")
    listing = dave.json("teams")
    assert [i["team"] for i in listing["invitations"]] == ["Owls"]
    assert "Owls (from carol)" in dave("teams").stdout
    assert dave.json("teams", "accept", "Owls")["status"] == "accepted"
    owls = next(t for t in dave.json("teams", "list")["teams"] if t["name"] == "Owls")
    assert owls["members"] == ["carol", "dave"]

    # Submitting for the team by name; both members see its final entries.
    first = carol.json("submit", slug, str(predictions), "--method", "first", "--team", "Owls")
    predictions.write_bytes(label_predictions(frame, correct_fraction=0.5))
    second = carol.json("submit", slug, str(predictions), "--method", "second", "--team", str(owls["id"]))
    assert first["team"] == second["team"] == "Owls"
    finals = carol.json("finals", slug, "--choose", str(first["id"]))
    assert finals["chosen"] == [first["id"]] and finals["final_entries"] == 1
    assert {s["id"] for s in finals["submissions"]} == {first["id"], second["id"]}
    shown = dave("finals", slug).stdout
    assert shown.startswith(f"{slug}: 1 of 1 final entries chosen ({first['id']})")
    assert [line.split()[1] for line in shown.splitlines() if line.startswith("  *")] == [str(first["id"])]
    too_many = dave.fails("finals", slug, "--choose", str(second["id"]))
    assert "this challenge allows 1" in too_many and "Un-choose one first" in too_many
    assert dave.json("finals", slug, "--drop", str(first["id"]), "--choose", str(second["id"]))["chosen"] == [
        second["id"]
    ]

    # Cancel (twice is harmless), and an unknown submission's 404 in words.
    cancelled = carol.json("cancel", str(first["id"]))
    assert cancelled["status"] == "cancelled" and Submission.objects.get(pk=first["id"]).status == "cancelled"
    assert carol.json("cancel", str(first["id"]))["status"] == "cancelled"
    assert carol.fails("cancel", "999999").startswith("error: 404: ")

    # A team that has entered the challenge cannot be left (the server's reason, in words); once its
    # every submission is cancelled it has not entered it, and a member may leave.
    assert "has entered “Digits test”" in dave.fails("teams", "leave", "Owls")
    assert "cancelled" in carol("cancel", str(second["id"])).stdout
    assert dave("teams", "leave", "Owls").stdout == "left team Owls\n"
    assert [t["name"] for t in dave.json("teams")["teams"]] == ["dave"]


def test_team_names_resolve_or_say_why_not(live_server, tmp_path):
    carol, dave = (
        Person(live_server.url, tmp_path / "carol", "carol"),
        Person(live_server.url, tmp_path / "dave", "dave"),
    )
    carol.json("teams", "create", "Owls")
    carol.json("teams", "create", "owls")
    ambiguous = carol.fails("teams", "invite", "OWLS", "dave")
    assert "ambiguous" in ambiguous and "'Owls'" in ambiguous and "'owls'" in ambiguous
    assert "no team named 'hawks'" in carol.fails("teams", "invite", "hawks", "dave")
    assert carol.json("teams", "invite", "owls", "dave")["team"] == "owls"
    assert carol.json("teams", "invite", "Owls", "dave")["team"] == "Owls"
    assert "no invitation from a team named 'Hawks'" in dave.fails("teams", "accept", "Hawks")
    assert dave.json("teams", "decline", "Owls")["status"] == "declined"
    assert dave.json("teams", "accept", "owls")["status"] == "accepted"
    # Leaving: by id too; the team stays for its other member; a personal team cannot be left.
    owls_id = Team.objects.get(name="owls").pk
    left = dave.json("teams", "leave", str(owls_id))
    assert left == {"team": "owls", "id": owls_id, "left": True}
    assert list(Team.objects.get(pk=owls_id).members.values_list("username", flat=True)) == ["carol"]
    assert "personal team cannot be left" in dave.fails("teams", "leave", "dave")
    assert carol.json("teams", "leave", "Owls")["left"] is True  # its last member, no submissions: deleted
    assert not Team.objects.filter(name="Owls").exists()


def test_download_streams_every_part_the_api_serves(live_server, ruled, tmp_path):
    challenge, frame = ruled
    carol = Person(live_server.url, tmp_path / "carol", "carol")
    saved = carol.json("download", challenge.slug, "--dir", str(tmp_path / "data"))
    assert [row["part"] for row in saved["files"]] == ["train", "test_inputs", "sample_submission"]
    for row in saved["files"]:
        assert (tmp_path / "data" / f"{row['part']}.csv").stat().st_size == row["bytes"] > 0
    sample = (tmp_path / "data" / "sample_submission.csv").read_text().splitlines()
    assert len(sample) == 1 + int(frame.is_test.sum()) and not list((tmp_path / "data").glob("*.part"))
    # Hidden labels: not served to a contestant, in the server's words (the challenge has them: hosts only),
    # served to the host on request; a misspelled part names the parts served, and nothing is saved.
    refused = carol.fails("download", challenge.slug, "--part", "hidden_labels", "--dir", str(tmp_path / "none"))
    assert refused == "error: 403: Hidden labels are visible to the challenge's hosts only.\n"
    refused = carol.fails(
        "download", challenge.slug, "--part", "train", "--part", "trian", "--dir", str(tmp_path / "none")
    )
    assert refused == "error: 404: Unknown download 'trian'; choose from train, test_inputs, sample_submission.\n"
    assert not (tmp_path / "none").exists()
    host_home = tmp_path / "host"
    assert run_cli(live_server.url, host_home, "login", "host").returncode == 0
    labels = json.loads(
        run_cli(
            live_server.url,
            host_home,
            "download",
            challenge.slug,
            "--part",
            "hidden_labels",
            "--dir",
            str(tmp_path / "host-data"),
            "--json",
        ).stdout
    )
    assert [row["part"] for row in labels["files"]] == ["hidden_labels"]
    assert "label" in (tmp_path / "host-data" / "hidden_labels.csv").read_text().splitlines()[0]


def test_leaderboard_has_a_team_column(live_server, tmp_path):
    challenge, _ = digits_challenge(make_user("host"), k_runs=4, bootstrap_resamples=100)
    carol = Person(live_server.url, tmp_path / "carol", "carol")
    rng = np.random.default_rng(0)
    for team_name, method, centre in (("Owls", "resnet", 0.8), ("Hawks", "mlp", 0.7)):
        team = Team.objects.create(name=team_name)
        submission = Submission.objects.create(
            challenge=challenge,
            team=team,
            submitted_by=challenge.created_by,
            kind="recipe",
            method_name=method,
            status="scored",
            runs_expected=4,
        )
        Run.objects.bulk_create(
            [
                Run(
                    submission=submission,
                    index=i,
                    status="succeeded",
                    test_score=float(centre + 0.01 * rng.standard_normal()),
                )
                for i in range(4)
            ]
        )
    text = carol("leaderboard", challenge.slug).stdout
    header = next(line for line in text.splitlines() if "rank" in line)
    assert header.split()[:4] == ["rank", "group", "team", "entry"]
    rows = {line.split()[3]: line.split()[2] for line in text.splitlines() if "resnet" in line or "mlp" in line}
    assert rows == {"resnet": "Owls", "mlp": "Hawks"}
    board = carol.json("leaderboard", challenge.slug)
    assert {e["method_name"]: e["team"] for e in board["entries"]} == {"resnet": "Owls", "mlp": "Hawks"}


def test_the_token_goes_to_the_configured_server_only():
    """Review finding: a ``next`` link built from a proxy's headers (http://, another host) would have
    carried the token there; the client keeps its own scheme and host and takes the path and query."""
    from cli.varboard_cli import Client

    client = Client("https://board.example.org/", "secret")
    assert (
        client._same_origin("http://evil.example.net/api/submissions/?page=2")
        == "https://board.example.org/api/submissions/?page=2"
    )
    assert client._same_origin("https://board.example.org/api/x/") == "https://board.example.org/api/x/"


@pytest.mark.parametrize("url", ["127.0.0.1:9", "localhost:9", "ftp://127.0.0.1:9"])
def test_a_url_without_its_scheme_is_named(url, capsys):
    """Review finding: ``--url 127.0.0.1:9`` answered "cannot reach 127.0.0.1:9: unknown url type:
    127.0.0.1" (``localhost:9``: "unknown url type: localhost"); the client names the address and the fix."""
    from cli.varboard_cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--url", url, "challenges"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --url: {url!r} is not a web address: give http:// or https:// and the host" in err


@pytest.mark.parametrize(
    "argv", [["--json", "leaderboard", "wine", "--csv"], ["leaderboard", "wine", "--csv", "--json"]]
)
def test_leaderboard_takes_one_output_format(argv, capsys):
    """Review finding: ``leaderboard --csv --json`` printed CSV and said nothing of the --json it dropped; it is a
    usage error before anything is asked of the server (the address is one nothing listens on)."""
    from cli.varboard_cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--url", "http://127.0.0.1:9", *argv])
    assert exit_.value.code == 2
    assert "--csv and --json each choose the output: give one of them" in capsys.readouterr().err


def test_leaderboard_reads_the_board_asked_for_and_says_which(monkeypatch, capsys):
    """Review finding: after digits' reveal, ``varboard leaderboard digits`` showed the public board (the probe of
    the public labels first, at 1.0000) without saying which board it was, and no option reached the private
    board (the final standings) that the API serves as ``?board=private``; and its header said "95%" whatever
    the challenge's confidence level."""
    from cli.varboard_cli import Client, main

    asked: list[str] = []
    entry = board_row(
        team="bob", method_name="knn", mean={"estimate": 0.98, "low": 0.96, "high": 0.99}, boo_n={"estimate": 0.98}
    )

    fraction = {"digits": 0.5, "open-digits": 1.0}

    def request(self, method, path, **kwargs):
        asked.append(path)
        if path.rstrip("/").count("/") == 3:  # /api/challenges/<slug>/
            return {"slug": path.split("/")[3], "public_fraction": fraction[path.split("/")[3]]}
        board = "private" if "board=private" in path else "public"
        section = {"label": "Predictions", "design": "", "entries": [1]}
        if kwargs.get("accept") == "text/csv":
            return "submission_id\n1\n"
        return {
            "challenge": "digits",
            "board": board,
            "settings": {"confidence": 0.9},
            "sections": [section],
            "entries": [entry],
        }

    monkeypatch.setattr(Client, "request", request)
    assert main(["leaderboard", "digits", "--board", "private"]) == 0
    out = capsys.readouterr().out
    assert asked == ["/api/challenges/digits/leaderboard/?board=private"]
    assert "mean [90% interval]" in out and out.splitlines()[-1] == "The private board."
    assert main(["leaderboard", "digits"]) == 0
    out = capsys.readouterr().out
    assert asked[-2:] == ["/api/challenges/digits/leaderboard/", "/api/challenges/digits/"]
    assert out.splitlines()[-1] == "The public board (--board private: the private one, where you may read it)."
    # a challenge without a private part (public_fraction 1): the footer did offer --board private, which
    # the server then refuses ("This challenge has no private board")
    assert main(["leaderboard", "open-digits"]) == 0
    out = capsys.readouterr().out
    assert "--board private" not in out
    assert out.splitlines()[-1] == "The challenge's only board (every hidden row is public: it has no private board)."
    assert main(["leaderboard", "digits", "--csv", "--board", "private"]) == 0
    assert asked[-1] == "/api/challenges/digits/leaderboard/?format=csv&board=private"


def test_finals_choose_on_a_challenge_without_a_private_board_is_refused_in_the_servers_words(live_server, tmp_path):
    """``finals --choose`` was taken on a challenge whose public_fraction is 1, storing a final entry for a
    private board that does not exist; the server refuses it (400 naming why) and the CLI says so."""
    challenge, frame = digits_challenge(make_user("host"), public_fraction=1.0)
    erin = Person(live_server.url, tmp_path / "erin", "erin")
    predictions = tmp_path / "p.csv"
    predictions.write_bytes(label_predictions(frame))
    entry = erin.json("submit", challenge.slug, str(predictions), "--method", "only")
    refused = erin.fails("finals", challenge.slug, "--choose", str(entry["id"]))
    assert "400" in refused and "no private board" in refused and "public_fraction is 1" in refused, refused
    assert not Submission.objects.get(pk=entry["id"]).selected_for_final
    assert erin.json("finals", challenge.slug, "--drop", str(entry["id"]))["chosen"] == []
