"""What the leaderboard pages show: the cached report arranged for the templates, with SVG charts.

Pure presentation: reads the report (``report_current``), never writes. Views call
``leaderboard_for_page`` and ``pair_for_display``.
"""

from __future__ import annotations

from datetime import datetime

from django.urls import reverse
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from evaluation.report import flip_comparison

from .. import charts
from ..choices import Correction, SubmissionStatus
from ..models import Challenge, Submission
from ..services.errors import ServiceError
from ..services.report_builder import report_current

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


def entry_label(row: dict) -> str:
    return f"{row['method_name']} ({row['team']})"


def compare_url(slug: str, a: int, b: int) -> str:
    return f"{reverse('challenge-compare', kwargs={'slug': slug})}?{urlencode({'a': a, 'b': b})}"


def verdict_text(pair: dict) -> str:
    return VERDICT_WORDS[pair["verdict"]].format(a=pair["a_name"], b=pair["b_name"])


def p_value_text(p: float | None) -> str:
    return "—" if p is None else ("< 0.0001" if p < 1e-4 else f"{p:.4f}")


def pair_for_display(slug: str, pair: dict, *, winner_first: bool = True) -> dict:
    """A comparison for display (the winner first, unless told), the verdict in words, p-values as text, a link."""
    shown = flip_comparison(pair) if winner_first and pair["verdict"] == "b_better" else pair
    return {**shown, "words": verdict_text(shown), "url": compare_url(slug, shown["a"], shown["b"]),
            "pvalue_text": p_value_text(shown["pvalue"]), "pvalue_raw_text": p_value_text(shown["pvalue_raw"])}


def leaderboard_for_page(challenge: Challenge) -> dict:
    """The challenge page's leaderboard: the cached report, arranged section by section."""
    try:
        report = report_current(challenge=challenge)
    except ServiceError as exc:
        return {"error": exc.message, "sections": [], "entries": 0}
    data = report.data
    rows = {row["submission_id"]: row for row in data["entries"]}
    # Entries link to their submission page, which only the submitting team may see before it is scored.
    scored = set(Submission.objects.filter(pk__in=rows, status=SubmissionStatus.SCORED).values_list("pk", flat=True))
    sections = [section_for_page(challenge, section, rows, scored, data["settings"]) for section in data["sections"]]
    return {
        "error": None, "settings": data["settings"], "sections": sections, "entries": len(rows),
        "computed_at": report.computed_at, "pending": report.recompute_pending,
        "confidence_pct": 100 * data["settings"]["confidence"],
        "sota_confidence_pct": 100 * (1 - data["settings"]["alpha"] / 2),
        "correction": Correction(data["settings"]["correction"]).label,
        "gamma_pct": 100 * data["settings"]["gamma"], "power_pct": 100 * (1 - data["settings"].get("beta", 0.05)),
    }


def section_for_page(challenge: Challenge, section: dict, rows: dict, scored: set, settings: dict) -> dict:
    slug = challenge.slug
    entries = [dict(rows[sid]) for sid in section["entries"]]
    names = {row["submission_id"]: row["method_name"] for row in entries}
    for row in entries:
        row["label"] = entry_label(row)
        row["created_at"] = datetime.fromisoformat(row["created"]) if row.get("created") else None
        row["url"] = (reverse("submission-detail", args=[row["submission_id"]])
                      if row["submission_id"] in scored else None)
        prefix = f"{section['kind']}-{row['submission_id']}"
        row["strip_svg"] = mark_safe(charts.strip_plot({row["label"]: row["run_scores"]},
                                                       title=f"Every run of {row['label']}",
                                                       id_prefix=f"strip-{prefix}"))
        row["curve_svg"] = mark_safe(charts.boo_n_curve({row["label"]: row["boo_n_curve"]},
                                                        title=f"Boo_n against n: {row['label']}",
                                                        id_prefix=f"boon-{prefix}"))
    statistic = settings["statistic"]
    kind = section["kind"]
    pairs = [pair_for_display(slug, pair) for pair in section["comparisons"]]
    compared = [row for row in entries if row["compared"]]
    curves = [row for row in entries if row["runs_succeeded"] > 1]  # one run: Boo_n is that run at every n
    out = {
        "kind": kind, "label": section["label"], "paired_runs": section.get("paired_runs"),
        "n_examples": section.get("n_examples"), "entries": entries, "compared": compared,
        "leader": names[section["compared"][0]] if section["compared"] else None,
        "leader_ties": [names[sid] for sid in section["leader_group"][1:]],
        "sota": dict(section["sota"], best=names.get(section["sota"].get("submission_id"))),
        "pairs": pairs, "decided": [pair for pair in pairs if pair["verdict"] == "a_better"],
        "forest_svg": mark_safe(charts.forest_plot(
            entries, statistic=statistic, id_prefix=f"forest-{kind}",
            title=f"{'Boo_n' if statistic == 'boo_n' else 'Mean'} with its {settings['confidence']:.0%} interval, "
                  f"per entry")),
        "forest_other_svg": mark_safe(charts.forest_plot(
            entries, statistic="mean" if statistic == "boo_n" else "boo_n", id_prefix=f"forest2-{kind}")),
        "strip_svg": mark_safe(charts.strip_plot({row["label"]: row["run_scores"] for row in entries},
                                                 id_prefix=f"strip-{kind}")),
        "curves_svg": mark_safe(charts.boo_n_curve(
            {row["label"]: row["boo_n_curve"] for row in curves[:CURVES_SHOWN]}, id_prefix=f"boon-{kind}")),
        "curves_shown": min(CURVES_SHOWN, len(curves)), "curves_left_out": max(0, len(curves) - CURVES_SHOWN),
        "single_runs": len(entries) - len(curves),
        "heatmap_svg": None,
    }
    if len(compared) >= 2:
        p, labels, verdicts = charts.pairwise_matrix(section, entries)
        ids = section["compared"]
        links = [[None if a == b else compare_url(slug, a, b) for b in ids] for a in ids]
        out["heatmap_svg"] = mark_safe(charts.heatmap(p, labels, verdicts, links=links, id_prefix=f"heatmap-{kind}",
                                                      title="P(row beats column), with the verdicts"))
    return out
