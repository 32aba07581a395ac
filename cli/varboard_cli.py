#!/usr/bin/env python3
"""varboard's command-line client: one file, standard library only, talks to the REST API.

    varboard --url http://127.0.0.1:8000 login alice
    varboard challenges
    varboard join digits --accept-rules
    varboard download digits [--dir data/] [--part train]
    varboard teams [create NAME | invite TEAM USER | accept TEAM | decline TEAM | leave TEAM]
    varboard submit digits --method "logreg, 3 seeds" seed0.csv seed1.csv seed2.csv --wait [--team NAME]
    varboard submit digits --method "my MLP" --recipe my_recipe.py --hyperparameters '{"lr": 0.01}'
    varboard status 12
    varboard cancel 12
    varboard finals digits [--choose 12] [--drop 9]
    varboard leaderboard digits [--csv] [--board private]

Install it with ``pip install ./cli`` (the ``varboard`` command), or run ``python3 cli/varboard_cli.py``.
Teams are named by name (or id). Every command takes ``--json``: one JSON document on stdout, and errors as
``{"error": ...}`` on stderr. ``login`` stores the token in ``~/.config/varboard/token`` (or use
``--token`` / ``VARBOARD_TOKEN``); ``--url`` defaults to ``VARBOARD_URL`` or http://127.0.0.1:8000.
Exit status: 0 done, 1 an error (its message on stderr), 141 the reader of the output went away.
"""

from __future__ import annotations

import argparse
import getpass
import json
import math
import mimetypes
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

TOKEN_FILE = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "varboard" / "token"
ENDED = {"scored", "failed", "cancelled"}
DATA_PARTS = ("train", "test_inputs", "sample_submission")
SIGPIPE_EXIT = 141  # what a shell reports for a process killed by SIGPIPE (128 + 13)


class ApiError(Exception):
    """An HTTP error from the server, with its message."""


def multipart(fields: dict[str, str], files: list[tuple[str, Path]]) -> tuple[bytes, str]:
    """Encode form fields and files as multipart/form-data (RFC 7578)."""
    boundary = uuid.uuid4().hex
    parts: list[bytes] = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, path in files:
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{path.name}"\r\n'
            f"Content-Type: {kind}\r\n\r\n"
        ).encode()
        parts.append(head + path.read_bytes() + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


class Client:
    def __init__(self, url: str, token: str | None):
        self.url = url.rstrip("/")
        self.token = token

    def _same_origin(self, link: str) -> str:
        """An absolute link the server returned (a ``next`` page), on the configured server: its path and query
        on ``self.url``'s scheme and host, so the token never goes to another scheme or host (a proxy that rewrote them)."""
        server, parts = urllib.parse.urlsplit(self.url), urllib.parse.urlsplit(link)
        return urllib.parse.urlunsplit((server.scheme, server.netloc, parts.path, parts.query, ""))

    def _open(
        self,
        method: str,
        path: str,
        *,
        data: bytes | None = None,
        content_type: str | None = None,
        accept: str = "application/json",
    ):
        headers = {"Accept": accept}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        if content_type:
            headers["Content-Type"] = content_type
        url = self._same_origin(path) if path.startswith(("http://", "https://")) else self.url + path
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            return urllib.request.urlopen(request, timeout=120)
        except urllib.error.HTTPError as exc:
            raise ApiError(f"{exc.code}: {self._message(exc.read())}") from None
        except urllib.error.URLError as exc:
            raise ApiError(f"cannot reach {self.url}: {exc.reason}") from None

    def request(
        self,
        method: str,
        path: str,
        *,
        data: bytes | None = None,
        content_type: str | None = None,
        accept: str = "application/json",
        raw: bool = False,
        json_body=None,
    ):
        if json_body is not None:
            data, content_type = json.dumps(json_body).encode(), "application/json"
        with self._open(method, path, data=data, content_type=content_type, accept=accept) as response:
            body = response.read()
        if raw:
            return body
        if not body:
            return None  # 204 No Content
        return json.loads(body) if accept == "application/json" else body.decode()

    def save(self, path: str, destination: Path) -> int:
        """Stream a download into ``destination`` (through a temporary file: no half-written file is left)."""
        partial = destination.with_name(destination.name + ".part")
        with self._open("GET", path, accept="*/*") as response, partial.open("wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
        partial.replace(destination)
        return destination.stat().st_size

    def refusal(self, path: str) -> None:
        """Raise the server's own error for a GET of ``path`` (its body unread when it answers after all)."""
        with self._open("GET", path, accept="*/*"):
            pass

    def pages(self, path: str) -> list:
        """Every row of a paginated list (``results``, following ``next``), or a bare list as it is."""
        rows, answer = [], self.request("GET", path)
        while isinstance(answer, dict) and "results" in answer:
            rows += answer["results"]
            if not answer.get("next"):
                return rows
            answer = self.request("GET", answer["next"])
        return rows + list(answer or [])

    @staticmethod
    def _message(body: bytes) -> str:
        try:
            data = json.loads(body)
        except ValueError:
            return body.decode(errors="replace")[:500]
        return data.get("detail", json.dumps(data)) if isinstance(data, dict) else json.dumps(data)


def server_url(url: str) -> str:
    """``--url`` (or ``VARBOARD_URL``) as given, when it is an http:// or https:// address with a host."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise argparse.ArgumentTypeError(
            f"{url!r} is not a web address: give http:// or https:// and the host (e.g. http://127.0.0.1:8000)"
        )
    return url


def emit(args, data, text: str | None = None) -> None:
    """Print the JSON answer with ``--json``, else the human-readable ``text`` (when there is one)."""
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
    elif text is not None:
        print(text)


def cmd_login(client: Client, args) -> None:
    password = os.environ.get("VARBOARD_PASSWORD") or getpass.getpass(f"password for {args.username}: ")
    body = urllib.parse.urlencode({"username": args.username, "password": password}).encode()
    answer = client.request("POST", "/api/auth/token/", data=body, content_type="application/x-www-form-urlencoded")
    TOKEN_FILE.parent.mkdir(parents=True, exist_ok=True)
    TOKEN_FILE.write_text(answer["token"])
    TOKEN_FILE.chmod(0o600)
    emit(
        args,
        {
            "username": args.username,
            "token_file": str(TOKEN_FILE),
            "token_key": answer["token_key"],
            "expiry": answer["expiry"],
        },
        f"logged in as {args.username}; token saved in {TOKEN_FILE}",
    )


def cmd_challenges(client: Client, args) -> None:
    challenges = client.request("GET", "/api/challenges/?limit=200")["results"]
    lines = []
    for challenge in challenges:
        kinds = "+".join(
            k
            for k, on in (("predictions", challenge["allow_predictions"]), ("recipes", challenge["allow_recipes"]))
            if on
        )
        lines.append(
            f"{challenge['slug']:<28} {_taking(challenge):<9} {challenge['metric']:<18} {kinds:<20} {challenge['title']}"
        )
    emit(args, challenges, "\n".join(lines) if lines else "no challenges")


def _taking(challenge: dict) -> str:
    """Whether the challenge takes submissions now, from the server's ``in_force`` (its phase rule): "open",
    "upcoming" (its next phase has not opened yet) or "closed"; a listing showed closed ones as if open."""
    in_force = challenge.get("in_force") or {}
    if in_force.get("open"):
        return "open"
    return "upcoming" if in_force.get("upcoming") else "closed"


def cmd_download(client: Client, args) -> None:
    """Save the data files the API serves for a challenge (its ``downloads``), each streamed to ``<part>.csv``.

    By default every public part (training rows, test inputs, a sample submission, whatever the
    challenge has); ``--part`` picks some, including ``hidden_labels`` for the challenge's hosts.
    """
    challenge = client.request("GET", f"/api/challenges/{args.challenge}/")  # an unknown challenge: its 404
    served = challenge.get("downloads") or {}
    wanted = args.part or [part for part in served if part != "hidden_labels"]
    unknown = [part for part in wanted if part not in served]
    for part in unknown:  # in the server's words: hidden labels are for hosts (403), else the parts it serves (404)
        client.refusal(f"/api/challenges/{args.challenge}/data/{urllib.parse.quote(part, safe='')}/")
    if unknown:
        raise ApiError(
            f"challenge {args.challenge} has no {', '.join(unknown)} file to download; it serves: "
            f"{', '.join(served) or 'nothing'}"
        )
    if not wanted:
        raise ApiError(f"challenge {args.challenge} has no data files to download")
    folder = Path(args.dir or args.challenge)
    folder.mkdir(parents=True, exist_ok=True)
    saved = []
    for part in wanted:
        path = folder / f"{part}.csv"
        saved.append({"part": part, "path": str(path), "bytes": client.save(served[part], path)})
    missing = [part for part in DATA_PARTS if part not in served]  # e.g. no fixed test set: recipes only
    text = "\n".join(f"{row['path']}  ({row['bytes']:,} bytes)" for row in saved)
    if missing and not args.part:
        text += f"\n(no {', '.join(missing)} file in this challenge)"
    emit(args, {"challenge": args.challenge, "files": saved, "missing": missing}, text)


def cmd_join(client: Client, args) -> None:
    """Take part in a challenge: accept its rules (``--accept-rules``) and register."""
    challenge = client.request("GET", f"/api/challenges/{args.challenge}/")
    if challenge.get("rules") and not args.accept_rules:
        raise ApiError(
            f"{args.challenge} has rules: read them at {challenge['url']}#rules, then run "
            f"`varboard join {args.challenge} --accept-rules`"
        )
    registration = client.request(
        "POST", f"/api/challenges/{args.challenge}/register/", json_body={"accept_rules": bool(args.accept_rules)}
    )
    in_force = challenge.get("in_force") or {}
    # Registered is not open: a closed or not yet open challenge says so in the server's own words.
    can_submit = "you can submit" if in_force.get("open", True) else in_force.get("reason") or "it is closed"
    said = {
        "approved": f"joined {args.challenge}: {can_submit}",
        "pending": f"registered for {args.challenge}; the hosts will review it",
        "rejected": f"the hosts of {args.challenge} rejected your registration",
    }
    emit(
        args,
        {"challenge": args.challenge, **registration},
        said.get(registration["status"], f"registration {registration['status']}"),
    )


def pick_team(teams: list[dict], ref: str, what: str = "team") -> dict:
    """The team ``ref`` names: its exact name, else its id, else its name in any case (if one only)."""
    exact = [t for t in teams if t["name"] == ref]
    if len(exact) == 1:
        return exact[0]
    if ref.isdigit():
        for team in teams:
            if team["id"] == int(ref):
                return team
    folded = [t for t in teams if t["name"].casefold() == ref.strip().casefold()]
    if len(folded) == 1:
        return folded[0]
    if folded:
        names = ", ".join(f"{t['name']!r} (id {t['id']})" for t in folded)
        raise ApiError(f"{what} name {ref!r} is ambiguous: it matches {names}; give the exact name or the id")
    known = ", ".join(repr(t["name"]) for t in teams) or "none"
    raise ApiError(f"no {what} named {ref!r} (yours: {known})")


def my_teams(client: Client) -> list[dict]:
    return client.pages("/api/teams/")


def invitations_to_me(client: Client, teams: list[dict]) -> list[dict]:
    """Pending invitations to you: those of teams you are not in (your teams' own are to others)."""
    mine = {t["id"] for t in teams}
    return [i for i in client.pages("/api/invitations/?status=pending") if i["team_id"] not in mine]


def cmd_teams(client: Client, args) -> None:
    action = args.action or "list"
    if action == "list":
        teams = my_teams(client)
        waiting = invitations_to_me(client, teams)
        lines = [f"{'id':>6}  {'team':<30} members"]
        lines += [
            f"{t['id']:>6}  {t['name'][:30]:<30} {', '.join(t['members'])}{'  (personal)' if t['is_personal'] else ''}"
            for t in teams
        ]
        if waiting:
            lines.append("\ninvitations waiting for your answer (varboard teams accept|decline TEAM):")
            lines += [f"  {i['team']} (from {i['invited_by']})" for i in waiting]
        emit(args, {"teams": teams, "invitations": waiting}, "\n".join(lines))
    elif action == "create":
        team = client.request("POST", "/api/teams/", json_body={"name": args.name})
        emit(args, team, f"created team {team['name']} (id {team['id']})")
    elif action == "invite":
        team = pick_team(my_teams(client), args.team)
        invitation = client.request(
            "POST", f"/api/teams/{team['id']}/invitations/", json_body={"username": args.username}
        )
        emit(
            args,
            invitation,
            f"invited {invitation['invitee']} to {invitation['team']}; they accept with "
            f'`varboard teams accept "{invitation["team"]}"`',
        )
    elif action in ("accept", "decline"):
        waiting = invitations_to_me(client, my_teams(client))
        chosen = pick_team(
            [{"id": i["team_id"], "name": i["team"], "invitation": i} for i in waiting],
            args.team,
            what="invitation from a team",
        )["invitation"]
        invitation = client.request("POST", f"/api/invitations/{chosen['id']}/{action}/")
        emit(args, invitation, f"{invitation['status']} the invitation to {invitation['team']}")
    elif action == "leave":
        team = pick_team(my_teams(client), args.team)
        client.request("POST", f"/api/teams/{team['id']}/leave/")
        emit(args, {"team": team["name"], "id": team["id"], "left": True}, f"left team {team['name']}")


def cmd_finals(client: Client, args) -> None:
    """Show your team's submissions with the final entries marked; ``--choose``/``--drop`` change them."""
    for submission_id, selected in [*((i, False) for i in args.drop or ()), *((i, True) for i in args.choose or ())]:
        client.request("POST", f"/api/submissions/{submission_id}/select/", json_body={"selected": selected})
    challenge = client.request("GET", f"/api/challenges/{args.challenge}/")
    mine = {t["name"] for t in my_teams(client)}
    rows = [s for s in client.pages(f"/api/challenges/{args.challenge}/submissions/?limit=200") if s["team"] in mine]
    chosen = [s["id"] for s in rows if s["selected_for_final"]]
    if challenge.get("public_fraction", 0) >= 1:  # one board only: the server refuses a choice (400)
        head = f"{args.challenge} has no private board (public_fraction 1): there are no final entries to choose"
    else:
        head = (
            f"{args.challenge}: {len(chosen)} of {challenge['final_entries']} final entries chosen"
            f"{' (' + ', '.join(map(str, chosen)) + ')' if chosen else ''}"
        )
    lines = [
        head,
        f"{'final':<6}{'id':>7}  {'team':<20} {'entry':<32} {'status':<10} score",
    ]
    for s in rows:
        lines.append(
            f"{'  *' if s['selected_for_final'] else '':<6}{s['id']:>7}  {s['team'][:20]:<20} "
            f"{s['method_name'][:32]:<32} {s['status']:<10} {_number(s.get('score'))}"
        )
    emit(
        args,
        {
            "challenge": args.challenge,
            "final_entries": challenge["final_entries"],
            "chosen": chosen,
            "submissions": rows,
        },
        "\n".join(lines),
    )


def cmd_cancel(client: Client, args) -> None:
    submission = client.request("POST", f"/api/submissions/{args.submission}/cancel/")
    emit(args, submission, f"submission {submission['id']} {submission['status']}")


def cmd_submit(client: Client, args) -> None:
    fields = {"method_name": args.method, "description": args.description or ""}
    if args.team is not None:
        fields["team"] = str(pick_team(my_teams(client), args.team)["id"])
    if args.recipe:
        fields["kind"] = "recipe"
        if args.hyperparameters:
            fields["hyperparameters"] = args.hyperparameters
        files = [("recipe", Path(args.recipe))]
    else:
        if not args.files:
            raise ApiError("give one or more prediction files, or --recipe FILE")
        files = [("files", Path(name)) for name in args.files]
    for _, path in files:
        if not path.is_file():
            raise ApiError(f"{path}: no such file")
    data, content_type = multipart(fields, files)
    submission = client.request(
        "POST", f"/api/challenges/{args.challenge}/submissions/", data=data, content_type=content_type
    )
    if not args.wait:
        emit(args, submission, f"submission {submission['id']} {submission['status']}: {submission['url']}")
        return
    if not args.json:
        print(f"submission {submission['id']} {submission['status']}: {submission['url']}", flush=True)
    wait(client, args, submission["id"])


def submission_text(submission: dict) -> str:
    progress = submission["progress"]
    lines = [
        f"submission {submission['id']} ({submission['method_name']}): {submission['status']}, "
        f"{progress['finished']}/{progress['expected']} runs finished, {progress['failed']} failed"
    ]
    for run in submission["runs"]:
        score = "" if run["test_score"] is None else f"{run['test_score']:.6g}"
        lines.append(f"  run {run['index']:>3}  {run['status']:<10} {score}  {run.get('error_message') or ''}".rstrip())
    if submission.get("error_message"):
        lines.append(f"  {submission['error_message']}")
    return "\n".join(lines)


def wait(client: Client, args, submission_id: int) -> None:
    deadline = time.monotonic() + args.timeout
    while True:
        submission = client.request("GET", f"/api/submissions/{submission_id}/")
        if submission["status"] in ENDED or time.monotonic() > deadline:
            emit(args, submission, submission_text(submission))
            if submission["status"] not in ENDED:
                raise ApiError(f"still {submission['status']} after {args.timeout:.0f} s")
            if submission["status"] != "scored":
                raise ApiError(f"submission {submission_id} {submission['status']}")
            return
        time.sleep(2)


def cmd_status(client: Client, args) -> None:
    submission = client.request("GET", f"/api/submissions/{args.submission}/")
    emit(args, submission, submission_text(submission))


def _number(value) -> str:
    """A figure with 4 digits after the point, by the pages' rule (``leaderboard.web.numbers``): scientific
    notation from 1e9 up and for non-zero magnitudes below 1e-4 (a score of 1e18 printed all its digits); other
    values rounded as a rounded board rounds (``evaluation.boards.shown_score``: half-way, read to 9 decimals of
    value * 10^4, to the even digit), which this standard-library client writes out again (a test holds the copies
    together)."""
    if value is None:
        return "-"
    scientific = math.isfinite(value) and value != 0 and not 1e-4 <= abs(value) < 1e9
    if scientific:
        return f"{value:.4e}"
    if math.isfinite(value):
        cleaning = 10.0**9
        value = round(round(value * 1e4 * cleaning) / cleaning) / 1e4 + 0.0
    return f"{value:.4f}"


def _entry_line(e: dict) -> str:
    mean, boo = e["mean"], e.get("boo_n") or {}
    interval = (
        f"{_number(mean['estimate'])} [{_number(mean['low'])}, {_number(mean['high'])}]"
        if mean.get("low") is not None
        else _number(mean.get("estimate"))
    )
    runs = f"{e['runs_succeeded']}/{e['runs_expected']}"
    return (
        f"{e['rank_display'] or '-':>5} {e['groups'] or '-':<6} {(e.get('team') or '-')[:20]:<20} "
        f"{e['method_name'][:36]:<36} {runs:>7} "
        f"{interval:<30} {_number(boo.get('estimate'))}"
    )


def leaderboard_text(board: dict, private_board: bool = True) -> str:
    """One headed table per section (recipes retrained by the server, prediction files): ranks are per section.

    ``private_board``: whether the challenge has a private board (``public_fraction`` below 1); the footer
    offers ``--board private`` only then."""
    by_id = {e["submission_id"]: e for e in board["entries"]}
    level = f"mean [{100 * (board.get('settings') or {}).get('confidence', 0.95):g}% interval]"
    header = f"{'rank':>5} {'group':<6} {'team':<20} {'entry':<36} {'runs':>7} {level:<30} Boo_n"
    blocks: list[str] = []
    shown: set[int] = set()
    for section in board["sections"]:
        entries = [by_id[i] for i in section["entries"] if i in by_id]
        shown.update(e["submission_id"] for e in entries)
        imported = bool(entries) and all(e.get("provenance") for e in entries)  # as the web page says it
        label = "Imported runs (published elsewhere)" if imported else section["label"]
        title = f"{label} ({len(entries)} {'entry' if len(entries) == 1 else 'entries'})"
        design = "" if imported else section.get("design") or ""
        blocks.append(
            "\n".join([f"== {title} ==", design, header, *(_entry_line(e) for e in entries)]).replace("\n\n", "\n")
        )
    rest = [e for e in board["entries"] if e["submission_id"] not in shown]
    if rest:
        blocks.append("\n".join(["== Not ranked ==", header, *(_entry_line(e) for e in rest)]))
    if not blocks:
        return f"{board['challenge']}: no scored entries yet"
    note = "Ranks and groups are within a section: sections are never compared with each other."
    if board.get("board") == "private":
        which = "The private board."
    elif private_board:
        which = "The public board (--board private: the private one, where you may read it)."
    else:
        which = "The challenge's only board (every hidden row is public: it has no private board)."
    return "\n\n".join(blocks) + ("\n\n" + note if len(board["sections"]) > 1 else "") + "\n" + which


def cmd_leaderboard(client: Client, args) -> None:
    path = f"/api/challenges/{args.challenge}/leaderboard/"
    query = [("format", "csv")] if args.csv else []
    if args.board:
        query.append(("board", args.board))
    if query:
        path += "?" + urllib.parse.urlencode(query)
    if args.csv:
        print(client.request("GET", path, accept="text/csv"), end="")
        return
    board = client.request("GET", path)
    private_board = True
    if board.get("board") != "private" and not args.json:  # the footer says whether --board private exists
        challenge = client.request("GET", f"/api/challenges/{args.challenge}/")
        private_board = float(challenge.get("public_fraction", 0.0)) < 1.0
    emit(args, board, leaderboard_text(board, private_board))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="varboard", description=__doc__.split("\n\n")[0])
    p.add_argument("--url", type=server_url, default=os.environ.get("VARBOARD_URL", "http://127.0.0.1:8000"))
    p.add_argument("--token", default=os.environ.get("VARBOARD_TOKEN"))
    p.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    common = argparse.ArgumentParser(add_help=False)  # --json after the command works too
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    sub = p.add_subparsers(dest="command", required=True)
    login = sub.add_parser(
        "login", parents=[common], help="get an API token (password from VARBOARD_PASSWORD or a prompt)"
    )
    login.add_argument("username")
    sub.add_parser("challenges", parents=[common], help="list the challenges you can see")
    download = sub.add_parser(
        "download",
        parents=[common],
        help="save a challenge's data files (every part it serves: train, test inputs, sample submission)",
    )
    download.add_argument("challenge")
    download.add_argument("--dir", help="folder to save them in (default: ./<challenge>/)")
    download.add_argument(
        "--part",
        action="append",
        help="only this part, e.g. train, test_inputs, sample_submission, hidden_labels (hosts); repeatable",
    )
    join = sub.add_parser("join", parents=[common], help="take part in a challenge (register, accepting its rules)")
    join.add_argument("challenge")
    join.add_argument("--accept-rules", action="store_true", help="accept the challenge's rules (read them first)")
    teams = sub.add_parser(
        "teams",
        parents=[common],
        help="your teams and invitations; create, invite, accept, decline, leave (teams by name or id)",
    )
    team_actions = teams.add_subparsers(dest="action")
    team_actions.add_parser("list", parents=[common], help="your teams and the invitations waiting for you")
    team_actions.add_parser("create", parents=[common], help="create a team").add_argument("name")
    invite = team_actions.add_parser("invite", parents=[common], help="invite a user to one of your teams")
    invite.add_argument("team")
    invite.add_argument("username")
    for verb in ("accept", "decline"):
        team_actions.add_parser(verb, parents=[common], help=f"{verb} a team's invitation").add_argument("team")
    team_actions.add_parser("leave", parents=[common], help="leave a team (before it submits)").add_argument("team")
    finals = sub.add_parser(
        "finals",
        parents=[common],
        help="your submissions with the final entries (private board) marked; --choose/--drop change them",
    )
    finals.add_argument("challenge")
    finals.add_argument("--choose", type=int, action="append", metavar="ID", help="choose a submission (repeatable)")
    finals.add_argument("--drop", type=int, action="append", metavar="ID", help="un-choose a submission (repeatable)")
    cancel = sub.add_parser("cancel", parents=[common], help="cancel a queued or running submission")
    cancel.add_argument("submission", type=int)
    submit = sub.add_parser("submit", parents=[common], help="submit prediction files (one per seed) or a recipe")
    submit.add_argument("challenge")
    submit.add_argument("files", nargs="*", help="prediction CSV files: each file is a run")
    submit.add_argument("--method", required=True, help="the entry's method name")
    submit.add_argument("--description")
    submit.add_argument("--team", help="team name or id (default: your personal team)")
    submit.add_argument("--recipe", help="a recipe .py file instead of prediction files")
    submit.add_argument("--hyperparameters", help="JSON object overriding the recipe's HYPERPARAMETERS")
    submit.add_argument("--wait", action="store_true", help="wait until it is scored and show the runs")
    submit.add_argument("--timeout", type=float, default=1800)
    status = sub.add_parser("status", parents=[common], help="a submission's status and runs")
    status.add_argument("submission", type=int)
    board = sub.add_parser("leaderboard", parents=[common], help="the statistical leaderboard, section by section")
    board.add_argument("challenge")
    board.add_argument("--csv", action="store_true")
    board.add_argument(
        "--board",
        choices=["public", "private"],
        help="the board to read (default: the public one); the private board once revealed, or for its hosts",
    )
    return p


COMMANDS = {
    "login": cmd_login,
    "challenges": cmd_challenges,
    "download": cmd_download,
    "join": cmd_join,
    "teams": cmd_teams,
    "submit": cmd_submit,
    "status": cmd_status,
    "finals": cmd_finals,
    "cancel": cmd_cancel,
    "leaderboard": cmd_leaderboard,
}


def main(argv: list[str] | None = None) -> int:
    cli = parser()
    args = cli.parse_args(argv)
    if getattr(args, "csv", False) and args.json:  # one output format: --csv --json printed CSV without a word
        cli.error("--csv and --json each choose the output: give one of them")
    token = args.token or (TOKEN_FILE.read_text().strip() if TOKEN_FILE.exists() else None)
    client = Client(args.url, None if args.command == "login" else token)
    try:
        COMMANDS[args.command](client, args)
        sys.stdout.flush()
    except ApiError as exc:
        print(json.dumps({"error": str(exc)}) if args.json else f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (``varboard status 3 | head``): say nothing more. Python would flush
        # stdout again at exit and print a traceback; point it at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return SIGPIPE_EXIT
    except KeyboardInterrupt:
        return 130
    return 0


def run() -> None:
    """The ``varboard`` console script."""
    sys.exit(main())


if __name__ == "__main__":
    run()
