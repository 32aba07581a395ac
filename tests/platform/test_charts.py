"""Server-side SVG charts: well-formed XML, accessible labels, one mark per datum."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from evaluation.report import EntryRuns, ReportSettings, build_report
from leaderboard.web import charts
from leaderboard.web.charts import boo_n_curve, forest_plot, heatmap, pairwise_matrix, strip_plot

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    title_id, desc_id = root.get("aria-labelledby").split()
    ids = {el.get("id") for el in root.iter() if el.get("id")}
    assert {title_id, desc_id} <= ids
    return root


def marks(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    found = [el for el in root.iter(f"{SVG}{tag}") if el.get("class") == cls]
    for el in found:  # every mark carries a tooltip, directly or through its group
        assert el.find(f"{SVG}title") is not None or el.get("class") in ("interval", "estimate")
    return found


@pytest.fixture(scope="module")
def report():
    rng = np.random.default_rng(0)
    entries = [
        EntryRuns(i, f"m<{i}>&", "team", "recipe", 8, np.arange(8), 0.7 + 0.01 * i + 0.01 * rng.standard_normal(8))
        for i in range(1, 5)
    ]
    entries.append(EntryRuns(9, "single", "team", "recipe", 8, np.arange(1), np.array([0.5])))
    return build_report(entries, ReportSettings(n_resamples=200, k_runs=8))


def test_forest_plot_has_one_bar_per_interval(report):
    root = parse(forest_plot(report["entries"]))
    assert len(marks(root, "circle", "estimate")) == 5
    assert len(marks(root, "rect", "interval")) == 4  # the single-run entry has no interval
    groups = [g for g in root.iter(f"{SVG}g") if g.get("class") == "entry"]
    assert len(groups) == 5 and all(g.find(f"{SVG}title") is not None for g in groups)
    assert "m&lt;1&gt;&amp;" in forest_plot(report["entries"], statistic="boo_n")


def test_heatmap_has_a_cell_per_ordered_pair(report):
    section = report["sections"][0]
    p, labels, verdicts = pairwise_matrix(section, report["entries"])
    root = parse(heatmap(p, labels, verdicts))
    cells = marks(root, "rect", "cell")
    assert len(cells) == 4 * 3
    assert all("P(row > column)" in c.find(f"{SVG}title").text for c in cells)
    assert p[0][1] == pytest.approx(1 - p[1][0])


def test_boo_n_curve_and_strip_plot_count_their_points(report):
    rows = report["entries"]
    root = parse(boo_n_curve({r["method_name"]: r["boo_n_curve"] for r in rows}))
    assert len(marks(root, "circle", "point")) == sum(len(r["boo_n_curve"]) for r in rows) == 4 * 8 + 1
    assert len(marks(root, "g", "curve")) == 5
    root = parse(strip_plot({r["method_name"]: r["run_scores"] for r in rows}))
    assert len(marks(root, "circle", "run")) == 4 * 8 + 1
    assert len(marks(root, "line", "mean")) == 5


def test_charts_survive_empty_and_constant_input():
    parse(strip_plot({}))
    parse(boo_n_curve({"flat": [0.5, 0.5]}))
    parse(heatmap([], []))
    parse(forest_plot([{"method_name": "x", "mean": {"estimate": 1.0, "low": None, "high": None}}]))


def _row(name, estimate, low, high):
    return {"method_name": name, "team": "t", "mean": {"estimate": estimate, "low": low, "high": high}}


def _font_sizes(root: ET.Element) -> list[float]:
    """The font size of every ``<text>``: its own ``font-size`` or the nearest ancestor's (the root's default)."""
    parents = {child: parent for parent in root.iter() for child in parent}
    sizes = []
    for text in root.iter(f"{SVG}text"):
        el = text
        while el.get("font-size") is None:
            el = parents[el]
        sizes.append(float(el.get("font-size")))
    return sizes


def test_charts_are_drawn_at_their_own_size_with_readable_text():
    """Issue 25: a chart scaled down to its container drew its 12 px text at 5 px on a phone. Each chart now has
    a width and height in CSS pixels equal to its viewBox (never scaled; a wide one scrolls in its container),
    and every text is 11 px or more, the heatmap's cell values included (they were 10 px)."""
    entries = [_row(f"entry {i}", 0.9 + i / 100, 0.88 + i / 100, 0.92 + i / 100) for i in range(4)]
    p = [[None if i == j else (0.9 if i < j else 0.1) for j in range(4)] for i in range(4)]
    charts = [
        strip_plot({"a": [0.5, 0.6]}),
        forest_plot(entries),
        boo_n_curve({"a": [0.5, 0.6, 0.65]}),
        heatmap(p, [row["method_name"] for row in entries]),
    ]
    for svg in charts:
        root = parse(svg)
        _, _, width, height = root.get("viewBox").split()
        assert (root.get("width"), root.get("height")) == (width, height), svg[:200]
        assert "max-width" not in (root.get("style") or "")
        sizes = _font_sizes(root)
        assert sizes and min(sizes) >= 11, (min(sizes), svg[:200])
    cell_values = [t for t in parse(charts[-1]).iter(f"{SVG}text") if t.get("font-size")]
    assert len(cell_values) == 12  # the 4 x 4 matrix's values are drawn (cells of 40 px), at 11 px


def test_the_phones_forest_plot_fits_a_phone_with_each_name_above_its_bar():
    """Issue 25: the forest plot was 680 px wide with its names on the left, so a 360 px phone saw either the
    names or the bars. The narrow variant is NARROW_W (300) px wide, every mark inside it, each name on its
    own line above its bar, and the same entries, intervals and tooltips as the wide one."""
    entries = [_row(f"A long method name number {i} (team {i})", 0.9 + i / 100, 0.88 + i / 100, 0.93) for i in range(5)]
    wide, narrow = parse(forest_plot(entries)), parse(forest_plot(entries, narrow=True, id_prefix="forestn"))
    assert int(narrow.get("width")) == charts.NARROW_W < int(wide.get("width"))
    names = [t for t in narrow.iter(f"{SVG}text") if t.get("text-anchor") is None]
    bars = marks(narrow, "rect", "interval")
    assert len(names) == len(bars) == 5
    for name, bar in zip(names, bars):
        assert float(name.get("y")) < float(bar.get("y"))  # above its bar
        assert float(name.get("x")) <= float(bar.get("x"))  # starts at the plot's left edge or before
        assert len(name.text) <= charts.NARROW_LABEL_CHARS and name.text.startswith("A long method name")
        assert float(bar.get("x")) + float(bar.get("width")) <= charts.NARROW_W
    xs = [float(x) for el in narrow.iter() for x in (el.get("x"), el.get("cx")) if x is not None]
    assert 0 <= min(xs) and max(xs) <= charts.NARROW_W
    tips = [[t.text for t in root.iter(f"{SVG}title")][1:] for root in (wide, narrow)]
    assert tips[0] == tips[1] and len(tips[0]) == 5  # the same entries and values, in the same order


def test_an_outlier_cannot_flatten_the_axis():
    """One weak entry (0.10 among scores near 0.95) is drawn at the axis edge with an arrow; the others spread out."""
    rows = [
        _row("good", 0.95, 0.94, 0.96),
        _row("better", 0.97, 0.96, 0.98),
        _row("best", 0.99, 0.985, 0.995),
        _row("weak", 0.10, 0.07, 0.14),
    ]
    root = parse(forest_plot(rows))
    dots = {el.get("cx"): el.get("data-clipped") for el in marks(root, "circle", "estimate")}
    xs = sorted(float(x) for x in dots)
    assert xs[2] - xs[1] > 60 and xs[3] - xs[2] > 60  # the three close entries stay apart (was ~10 px)
    assert list(dots.values()).count("true") == 1
    assert len([el for el in root.iter(f"{SVG}polygon") if el.get("class") == "clip-mark"]) >= 1
    assert "beyond the axis" in root.find(f"{SVG}desc").text
    # every tooltip keeps the value itself
    assert any("mean 0.1," in (g.find(f"{SVG}title").text or "") for g in root.iter(f"{SVG}g"))
    strip = parse(strip_plot({"a": [0.95, 0.96, 0.97, 0.955, 0.965], "b": [0.1]}))
    clipped = [el for el in marks(strip, "circle", "run") if el.get("data-clipped")]
    assert len(clipped) == 1 and "0.1 (beyond the axis)" in clipped[0].find(f"{SVG}title").text
    # without an outlier nothing is clipped, however few the points
    assert "clip-mark" not in forest_plot(rows[:3]) and "clip-mark" not in strip_plot({"a": [0.9, 1.0], "b": [0.5]})


def test_a_curve_that_rises_then_saturates_keeps_its_own_points_on_the_axis():
    """Found on /c/boon-asreader-cbt-cn/: Boo_n rising from 0.63157 to 0.63331 over n = 1..5, then within 1e-4
    up to n = 20. The axis (0.63339 to 0.63351) left n = 1..5 as arrows below it, with "0.6334" twice."""
    rise = [0.63157, 0.63237, 0.63281, 0.63309, 0.63331]
    curve = rise + list(np.linspace(0.63339, 0.63350, 15))
    root = parse(boo_n_curve({"AS Reader": curve}))
    points = marks(root, "circle", "point")
    assert len(points) == 20 and not [p for p in points if p.get("data-clipped")]
    assert "clip-mark" not in ET.tostring(root, encoding="unicode")
    ticks = [t.text for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end"]
    assert len(ticks) >= 3 and len(set(ticks)) == len(ticks), ticks
    # a whole curve far from the others is still an outlier: drawn at the edge
    others = {f"e{i}": [0.9 + 0.001 * i + 0.01 * (1 - 1 / n) for n in range(1, 11)] for i in range(4)}
    far = parse(boo_n_curve({**others, "far": [0.1 + 0.01 * (1 - 1 / n) for n in range(1, 11)]}))
    clipped = [p for p in marks(far, "circle", "point") if p.get("data-clipped")]
    assert len(clipped) == 10 and all("far:" in p.find(f"{SVG}title").text for p in clipped)


def test_tick_labels_stay_apart_on_a_narrow_axis():
    assert charts._tick_texts([0.6334, 0.63345, 0.6335]) == ["0.6334", "0.63345", "0.6335"]
    assert charts._tick_texts([0.5, 0.6, 0.7]) == ["0.5", "0.6", "0.7"]


def test_full_names_and_legends_at_the_line_ends():
    name = "A very long method name that the chart has to cut (team with a long name)"
    root = parse(boo_n_curve({name: [0.5, 0.6, 0.65], "short": [0.4, 0.45, 0.47]}))
    assert name in root.find(f"{SVG}desc").text  # the accessible text keeps the whole name
    legends = [el for el in root.iter(f"{SVG}text") if el.get("class") == "legend"]
    points = [el for el in marks(root, "circle", "point")]
    last_x = max(float(p.get("cx")) for p in points)
    assert len(legends) == 2 and all(float(el.get("x")) > last_x for el in legends)
    ys = sorted(float(el.get("y")) for el in legends)
    assert ys[1] - ys[0] >= 13  # spread apart, not stacked
    strip = parse(strip_plot({name: [0.5, 0.6]}))
    assert any(
        t.find(f"{SVG}title") is not None and t.find(f"{SVG}title").text == name for t in strip.iter(f"{SVG}text")
    )


def test_curve_labels_are_readable_on_white_in_every_palette_colour():
    """A label takes its line's hue, darkened to WCAG AA contrast (4.5:1): the palette's orange and
    green (2.5:1 and 3.4:1) were too light for 12 px text."""
    from leaderboard.web.charts import PALETTE, TEXT_CONTRAST, contrast_on_white

    curves = {f"method {i}": [0.7 + 0.01 * i, 0.72 + 0.01 * i] for i in range(len(PALETTE))}
    root = ET.fromstring(boo_n_curve(curves))
    fills = [el.get("fill") for el in root.iter(f"{SVG}text") if el.get("class") == "legend"]
    assert len(fills) == len(PALETTE)
    assert all(contrast_on_white(fill) >= TEXT_CONTRAST for fill in fills)
    assert contrast_on_white("#ff7f0e") < 3 and contrast_on_white("#000000") == pytest.approx(21)
    strokes = [el.get("stroke") for el in root.iter(f"{SVG}polyline")]
    assert strokes == list(PALETTE)  # the lines keep the palette


def test_a_strip_plots_size_per_run_does_not_repeat_the_entry():
    """Each dot named its entry and carried its colour: on the 20,000-entry board at 16 runs the two strip plots took
    62 KB and the page 310 KB against a 300 KB target (issue 27). The entry is said once per row, whatever its runs."""
    name = "a method with a long descriptive name (the team that made it)"
    few, many = (strip_plot({name: [0.5 + 0.01 * i for i in range(k)]}) for k in (4, 16))
    assert few.count(name) == many.count(name)
    per_run = (len(many) - len(few)) / 12
    assert per_run < 100, per_run  # 208 before
    dots = marks(parse(many), "circle", "run")
    assert len(dots) == 16 and dots[3].find(f"{SVG}title").text == "run 3: 0.53"
