"""What the leaderboard pages show: the cached report arranged for the templates, with SVG charts.

Pure presentation: reads the report (``report_data``), never writes. Views call
``leaderboard_for_page`` and ``pair_for_display``.
"""

from __future__ import annotations

from datetime import datetime

from django.urls import reverse
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from evaluation.report import ReportSettings, flip_comparison, section_pairs
from evaluation.report.sections import MIN_EXAMPLES_RANK_INTERVAL, MIN_RUNS_MEAN_RANK_INTERVAL, rank_runs_rule
from evaluation.stats.boon import min_runs_flag, min_runs_rule

from ..choices import Board, Correction
from ..models import Challenge
from ..selectors import submission_ids_open_to_all
from ..services.errors import ServiceError
from ..services.paging import PAGE_SIZE, EntriesPage, EntryNotOnBoard, around_missing, entries_page, heatmap_ids
from ..services.reports import report_data, report_failure
from . import charts

#: A verdict of row A against column B, in words (``{a}``/``{b}``: the method names).
VERDICT_WORDS = {
    "a_better": "{a} is better",
    "b_better": "{b} is better",
    "not_significant": "cannot tell apart",
    "not_meaningful": "significant, but not meaningful (below γ)",
    "not_significant_after_correction": "undecided: the test's adjusted p-value is not below α",
}
#: The test behind a pair's p-value, by the comparison's ``method`` (``evaluation.stats.outperform.score_tests``,
#: ``evaluation.stats.testset``): the test dual to the pair's interval.
TEST_WORDS = {
    "wilson": "Wilson's score test of P(A>B) = ½ on the paired runs",
    "newcombe": "Mann–Whitney z-test on the runs",
    "mcnemar": "exact McNemar test over the test examples",
    "paired-t": "paired t-test over the test examples",
    "welch-t": "Welch's t-test with the spread between prediction files",
}
#: Entries drawn together in the section's Boo_n-against-n chart (one colour each).
CURVES_SHOWN = len(charts.PALETTE)
#: Entries of a paged board's page drawn in the section's chart of every run.
STRIP_PAGED = 12


def entry_label(row: dict) -> str:
    return f"{row['method_name']} ({row['team']})"


def imported_source(provenance: list, *, has_dataset: bool) -> dict | None:
    """The imported results of a challenge without a dataset (published or self-reported runs made elsewhere), for
    the page's header and its provenance card; None for a challenge whose entries varboard scores itself."""
    if not provenance or has_dataset:
        return None
    entries = [
        {
            "method_name": p.submission.method_name,
            "team": p.submission.team.name,
            "source": p.get_source_display(),
            "published": p.source == p.Source.PUBLISHED,
            "link": p.link,
            "note": p.note,
            "runs": p.submission.runs_expected,
        }
        for p in provenance
    ]
    teams = sorted({entry["team"] for entry in entries})
    kind = "published" if all(entry["published"] for entry in entries) else "self-reported"
    return {"entries": entries, "source": f"{kind}, {teams[0]}" if len(teams) == 1 else f"{kind}, {len(teams)} sources"}


def compare_url(slug: str, a: int, b: int) -> str:
    return f"{reverse('challenge-compare', kwargs={'slug': slug})}?{urlencode({'a': a, 'b': b})}"


def verdict_text(pair: dict) -> str:
    return VERDICT_WORDS[pair["verdict"]].format(a=pair["a_name"], b=pair["b_name"])


def p_value_text(p: float | None) -> str:
    return "—" if p is None else ("< 0.0001" if p < 1e-4 else f"{p:.4f}")


def pair_for_display(slug: str, pair: dict, *, winner_first: bool = True) -> dict:
    """A comparison for display (the winner first, unless told), the verdict in words, p-values as text, a link."""
    shown = flip_comparison(pair) if winner_first and pair["verdict"] == "b_better" else pair
    level = shown.get("level")
    return {
        **shown,
        "words": verdict_text(shown),
        "url": compare_url(slug, shown["a"], shown["b"]),
        "pvalue_text": p_value_text(shown["pvalue"]),
        "pvalue_raw_text": p_value_text(shown["pvalue_raw"]),
        "level_pct": None if level is None else f"{100 * level:.3g}",
        "test_words": TEST_WORDS.get(shown.get("method"), "the pair's test"),
    }


def coverage_for_section(kind: str, settings: dict) -> dict:
    """The measured coverage notes that concern a section's intervals (report ``settings.coverage``)."""
    notes = [
        n
        for n in settings.get("coverage", [])
        if n["interval"].startswith(f"{kind}.") and n.get("coverage") is not None
    ]  # an interval the board does not show has no coverage
    # one decimal, as the flags below quote ranges (96.9 % read "97 %" beside "covers 90.5-96.9 %"); a flagged one
    # says so, so that no figure in the list reads as inside the targets while a line below says it is not
    # a figure measured at another k than the line names (Boo_5's at k = 50 on a Boo_4 board of 40), or for another
    # statistic (Boo_5's, the mean's for Boo_1), says so: ``at`` and ``source``
    at_k = notes[0]["k"] if notes else None
    short = [
        {
            "label": n["label"],
            "pct": f"{100 * n['coverage']:.1f}",
            "flagged": not n.get("ok", n["coverage"] >= 0.93),
            "at": None if n["k"] == at_k else f"at k = {n['k']}",
            "source": n.get("reason") if n.get("ok") else None,
        }
        for n in notes
    ]
    withheld = [
        n["reason"]
        for n in settings.get("coverage", [])
        if n["interval"] in (f"{kind}.rank", f"{kind}.rank_runs") and n.get("shown") is False
    ]  # a Boo_n board below 10n runs: no rank interval, and why; or a recipe entry of too few runs (stats21)
    return {
        "coverage_short": short,
        "coverage_k": at_k,
        # the runs the notes describe (the board's entries', stats17; a report stored before: the challenge's k)
        "board_k": notes[0].get("runs", settings.get("k_runs")) if notes else settings.get("k_runs"),
        "coverage_low": any(item["flagged"] for item in short),
        # each flagged interval the board shows, with its reason (the rank interval's range over board shapes,
        # 90.5-96.9 %; or no coverage measured at the board's k)
        "coverage_flags": [
            {"label": n["label"], "reason": n["reason"]}
            for n in settings.get("coverage", [])
            if n["interval"].startswith(f"{kind}.") and n.get("shown") and not n.get("ok") and n.get("reason")
        ],
        "rank_withheld": withheld[0] if withheld else None,
        # no entry of the section has a rank interval (below the board's rule: not one entry's too few runs), so
        # the page's account of the design does not say how they are resampled
        "rank_intervals_none": any(
            n["interval"] == f"{kind}.rank" and n.get("shown") is False for n in settings.get("coverage", [])
        ),
    }


def leaderboard_for_page(
    challenge: Challenge,
    board: str = Board.PUBLIC,
    *,
    query: str = "",
    around: int | None = None,
    offset: int = 0,
    limit: int = PAGE_SIZE,
    mine: tuple = (),
) -> dict:
    """The challenge page's leaderboard: the cached report of ``board`` (which the caller has checked the
    viewer may read, with ``services.boards.board_scope``), arranged section by section, one page of each
    section's entries (:func:`services.paging.entries_page`: ``query``, ``around``, ``offset``, ``limit``).
    The heat map shows the top entries and the neighbourhood of ``around`` or of the reader's own
    entries (``mine``, submission ids)."""
    try:
        report, data = report_data(challenge=challenge, board=board)
    except ServiceError as exc:
        return {"error": exc.message, "sections": [], "entries": 0}
    rows = {row["submission_id"]: row for row in data["entries"]}
    pages = {
        section["kind"]: _section_page(
            [rows[sid] for sid in section["entries"]], query=query, around=around, offset=offset, limit=limit
        )
        for section in data["sections"]
    }
    shown = around is None or any(page.around == around for page in pages.values())
    # Entries link to their submission page where every reader may open it (selectors.submissions_readable): not a
    # row a host hid or its team cancelled since the board was stored
    scored = submission_ids_open_to_all(challenge=challenge, ids=[sid for page in pages.values() for sid in page.ids])
    sections = []
    for section in data["sections"]:
        focus = around if around in rows else next((sid for sid in mine if sid in set(section["compared"])), None)
        sections.append(
            section_for_page(
                challenge, section, rows, scored, data["settings"], page=pages[section["kind"]], focus=focus
            )
        )
    settings = data["settings"]
    return {
        "error": None,
        "settings": settings,
        "sections": sections,
        "entries": len(rows),
        "board": board,
        "feedback": data.get("feedback") or {},
        "computed_at": report.computed_at,
        "pending": report.recompute_pending,
        "failure": report_failure(report),
        "confidence_pct": 100 * settings["confidence"],
        # "k < 10n", or for Boo_1 "k < 6": the flag of an entry with too few runs for a Boo_n interval, and its rule
        "boo_n_flag": min_runs_flag(settings["boo_n"]),
        "boo_n_rule": min_runs_rule(settings["boo_n"]),
        "rank_rule": rank_runs_rule(settings["statistic"], settings["boo_n"]),  # the runs a rank interval needs
        # a prediction entry's rank interval: from these files, or one file on these test examples (files_rank_withheld)
        "files_rank_files": MIN_RUNS_MEAN_RANK_INTERVAL,
        "files_rank_examples": MIN_EXAMPLES_RANK_INTERVAL,
        # a Boo_n board's prediction entries are ranked by their mean over the test examples (rows.entry_row): said
        "predictions_by_mean": settings["statistic"] == "boo_n" and "predictions" in pages,
        "sota_confidence_pct": 100 * (1 - settings["alpha"] / 2),
        "correction": Correction(settings["correction"]).label,
        "gamma_pct": 100 * settings["gamma"],
        "power_pct": 100 * (1 - settings.get("beta", 0.05)),
        "query": query,
        "around": around,
        # ?around= naming no entry listed: said above the board (the page answers 404), never a silent first page
        "around_missing": None if shown else around_missing(around, query=query, on_board=around in rows),
        "limit": limit,
    }


def _section_page(entries: list[dict], *, around: int | None, **paging) -> EntriesPage:
    """A section's page: around ``around`` where the section lists it, else its first page (the entry may sit
    in another section; :func:`leaderboard_for_page` says when no section lists it)."""
    try:
        return entries_page(entries, around=around, **paging)
    except EntryNotOnBoard:
        return entries_page(entries, **paging)


def section_for_page(
    challenge: Challenge, section: dict, rows: dict, scored: set, settings: dict, *, page=None, focus: int | None = None
) -> dict:
    """One section: its page of entries (all of them without ``page``), their comparisons, the heat map.

    ``rows``: every entry of the report by submission id; ``scored``: the ids whose submission page is
    public; ``focus``: the reader's entry, whose charts a paged board draws and whose neighbours its heat
    map shows.
    """
    page = page or entries_page([rows[sid] for sid in section["entries"]], limit=len(section["entries"]) or 1)
    paged = page.matched > len(page.ids) or bool(page.query)
    kind = section["kind"]
    entries = [_entry_for_page(rows[sid], kind, scored, charted=not paged or sid == focus) for sid in page.ids]
    names = {sid: row["method_name"] for sid, row in rows.items()}
    pairs = _pairs_shown(challenge.slug, section, names, page.ids, paged=paged)
    visible = set(page.ids)
    out = {
        **_section_summary(section, rows, entries),
        "page": page.as_dict(),
        "no_match": bool(page.query) and not page.ids,  # a search that matched no entry: no table, no charts
        "pairs": pairs,
        "decided": [pair for pair in pairs if pair["verdict"] == "a_better"],
        **_section_charts(kind, entries, settings, paged=paged),
        "inversions": [
            inv for inv in section.get("inversions", []) if inv["above"] in visible or inv["below"] in visible
        ],
        "groups_note": section.get("groups_note"),  # letters that are runs of the order, not a complete display
        # a rounded board's prediction section shows no interval (its outcomes are withheld): no coverage to quote
        **coverage_for_section(kind, {} if section.get("outcomes_withheld") else settings),
        **_section_heatmap(challenge.slug, section, rows, names, focus),
        "curve_max_n": ReportSettings.curve_max_n,  # the report draws Boo_n for n = 1 .. min(runs, this)
    }
    out["clipped"] = any("clip-mark" in out[name] for name in ("forest_svg", "strip_svg", "curves_svg"))
    return out


def ranks_apart(a: dict, b: dict) -> tuple[dict, dict] | None:
    """(upper, lower) when the two rows' rank intervals do not overlap, else None: the resampled ranking statistic
    puts one above the other in nearly every resample, which an undecided P(A>B) verdict does not contradict (the
    two answer different questions) but which the compare page must then explain."""
    ia, ib = a.get("rank_interval"), b.get("rank_interval")
    if not (isinstance(ia, dict) and isinstance(ib, dict)):
        return None
    if ia["high"] < ib["low"]:
        return a, b
    if ib["high"] < ia["low"]:
        return b, a
    return None


def _entry_for_page(row: dict, kind: str, scored: set, *, charted: bool) -> dict:
    """A copy of the report's ``row`` with its label, date and link, and its own charts when ``charted``
    (a paged board draws the charts of the reader's entry only)."""
    row = dict(row)
    sid = row["submission_id"]
    row["label"] = entry_label(row)
    row["created_at"] = datetime.fromisoformat(row["created"]) if row.get("created") else None
    row["url"] = reverse("submission-detail", args=[sid]) if sid in scored else None
    row["strip_svg"] = row["curve_svg"] = None
    if charted:
        prefix = f"{kind}-{sid}"
        row["strip_svg"] = mark_safe(
            charts.strip_plot(
                {row["label"]: row["run_scores"]}, title=f"Every run of {row['label']}", id_prefix=f"strip-{prefix}"
            )
        )
        row["curve_svg"] = mark_safe(
            charts.boo_n_curve(
                {row["label"]: row["boo_n_curve"]}, title=f"Boo_n against n: {row['label']}", id_prefix=f"boon-{prefix}"
            )
        )
    return row


def _pairs_shown(slug: str, section: dict, names: dict, ids: list, *, paged: bool) -> list[dict]:
    """The comparisons between the entries ``ids`` of the page, for display (a paged board stores thousands:
    it shows the decided pairs and those of neighbours on the page)."""
    position = {sid: k for k, sid in enumerate(ids)}
    return [
        pair_for_display(slug, pair)
        for pair in section_pairs(section, names, among=set(ids))
        if not paged
        or pair["verdict"] in ("a_better", "b_better")
        or abs(position[pair["a"]] - position[pair["b"]]) == 1
    ]


#: Entries named beside the leader as not beaten by any entry; the others are counted (a board of 20,000
#: close entries can have them all in the leader's group: their names alone were 270 KB of the page).
LEADER_TIES_SHOWN = 20


def _section_summary(section: dict, rows: dict, entries: list[dict]) -> dict:
    """The section's title, its entries, its leader and state of the art, in words and counts."""
    imported = bool(entries) and all(row.get("provenance") for row in entries)
    # "Not beaten by any entry" is a statement about verdicts: none where none is published (the Ladder).
    leaders = section["leader_group"] if section["compared"] else []
    return {
        "kind": section["kind"],
        "label": section["label"],
        "imported": imported,
        "title": "Imported runs (published elsewhere)" if imported else section["label"],
        "imported_runs": sum(row["runs_succeeded"] for row in entries) if imported else None,
        "paired_runs": section.get("paired_runs"),
        "n_examples": section.get("n_examples"),
        "entries": entries,
        "compared": [row for row in entries if row["compared"]],
        "n_compared": len(section["compared"]),
        "leader": rows[section["compared"][0]]["method_name"] if section["compared"] else None,
        "leader_ties": [rows[sid]["method_name"] for sid in leaders[1 : 1 + LEADER_TIES_SHOWN]],
        "leader_ties_more": max(0, len(leaders) - 1 - LEADER_TIES_SHOWN),
        "sota": dict(
            section["sota"],
            best=rows.get(section["sota"].get("submission_id"), {}).get("method_name"),
            # the entries the board's verdicts show beating it (report.sections.sota_beaten_by), by name
            beaten_by_names=[rows[sid]["method_name"] for sid in section["sota"].get("beaten_by") or () if sid in rows],
        ),
        "runs_needed": section.get("runs_needed"),
        "outcomes_withheld": section.get("outcomes_withheld"),
    }


def _section_charts(kind: str, entries: list[dict], settings: dict, *, paged: bool) -> dict:
    """The section's charts of its page of entries: intervals (forest plots), every run, Boo_n against n."""
    statistic = settings["statistic"]
    curves = [row for row in entries if row["runs_succeeded"] > 1]  # one run: Boo_n is that run at every n
    title = f"{'Boo_n' if statistic == 'boo_n' else 'Mean'} with its {settings['confidence']:.0%} interval, per entry"
    other = "mean" if statistic == "boo_n" else "boo_n"
    return {
        # each forest plot twice: as wide as its names need, and the phone's (``narrow``); the page shows one
        "forest_svg": mark_safe(
            charts.forest_plot(entries, statistic=statistic, id_prefix=f"forest-{kind}", title=title)
        ),
        "forest_narrow_svg": mark_safe(
            charts.forest_plot(entries, statistic=statistic, id_prefix=f"forestn-{kind}", title=title, narrow=True)
        ),
        "forest_other_svg": mark_safe(charts.forest_plot(entries, statistic=other, id_prefix=f"forest2-{kind}")),
        "forest_other_narrow_svg": mark_safe(
            charts.forest_plot(entries, statistic=other, id_prefix=f"forest2n-{kind}", narrow=True)
        ),
        "strip_svg": mark_safe(
            charts.strip_plot(
                {row["label"]: row["run_scores"] for row in (entries[:STRIP_PAGED] if paged else entries)},
                id_prefix=f"strip-{kind}",
            )
        ),
        "strip_left_out": max(0, len(entries) - STRIP_PAGED) if paged else 0,
        "curves_svg": mark_safe(
            charts.boo_n_curve(
                {row["label"]: row["boo_n_curve"] for row in curves[:CURVES_SHOWN]}, id_prefix=f"boon-{kind}"
            )
        ),
        "curves_shown": min(CURVES_SHOWN, len(curves)),
        "curves_left_out": max(0, len(curves) - CURVES_SHOWN),
        "single_runs": len(entries) - len(curves),
    }


def _section_heatmap(slug: str, section: dict, rows: dict, names: dict, focus: int | None) -> dict:
    """P(row beats column) of the top compared entries and the neighbourhood of ``focus``
    (:func:`services.paging.heatmap_ids`), each cell linking to the compare page; none below two entries."""
    ids = heatmap_ids(list(section["compared"]), focus)
    if len(ids) < 2:
        return {"heatmap_svg": None, "heatmap_partial": False}
    inside = set(ids)
    shown = {"compared": ids, "comparisons": section_pairs(section, names, among=inside)}
    p, labels, verdicts = charts.pairwise_matrix(shown, [rows[sid] for sid in ids])
    links = [[None if a == b else compare_url(slug, a, b) for b in ids] for a in ids]
    return {
        "heatmap_partial": len(ids) < len(section["compared"]),
        "heatmap_focus": focus in inside,
        "heatmap_svg": mark_safe(
            charts.heatmap(
                p,
                labels,
                verdicts,
                links=links,
                id_prefix=f"heatmap-{section['kind']}",
                title="P(row beats column), with the verdicts",
            )
        ),
    }
