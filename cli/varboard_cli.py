#!/usr/bin/env python3
"""varboard's command-line client: one file, standard library only, talks to the REST API.

    varboard --url http://127.0.0.1:8000 login alice
    varboard challenges
    varboard download digits [--dir data/]
    varboard submit digits --method "logreg, 3 seeds" seed0.csv seed1.csv seed2.csv --wait
    varboard submit digits --method "my MLP" --recipe my_recipe.py --hyperparameters '{"lr": 0.01}'
    varboard status 12
    varboard leaderboard digits [--csv]

Install it with ``pip install ./cli`` (the ``varboard`` command), or run ``python3 cli/varboard_cli.py``.
Every command takes ``--json``: the server's answer as JSON on stdout, and errors as
``{"error": ...}`` on stderr. ``login`` stores the token in ``~/.config/varboard/token`` (or use
``--token`` / ``VARBOARD_TOKEN``); ``--url`` defaults to ``VARBOARD_URL`` or http://127.0.0.1:8000.
Exit status: 0 done, 1 an error (its message on stderr), 141 the reader of the output went away.
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
                accept: str = "application/json", raw: bool = False):
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
        if raw:
            return body
        return json.loads(body) if accept == "application/json" else body.decode()

    @staticmethod
    def _message(body: bytes) -> str:
        try:
            data = json.loads(body)
        except ValueError:
            return body.decode(errors="replace")[:500]
        return data.get("detail", json.dumps(data)) if isinstance(data, dict) else json.dumps(data)


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
    emit(args, {"username": args.username, "token_file": str(TOKEN_FILE), "token_key": answer["token_key"],
                "expiry": answer["expiry"]}, f"logged in as {args.username}; token saved in {TOKEN_FILE}")


def cmd_challenges(client: Client, args) -> None:
    challenges = client.request("GET", "/api/challenges/?limit=200")["results"]
    lines = []
    for challenge in challenges:
        kinds = "+".join(k for k, on in (("predictions", challenge["allow_predictions"]),
                                         ("recipes", challenge["allow_recipes"])) if on)
        lines.append(f"{challenge['slug']:<28} {challenge['metric']:<18} {kinds:<20} {challenge['title']}")
    emit(args, challenges, "\n".join(lines) if lines else "no challenges")


def cmd_download(client: Client, args) -> None:
    """Save the challenge's public data files (training rows, test inputs, a sample submission)."""
    client.request("GET", f"/api/challenges/{args.challenge}/")  # an unknown challenge: its 404, said once
    folder = Path(args.dir or args.challenge)
    folder.mkdir(parents=True, exist_ok=True)
    saved, missing = [], []
    for part in args.part or DATA_PARTS:
        try:
            content = client.request("GET", f"/api/challenges/{args.challenge}/data/{part}/", accept="*/*",
                                     raw=True)
        except ApiError as exc:
            if not str(exc).startswith("404") or args.part:
                raise
            missing.append(part)  # e.g. a results-only challenge has no sample submission
            continue
        path = folder / f"{part}.csv"
        path.write_bytes(content)
        saved.append({"part": part, "path": str(path), "bytes": len(content)})
    if not saved:
        raise ApiError(f"challenge {args.challenge} has no data files to download")
    text = "\n".join(f"{row['path']}  ({row['bytes']:,} bytes)" for row in saved)
    if missing:
        text += f"\n(no {', '.join(missing)} file in this challenge)"
    emit(args, {"challenge": args.challenge, "files": saved, "missing": missing}, text)


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
    if not args.wait:
        emit(args, submission, f"submission {submission['id']} {submission['status']}: {submission['url']}")
        return
    if not args.json:
        print(f"submission {submission['id']} {submission['status']}: {submission['url']}", flush=True)
    wait(client, args, submission["id"])


def submission_text(submission: dict) -> str:
    progress = submission["progress"]
    lines = [f"submission {submission['id']} ({submission['method_name']}): {submission['status']}, "
             f"{progress['finished']}/{progress['expected']} runs finished, {progress['failed']} failed"]
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
    return "-" if value is None else f"{value:.4f}"


def _entry_line(e: dict) -> str:
    mean, boo = e["mean"], e.get("boo_n") or {}
    interval = f"{_number(mean['estimate'])} [{_number(mean['low'])}, {_number(mean['high'])}]" \
        if mean.get("low") is not None else _number(mean.get("estimate"))
    runs = f"{e['runs_succeeded']}/{e['runs_expected']}"
    return (f"{e['rank_display'] or '-':>5} {e['groups'] or '-':<6} {e['method_name'][:36]:<36} {runs:>7} "
            f"{interval:<30} {_number(boo.get('estimate'))}")


def leaderboard_text(board: dict) -> str:
    """One headed table per section (recipes retrained by the server, prediction files): ranks are per section."""
    by_id = {e["submission_id"]: e for e in board["entries"]}
    header = f"{'rank':>5} {'group':<6} {'entry':<36} {'runs':>7} {'mean [95% interval]':<30} Boo_n"
    blocks, shown = [], set()
    for section in board["sections"]:
        entries = [by_id[i] for i in section["entries"] if i in by_id]
        shown.update(e["submission_id"] for e in entries)
        imported = bool(entries) and all(e.get("provenance") for e in entries)  # as the web page says it
        label = "Imported runs (published elsewhere)" if imported else section["label"]
        title = f"{label} ({len(entries)} {'entry' if len(entries) == 1 else 'entries'})"
        design = "" if imported else section.get("design") or ""
        blocks.append("\n".join([f"== {title} ==", design, header,
                                 *(_entry_line(e) for e in entries)]).replace("\n\n", "\n"))
    rest = [e for e in board["entries"] if e["submission_id"] not in shown]
    if rest:
        blocks.append("\n".join(["== Not ranked ==", header, *(_entry_line(e) for e in rest)]))
    if not blocks:
        return f"{board['challenge']}: no scored entries yet"
    note = "Ranks and groups are within a section: sections are never compared with each other."
    return "\n\n".join(blocks) + ("\n\n" + note if len(board["sections"]) > 1 else "")


def cmd_leaderboard(client: Client, args) -> None:
    if args.csv:
        print(client.request("GET", f"/api/challenges/{args.challenge}/leaderboard/?format=csv", accept="text/csv"),
              end="")
        return
    board = client.request("GET", f"/api/challenges/{args.challenge}/leaderboard/")
    emit(args, board, leaderboard_text(board))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="varboard", description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=os.environ.get("VARBOARD_URL", "http://127.0.0.1:8000"))
    p.add_argument("--token", default=os.environ.get("VARBOARD_TOKEN"))
    p.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    common = argparse.ArgumentParser(add_help=False)  # --json after the command works too
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    sub = p.add_subparsers(dest="command", required=True)
    login = sub.add_parser("login", parents=[common], help="get an API token (password from VARBOARD_PASSWORD "
                                                            "or a prompt)")
    login.add_argument("username")
    sub.add_parser("challenges", parents=[common], help="list the challenges you can see")
    download = sub.add_parser("download", parents=[common], help="save a challenge's data files (train, test "
                                                                  "inputs, sample submission)")
    download.add_argument("challenge")
    download.add_argument("--dir", help="folder to save them in (default: ./<challenge>/)")
    download.add_argument("--part", action="append", choices=DATA_PARTS, help="only this file (repeatable)")
    submit = sub.add_parser("submit", parents=[common], help="submit prediction files (one per seed) or a recipe")
    submit.add_argument("challenge")
    submit.add_argument("files", nargs="*", help="prediction CSV files: each file is a run")
    submit.add_argument("--method", required=True, help="the entry's method name")
    submit.add_argument("--description")
    submit.add_argument("--team", type=int, help="team id (default: your personal team)")
    submit.add_argument("--recipe", help="a recipe .py file instead of prediction files")
    submit.add_argument("--hyperparameters", help="JSON object overriding the recipe's HYPERPARAMETERS")
    submit.add_argument("--wait", action="store_true", help="wait until it is scored and show the runs")
    submit.add_argument("--timeout", type=float, default=1800)
    status = sub.add_parser("status", parents=[common], help="a submission's status and runs")
    status.add_argument("submission", type=int)
    board = sub.add_parser("leaderboard", parents=[common], help="the statistical leaderboard, section by section")
    board.add_argument("challenge")
    board.add_argument("--csv", action="store_true")
    return p


COMMANDS = {"login": cmd_login, "challenges": cmd_challenges, "download": cmd_download, "submit": cmd_submit,
            "status": cmd_status, "leaderboard": cmd_leaderboard}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
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
