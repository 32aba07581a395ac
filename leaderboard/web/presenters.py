"""What the leaderboard pages show: the cached report arranged for the templates, with SVG charts.

Pure presentation: reads the report (``report_current``), never writes. Views call
``leaderboard_for_page`` and ``pair_for_display``.
"""

from __future__ import annotations

from datetime import datetime

from django.urls import reverse
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from evaluation.report import flip_comparison, section_pairs

from . import charts
from ..choices import Board, Correction, SubmissionStatus
from ..models import Challenge, Submission
from ..services.errors import ServiceError
from ..services.paging import PAGE_SIZE, entries_page, heatmap_ids
from ..services.reports import REPORT_MODELS, report_current, report_settings_key

#: A verdict of row A against column B, in words (``{a}``/``{b}``: the method names).
VERDICT_WORDS = {
    "a_better": "{a} is better",
    "b_better": "{b} is better",
    "not_significant": "cannot tell apart",
    "not_meaningful": "significant, but not meaningful (below γ)",
    "not_significant_after_correction": "undecided: the test's adjusted p-value is not below α",
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
    entries = [{"method_name": p.submission.method_name, "team": p.submission.team.name, "source": p.get_source_display(),
                "published": p.source == p.Source.PUBLISHED, "link": p.link, "note": p.note,
                "runs": p.submission.runs_expected} for p in provenance]
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
    return {**shown, "words": verdict_text(shown), "url": compare_url(slug, shown["a"], shown["b"]),
            "pvalue_text": p_value_text(shown["pvalue"]), "pvalue_raw_text": p_value_text(shown["pvalue_raw"]),
            "level_pct": None if level is None else f"{100 * level:.3g}"}


def coverage_for_section(kind: str, settings: dict) -> dict:
    """The measured coverage notes that concern a section's intervals (report ``settings.coverage``)."""
    notes = [n for n in settings.get("coverage", []) if n["interval"].startswith(f"{kind}.")]
    short = [{"label": n["label"], "pct": f"{100 * n['coverage']:.0f}"} for n in notes]
    return {"coverage_short": short, "coverage_k": notes[0]["k"] if notes else None,
            "coverage_low": any(n["coverage"] < 0.93 for n in notes)}


#: Decoded reports kept per process, by (model, report id, computed_at): a 5,000-entry report is megabytes
#: of JSON, decoded once per new report rather than on every page view.
_DECODED: dict = {}
_DECODED_SIZE = 2


def _report_data(challenge: Challenge, board: str):
    """(report without its data, its data): the data decoded once per report version and process."""
    model = REPORT_MODELS[Board(board)]
    meta = model.objects.filter(challenge=challenge).defer("data").first()
    key = None if meta is None or meta.computed_at is None else (model.__name__, meta.pk, meta.computed_at)
    data = _DECODED.get(key) if key else None
    if data is None or data.get("settings_key") != report_settings_key(challenge):
        meta = report_current(challenge=challenge, board=board)
        data = meta.data
        key = (model.__name__, meta.pk, meta.computed_at)
        if len(_DECODED) >= _DECODED_SIZE:
            _DECODED.pop(next(iter(_DECODED)))
        _DECODED[key] = data
    return meta, data


def leaderboard_for_page(challenge: Challenge, board: str = Board.PUBLIC, *, query: str = "",
                         around: int | None = None, offset: int = 0, limit: int = PAGE_SIZE,
                         mine: tuple = ()) -> dict:
    """The challenge page's leaderboard: the cached report of ``board`` (which the caller has checked the
    viewer may read, with ``services.boards.board_scope``), arranged section by section, one page of each
    section's entries (:func:`services.paging.entries_page`: ``query``, ``around``, ``offset``, ``limit``).
    The heat map shows the top entries and the neighbourhood of ``around`` or of the reader's own
    entries (``mine``, submission ids)."""
    try:
        report, data = _report_data(challenge, board)
    except ServiceError as exc:
        return {"error": exc.message, "sections": [], "entries": 0}
    rows = {row["submission_id"]: row for row in data["entries"]}
    pages = {section["kind"]: entries_page([rows[sid] for sid in section["entries"]], query=query, around=around,
                                           offset=offset, limit=limit) for section in data["sections"]}
    shown = [sid for page in pages.values() for sid in page.ids]
    # Entries link to their submission page, which only the submitting team may see before it is scored.
    scored = set(Submission.objects.filter(pk__in=shown, status=SubmissionStatus.SCORED).values_list("pk", flat=True))
    sections = []
    for section in data["sections"]:
        focus = around if around in rows else next((sid for sid in mine if sid in set(section["compared"])), None)
        sections.append(section_for_page(challenge, section, rows, scored, data["settings"],
                                         page=pages[section["kind"]], focus=focus))
    return {
        "error": None, "settings": data["settings"], "sections": sections, "entries": len(rows), "board": board,
        "feedback": data.get("feedback") or {},
        "computed_at": report.computed_at, "pending": report.recompute_pending,
        "confidence_pct": 100 * data["settings"]["confidence"],
        "sota_confidence_pct": 100 * (1 - data["settings"]["alpha"] / 2),
        "correction": Correction(data["settings"]["correction"]).label,
        "gamma_pct": 100 * data["settings"]["gamma"], "power_pct": 100 * (1 - data["settings"].get("beta", 0.05)),
        "query": query, "around": around, "limit": limit,
    }


def section_for_page(challenge: Challenge, section: dict, rows: dict, scored: set, settings: dict, *,
                     page=None, focus: int | None = None) -> dict:
    """One section: its page of entries (all of them without ``page``), their comparisons, the heat map."""
    slug = challenge.slug
    page = page or entries_page([rows[sid] for sid in section["entries"]], limit=len(section["entries"]) or 1)
    entries = [dict(rows[sid]) for sid in page.ids]
    paged = page.matched > len(page.ids) or bool(page.query)
    for row in entries:
        row["label"] = entry_label(row)
        row["created_at"] = datetime.fromisoformat(row["created"]) if row.get("created") else None
        row["url"] = (reverse("submission-detail", args=[row["submission_id"]])
                      if row["submission_id"] in scored else None)
        row["strip_svg"] = row["curve_svg"] = None
        if paged and row["submission_id"] != focus:  # a paged board draws the reader's entry's charts only
            continue
        prefix = f"{section['kind']}-{row['submission_id']}"
        row["strip_svg"] = mark_safe(charts.strip_plot({row["label"]: row["run_scores"]},
                                                       title=f"Every run of {row['label']}",
                                                       id_prefix=f"strip-{prefix}"))
        row["curve_svg"] = mark_safe(charts.boo_n_curve({row["label"]: row["boo_n_curve"]},
                                                        title=f"Boo_n against n: {row['label']}",
                                                        id_prefix=f"boon-{prefix}"))
    statistic = settings["statistic"]
    kind = section["kind"]
    visible = set(page.ids)  # the comparisons between entries of the page (a paged board stores thousands)
    position = {sid: k for k, sid in enumerate(page.ids)}
    names = {sid: row["method_name"] for sid, row in rows.items()}
    pairs = [pair_for_display(slug, pair) for pair in section_pairs(section, names, among=visible)
             if not paged or pair["verdict"] == "a_better" or pair["verdict"] == "b_better"
             or abs(position[pair["a"]] - position[pair["b"]]) == 1]
    compared = [row for row in entries if row["compared"]]
    curves = [row for row in entries if row["runs_succeeded"] > 1]  # one run: Boo_n is that run at every n
    imported = bool(entries) and all(row.get("provenance") for row in entries)
    out = {
        "kind": kind, "label": section["label"], "imported": imported,
        "title": "Imported runs (published elsewhere)" if imported else section["label"],
        "imported_runs": sum(row["runs_succeeded"] for row in entries) if imported else None, "paired_runs": section.get("paired_runs"),
        "n_examples": section.get("n_examples"), "entries": entries, "compared": compared,
        "n_compared": len(section["compared"]), "page": page.as_dict(),
        "leader": rows[section["compared"][0]]["method_name"] if section["compared"] else None,
        "leader_ties": [rows[sid]["method_name"] for sid in section["leader_group"][1:]],
        "sota": dict(section["sota"], best=rows.get(section["sota"].get("submission_id"), {}).get("method_name")),
        "pairs": pairs, "decided": [pair for pair in pairs if pair["verdict"] == "a_better"],
        "forest_svg": mark_safe(charts.forest_plot(
            entries, statistic=statistic, id_prefix=f"forest-{kind}",
            title=f"{'Boo_n' if statistic == 'boo_n' else 'Mean'} with its {settings['confidence']:.0%} interval, "
                  f"per entry")),
        "forest_other_svg": mark_safe(charts.forest_plot(
            entries, statistic="mean" if statistic == "boo_n" else "boo_n", id_prefix=f"forest2-{kind}")),
        "strip_svg": mark_safe(charts.strip_plot({row["label"]: row["run_scores"]
                                                  for row in (entries[:STRIP_PAGED] if paged else entries)},
                                                 id_prefix=f"strip-{kind}")),
        "strip_left_out": max(0, len(entries) - STRIP_PAGED) if paged else 0,
        "curves_svg": mark_safe(charts.boo_n_curve(
            {row["label"]: row["boo_n_curve"] for row in curves[:CURVES_SHOWN]}, id_prefix=f"boon-{kind}")),
        "curves_shown": min(CURVES_SHOWN, len(curves)), "curves_left_out": max(0, len(curves) - CURVES_SHOWN),
        "single_runs": len(entries) - len(curves),
        "heatmap_svg": None, "heatmap_partial": False,
        "inversions": [inv for inv in section.get("inversions", []) if inv["above"] in visible or inv["below"] in visible],
        "runs_needed": section.get("runs_needed"),
        **coverage_for_section(kind, settings),
    }
    out["clipped"] = any("clip-mark" in out[name] for name in ("forest_svg", "strip_svg", "curves_svg"))
    ids = heatmap_ids(list(section["compared"]), focus)
    if len(ids) >= 2:
        inside = set(ids)
        shown = {"compared": ids, "comparisons": section_pairs(section, names, among=inside)}
        p, labels, verdicts = charts.pairwise_matrix(shown, [rows[sid] for sid in ids])
        links = [[None if a == b else compare_url(slug, a, b) for b in ids] for a in ids]
        out["heatmap_partial"] = len(ids) < len(section["compared"])
        out["heatmap_focus"] = focus in inside
        out["heatmap_svg"] = mark_safe(charts.heatmap(p, labels, verdicts, links=links, id_prefix=f"heatmap-{kind}",
                                                      title="P(row beats column), with the verdicts"))
    return out
