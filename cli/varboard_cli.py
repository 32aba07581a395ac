#!/usr/bin/env python3
"""varboard's command-line client: one file, standard library only, talks to the REST API.

    python3 varboard_cli.py --url http://127.0.0.1:8000 login alice
    python3 varboard_cli.py challenges
    python3 varboard_cli.py submit digits --method "logreg, 3 seeds" seed0.csv seed1.csv seed2.csv --wait
    python3 varboard_cli.py submit digits --method "my MLP" --recipe my_recipe.py --hyperparameters '{"lr": 0.01}'
    python3 varboard_cli.py status 12
    python3 varboard_cli.py leaderboard digits [--csv]

``login`` stores the token in ``~/.config/varboard/token`` (or use ``--token`` /
``VARBOARD_TOKEN``); ``--url`` defaults to ``VARBOARD_URL`` or http://127.0.0.1:8000.
"""

from __future__ import annotations

import argparse
import getpass
import json
import mimetypes
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

TOKEN_FILE = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "varboard" / "token"
ENDED = {"scored", "failed", "cancelled"}


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
        head = (f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{path.name}"\r\n'
                f"Content-Type: {kind}\r\n\r\n").encode()
        parts.append(head + path.read_bytes() + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


class Client:
    def __init__(self, url: str, token: str | None):
        self.url = url.rstrip("/")
        self.token = token

    def request(self, method: str, path: str, *, data: bytes | None = None, content_type: str | None = None,
                accept: str = "application/json"):
        headers = {"Accept": accept}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        if content_type:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            raise ApiError(f"{exc.code}: {self._message(exc.read())}") from None
        except urllib.error.URLError as exc:
            raise ApiError(f"cannot reach {self.url}: {exc.reason}") from None
        return json.loads(body) if accept == "application/json" else body.decode()

    @staticmethod
    def _message(body: bytes) -> str:
        try:
            data = json.loads(body)
        except ValueError:
            return body.decode(errors="replace")[:500]
        return data.get("detail", json.dumps(data)) if isinstance(data, dict) else json.dumps(data)


def cmd_login(client: Client, args) -> None:
    password = os.environ.get("VARBOARD_PASSWORD") or getpass.getpass(f"password for {args.username}: ")
    body = urllib.parse.urlencode({"username": args.username, "password": password}).encode()
    token = client.request("POST", "/api/auth/token/", data=body,
                           content_type="application/x-www-form-urlencoded")["token"]
    TOKEN_FILE.parent.mkdir(parents=True, exist_ok=True)
    TOKEN_FILE.write_text(token)
    TOKEN_FILE.chmod(0o600)
    print(f"logged in as {args.username}; token saved in {TOKEN_FILE}")


def cmd_challenges(client: Client, args) -> None:
    for challenge in client.request("GET", "/api/challenges/?limit=200")["results"]:
        kinds = "+".join(k for k, on in (("predictions", challenge["allow_predictions"]),
                                         ("recipes", challenge["allow_recipes"])) if on)
        print(f"{challenge['slug']:<28} {challenge['metric']:<18} {kinds:<20} {challenge['title']}")


def cmd_submit(client: Client, args) -> None:
    fields = {"method_name": args.method, "description": args.description or ""}
    if args.team is not None:
        fields["team"] = str(args.team)
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
    submission = client.request("POST", f"/api/challenges/{args.challenge}/submissions/", data=data,
                                content_type=content_type)
    print(f"submission {submission['id']} {submission['status']}: {submission['url']}")
    if args.wait:
        wait(client, submission["id"], args.timeout)


def show_submission(submission: dict) -> None:
    progress = submission["progress"]
    print(f"submission {submission['id']} ({submission['method_name']}): {submission['status']}, "
          f"{progress['finished']}/{progress['expected']} runs finished, {progress['failed']} failed")
    for run in submission["runs"]:
        score = "" if run["test_score"] is None else f"{run['test_score']:.6g}"
        print(f"  run {run['index']:>3}  {run['status']:<10} {score}  {run.get('error_message') or ''}".rstrip())
    if submission.get("error_message"):
        print(f"  {submission['error_message']}")


def wait(client: Client, submission_id: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        submission = client.request("GET", f"/api/submissions/{submission_id}/")
        if submission["status"] in ENDED or time.monotonic() > deadline:
            show_submission(submission)
            if submission["status"] not in ENDED:
                raise ApiError(f"still {submission['status']} after {timeout:.0f} s")
            if submission["status"] != "scored":
                raise ApiError(f"submission {submission_id} {submission['status']}")
            return
        time.sleep(2)


def cmd_status(client: Client, args) -> None:
    show_submission(client.request("GET", f"/api/submissions/{args.submission}/"))


def cmd_leaderboard(client: Client, args) -> None:
    if args.csv:
        print(client.request("GET", f"/api/challenges/{args.challenge}/leaderboard/?format=csv", accept="text/csv"),
              end="")
        return
    board = client.request("GET", f"/api/challenges/{args.challenge}/leaderboard/")
    print(f"{'rank':>5} {'group':<6} {'entry':<36} {'runs':>7} {'mean [95% interval]':<30} Boo_n")
    for e in board["entries"]:
        mean, boo = e["mean"], e["boo_n"]
        interval = f"{mean['estimate']:.4f} [{mean['low']:.4f}, {mean['high']:.4f}]" if mean["low"] is not None \
            else f"{mean['estimate']:.4f}"
        runs = f"{e['runs_succeeded']}/{e['runs_expected']}"
        print(f"{e['rank_display'] or '-':>5} {e['groups'] or '-':<6} {e['method_name'][:36]:<36} {runs:>7} "
              f"{interval:<30} {boo['estimate']:.4f}")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="varboard_cli.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=os.environ.get("VARBOARD_URL", "http://127.0.0.1:8000"))
    p.add_argument("--token", default=os.environ.get("VARBOARD_TOKEN"))
    sub = p.add_subparsers(dest="command", required=True)
    login = sub.add_parser("login", help="get an API token (password from VARBOARD_PASSWORD or a prompt)")
    login.add_argument("username")
    sub.add_parser("challenges", help="list the challenges you can see")
    submit = sub.add_parser("submit", help="submit prediction files (one per seed) or a recipe")
    submit.add_argument("challenge")
    submit.add_argument("files", nargs="*", help="prediction CSV files: each file is a run")
    submit.add_argument("--method", required=True, help="the entry's method name")
    submit.add_argument("--description")
    submit.add_argument("--team", type=int, help="team id (default: your personal team)")
    submit.add_argument("--recipe", help="a recipe .py file instead of prediction files")
    submit.add_argument("--hyperparameters", help="JSON object overriding the recipe's HYPERPARAMETERS")
    submit.add_argument("--wait", action="store_true", help="wait until it is scored and show the runs")
    submit.add_argument("--timeout", type=float, default=1800)
    status = sub.add_parser("status", help="a submission's status and runs")
    status.add_argument("submission", type=int)
    board = sub.add_parser("leaderboard", help="the statistical leaderboard")
    board.add_argument("challenge")
    board.add_argument("--csv", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    token = args.token or (TOKEN_FILE.read_text().strip() if TOKEN_FILE.exists() else None)
    client = Client(args.url, None if args.command == "login" else token)
    commands = {"login": cmd_login, "challenges": cmd_challenges, "submit": cmd_submit, "status": cmd_status,
                "leaderboard": cmd_leaderboard}
    try:
        commands[args.command](client, args)
    except ApiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
