"""Entries: a team's method, its versions, and the team's final selection for the private board.

An *entry* is a team's method name: a new submission under the same name is a new version of
that entry. The public board shows one version per entry (the latest; after the reveal the selected one
where the host's ``board_version`` is ``selected``); the private board shows each team's final selection: up to
``Challenge.final_entries`` submissions it chose, or else its best N public-board entries by the
ranking statistic. Every version still counts in m (every test-set evaluation does).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from evaluation import stats
from evaluation.metrics import get_metric
from evaluation.report.entries import complete_pairs

from ..choices import BoardVersion, RankingStatistic, SubmissionKind, SubmissionStatus, TestRows
from ..models import Challenge, Submission
from ..selectors import SNAPSHOT_RUN_COLUMNS as RUN
from ..selectors import SNAPSHOT_SUBMISSION_COLUMNS as SUB
from ..selectors import ChallengeRuns, board_has_private, challenge_runs, private_board_revealed, submissions_readable


@dataclass(frozen=True)
class Version:
    """One submission as a version of its entry."""

    submission_id: int
    team_id: int
    method_name: str
    number: int  # 1 for the first version
    selected: bool
    scores_private: bool  # its phase scores the private part too
    public: tuple  # (public scores, valid scores) of its succeeded runs
    kind: str = SubmissionKind.RECIPE
    moderated: bool = False  # a host hid or disqualified it (or its team): on no board
    listed: bool = True  # anyone may open it (scored, not moderated): a board's row counts it among its versions


def entry_versions(*, challenge: Challenge, snapshot: ChallengeRuns | None = None) -> dict[int, Version]:
    """Every submission of the challenge that is not cancelled and has a run scored on the public part.

    ``snapshot``: the challenge's runs and submissions already read (a report update reads them once)."""
    snapshot = challenge_runs(challenge=challenge) if snapshot is None else snapshot
    column = "public_score" if board_has_private(challenge) else "test_score"  # see boards.board_fields
    runs = snapshot.scored(column)
    score, valid = RUN.index(column), RUN.index("valid_score")
    team, method, state, selected, rows, kind, moderated = (
        SUB.index(c)
        for c in ("team_id", "method_name", "status", "selected_for_final", "phase__test_rows", "kind", "moderated")
    )
    kept = [sub for sub in snapshot.submissions if sub[state] != SubmissionStatus.CANCELLED]
    counts: dict[tuple, int] = defaultdict(int)
    numbered = []  # (id, (row, its version number), its scored runs) of each one with a scored run
    for sub in kept:
        key = (sub[team], sub[method])
        counts[key] += 1
        group = runs.get(sub[0])
        if group is not None:
            numbered.append((sub[0], (sub, counts[key]), group))
    scores, valids = itemgetter(score), itemgetter(valid)  # one C call per column of a group, not a generator

    def version(numbered_row, group) -> Version:
        sub, number = numbered_row
        return Version(
            sub[0],
            sub[team],
            sub[method],
            number,
            sub[selected],
            sub[rows] != TestRows.PUBLIC,
            (tuple(map(scores, group)), tuple(map(valids, group))),
            sub[kind],
            bool(sub[moderated]),
            sub[state] == SubmissionStatus.SCORED and not sub[moderated],
        )

    # Built again only for the submissions whose row, runs or number changed (issue 27: ChallengeRuns.per_submission
    # compares the objects; a (row, number) pair is a new object each time, so the memo compares its parts).
    memo = snapshot.memos.get(f"versions:{column}", {})
    items = []
    for sid, pair, group in numbered:
        old = memo.get(sid)
        if old is not None and old[0][0] is pair[0] and old[0][1] == pair[1]:
            pair = old[0]
        items.append((sid, pair, group))
    return snapshot.per_submission(f"versions:{column}", items, version)


def published_version_numbers(versions: dict[int, Version]) -> dict[int, tuple[int, int]]:
    """``(version, versions)`` of each submission as a board's row publishes it: among the versions of its entry that
    anyone may open (:attr:`Version.listed`: scored, not moderated) and itself, in submission order.

    A board is read by everyone, the same stored report: its row counted every submission of the entry not cancelled,
    and a rival's next version still queued or running, one that failed, one a host hid, each answered 404 to
    everyone else, still made "v1 of 4" of the row (tests/platform/test_leaks_v4.py)."""
    by_entry: dict[tuple, list[Version]] = defaultdict(list)
    for version in sorted(versions.values(), key=lambda v: v.number):
        by_entry[(version.team_id, version.method_name)].append(version)
    out: dict[int, tuple[int, int]] = {}
    for members in by_entry.values():  # one pass per entry: a row's number is 1 + the listed versions before it
        listed = sum(v.listed for v in members)
        before = 0
        for version in members:
            out[version.submission_id] = (before + 1, listed + (not version.listed))
            before += version.listed
    return out


def selection_on_public_board(challenge: Challenge) -> bool:
    """Whether the public board shows each entry's selected version (``board_version`` ``selected``).

    The selection is also the team's final choice for the private board, which nobody else may read before the
    reveal (the API keeps ``selected_for_final`` to the team): where a private board exists, the public board shows
    each entry's latest version until the reveal, and the selected one after it. Before, the row shown (version k of
    n, its score) told everyone which version a team had chosen (tests/platform/test_leaks_v4.py)."""
    return challenge.board_version == BoardVersion.SELECTED and (
        not board_has_private(challenge) or private_board_revealed(challenge=challenge)
    )


def public_board_ids(*, challenge: Challenge, versions: dict[int, Version] | None = None) -> set[int]:
    """The version of each entry the public board shows: the latest selected one where the selection is shown
    (:func:`selection_on_public_board`), else the latest; never one a host moderated (on no board: its entry shows
    the version before it, where it vanished from the board and so told that a host had hidden its latest
    version)."""
    versions = entry_versions(challenge=challenge) if versions is None else versions
    by_entry: dict[tuple, list[Version]] = defaultdict(list)
    for version in versions.values():
        if version.moderated:
            continue
        by_entry[(version.team_id, version.method_name)].append(version)
    shown = set()
    by_selection = selection_on_public_board(challenge)
    for members in by_entry.values():
        members.sort(key=lambda v: v.number)
        selected = [v for v in members if v.selected] if by_selection else []
        shown.add((selected or members)[-1].submission_id)
    return shown


def ranking_value(challenge: Challenge, version: Version) -> float:
    """The version's public ranking statistic as the board ranks by it, oriented so that higher is better: a
    prediction entry by its files pooled (:meth:`evaluation.metrics.Metric.pool_files`; never Boo_n, as the
    report's prediction section), a recipe by Boo_n or the mean of its runs."""
    public, valid = (np.array([np.nan if x is None else x for x in part], dtype=np.float64) for part in version.public)
    if version.kind == SubmissionKind.PREDICTIONS:
        value = float(public.mean()) if challenge.scoring_program else get_metric(challenge.metric).pool_files(public)
    elif challenge.ranking_statistic == RankingStatistic.BOO_N:
        keep, _ = complete_pairs(np.arange(valid.size), valid)  # eq. 7 on the complete pairs, as the report
        public, valid = (public, None) if not keep.any() else (public[keep], valid[keep])
        value = stats.boo_n(public, challenge.boo_n, valid=valid, higher_is_better=challenge.higher_is_better)
    else:
        value = float(public.mean())
    return value if challenge.higher_is_better else -value


def final_selection_ids(*, challenge: Challenge, versions: dict[int, Version] | None = None) -> set[int]:
    """The private board's submissions: per team its chosen ones, else its best N public-board entries."""
    versions = entry_versions(challenge=challenge) if versions is None else versions
    shown = public_board_ids(challenge=challenge, versions=versions)
    by_team: dict[int, list[Version]] = defaultdict(list)
    for version in versions.values():
        if version.scores_private:
            by_team[version.team_id].append(version)
    chosen: set[int] = set()
    for members in by_team.values():
        selected = [v.submission_id for v in members if v.selected]
        if selected:
            chosen.update(selected[-challenge.final_entries :])
            continue
        candidates = sorted(
            (v for v in members if v.submission_id in shown),
            key=lambda v: (-ranking_value(challenge, v), v.submission_id),
        )
        chosen.update(v.submission_id for v in candidates[: challenge.final_entries])
    return chosen


def entry_history(*, submission: Submission, user) -> list[Submission]:
    """The versions of the submission's entry (same team, same method name) ``user`` may open, oldest first."""
    return list(
        submissions_readable(user=user, challenge=submission.challenge)
        .filter(team_id=submission.team_id, method_name=submission.method_name)
        .order_by("created", "id")
    )
