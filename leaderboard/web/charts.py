"""Server-side SVG charts of the report: plain strings, no JavaScript, no network.

Each function returns a standalone ``<svg>`` element with ``role="img"``, a ``<title>``
and ``<desc>`` referenced by ``aria-labelledby``, and a ``<title>`` tooltip on every mark
(bar, point, cell). Text is XML-escaped; numbers are formatted with ``:.4g``. Entries
are given as the report's rows (``evaluation.report``), so a page can pass
``report.data["entries"]`` straight in.

* :func:`forest_plot`: each entry's interval as a bar with the point estimate
  (mean or Boo_n).
* :func:`heatmap`: the matrix of P(row > column) with the verdict of each pair.
* :func:`boo_n_curve`: Boo_n against n (Bajgar et al. 2018), one line per entry.
* :func:`strip_plot`: every run's score per entry, with the mean.
* :func:`performance_profile`: a suite's fraction of runs above τ per entry, with its band.
* :func:`critical_difference`: a suite's average ranks with the Nemenyi critical difference.
* :func:`rank_history`: entries' ranks over time; :func:`shakeup`: public against private rank.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from xml.sax.saxutils import escape, quoteattr

__all__ = [
    "boo_n_curve",
    "critical_difference",
    "forest_plot",
    "heatmap",
    "pairwise_matrix",
    "performance_profile",
    "rank_history",
    "shakeup",
    "strip_plot",
]

#: The size of every chart's text in CSS pixels (the charts are never scaled: ``_svg``); 11 px is the least
#: readable on a phone (issue 25), 12 the size the label widths below are reckoned in.
FONT_PX = 12
SMALL_FONT_PX = 11  # the values inside the heatmap's cells
FONT = f'font-family="system-ui, sans-serif" font-size="{FONT_PX}"'
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
LABEL_W, ROW_H, PLOT_W, PAD = 220, 24, 420, 40
#: WCAG 2.1 contrast a text colour needs against the white page (AA, normal text).
TEXT_CONTRAST = 4.5
LABEL_CHARS = 30  # what fits in LABEL_W at 12 px; longer names are cut (the tooltip keeps the whole name)
#: The phone's forest plot: the width of a 360 px screen's content box, less its margins; names above the bars.
NARROW_W, NARROW_PAD, NARROW_LABEL_CHARS = 300, 20, 38


def _entries(count: int) -> str:
    """A count of entries for a chart's description: "1 entry" (it said "1 entries" on a board of one), "3 entries"."""
    return f"{count} {'entry' if count == 1 else 'entries'}"


def _num(x) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.4g}"


def _tick_texts(ticks: Sequence[float]) -> list[str]:
    """Tick labels with the fewest significant digits (at least 4) that keep them apart: on a narrow axis
    (0.63340, 0.63345) four digits wrote "0.6334" twice."""
    texts = [_num(t) for t in ticks]
    for digits in range(5, 13):
        if len(set(texts)) == len(texts):
            break
        texts = [f"{t:.{digits}g}" for t in ticks]
    return texts


def _finite(values) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 12) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _domain(values: Sequence[float]) -> tuple[float, float]:
    values = _finite(values) or [0.0, 1.0]
    lo, hi = min(values), max(values)
    if hi == lo:
        lo, hi = lo - 0.5 * (abs(lo) or 1) * 0.1, hi + 0.5 * (abs(hi) or 1) * 0.1
    margin = 0.05 * (hi - lo)
    return lo - margin, hi + margin


#: A mark is an outlier when its robust z-score, |x - median| / (1.4826 MAD), exceeds this (Iglewicz & Hoaglin
#: flag 3.5; 6 keeps every run of a normal sample of thousands on the axis).
OUTLIER_Z = 6.0
CLIPPED_NOTE = "Values beyond the axis (outliers) are drawn at its edge as arrows; their tooltips give the value."


def _robust_domain(
    points: Sequence[float], extents: Sequence[Sequence[float]] | None = None
) -> tuple[float, float, bool]:
    """The axis range of the marks that are not outliers, and whether any mark is left outside it.

    ``points`` are the marks that decide (an entry's estimate, a run); ``extents[i]`` the values drawn with
    point i (its interval), on the axis when the point is. An outlier is a point more than ``OUTLIER_Z``
    robust standard deviations (1.4826 × the median absolute deviation) from the median: one weak entry
    (0.10 among scores near 0.95) would otherwise squash every other entry into one dot.
    """
    extents = list(extents) if extents is not None else [()] * len(points)
    pairs = [
        (float(p), _finite(extra)) for p, extra in zip(points, extents) if p is not None and math.isfinite(float(p))
    ]
    everything = [v for p, extra in pairs for v in (p, *extra)]
    centre = _quantile(sorted(p for p, _ in pairs), 0.5) if pairs else 0.0
    mad = _quantile(sorted(abs(p - centre) for p, _ in pairs), 0.5) if pairs else 0.0
    inside = [(p, extra) for p, extra in pairs if abs(p - centre) <= OUTLIER_Z * 1.4826 * mad]
    if len(pairs) < 3 or mad <= 0 or len(inside) == len(pairs):
        return (*_domain(everything), False)
    shown = [v for p, extra in inside for v in (p, *extra)]
    lo, hi = _domain(shown)
    return lo, hi, any(not lo <= v <= hi for v in everything)


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values, interpolated linearly (numpy's default)."""
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    return ordered[low] + (ordered[min(low + 1, len(ordered) - 1)] - ordered[low]) * (at - low)


def _clamp(v: float, lo: float, hi: float) -> tuple[float, str | None]:
    """``v`` held inside [lo, hi], and which side it left by (None when inside)."""
    return (lo, "low") if v < lo else (hi, "high") if v > hi else (v, None)


def _arrow(x: float, y: float, side: str, *, horizontal: bool = True, colour: str = "#b3261e") -> str:
    """A small triangle at an axis edge pointing outward: a value beyond the axis."""
    d = -1 if side == "low" else 1
    if horizontal:
        points = f"{x + 7 * d:.1f},{y:.1f} {x:.1f},{y - 5:.1f} {x:.1f},{y + 5:.1f}"
    else:  # the y axis grows upward: "high" points up
        points = f"{x:.1f},{y - 7 * d:.1f} {x - 5:.1f},{y:.1f} {x + 5:.1f},{y:.1f}"
    return f'<polygon class="clip-mark" points="{points}" fill="{colour}" aria-hidden="true"/>'


def _svg(width: int, height: int, title: str, desc: str, body: list[str], prefix: str, role: str = "img") -> str:
    """The chart at its drawn size in CSS pixels (``width``/``height`` equal to the ``viewBox``), so its text is
    :data:`FONT_PX` px at every page width: a chart wider than a phone scrolls inside its container
    (``.chart-scroll``) instead of shrinking its text to 5 px. A chart holding links is a ``group`` (an ``img``
    may hold nothing interactive)."""
    width, height = int(math.ceil(width)), int(math.ceil(height))
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="{role}" aria-labelledby="{prefix}-title {prefix}-desc" {FONT}>',
            f'<title id="{prefix}-title">{escape(title)}</title>',
            f'<desc id="{prefix}-desc">{escape(desc)}</desc>',
            *body,
            "</svg>",
        ]
    )


def _x_axis(lo: float, hi: float, x0: float, width: float, y: float, label: str, *, integer: bool = False) -> list[str]:
    def sx(v):
        return x0 + (v - lo) / (hi - lo) * width

    ticks = _ticks(lo, hi)
    if integer:  # counts (n of Boo_n): whole numbers only
        ticks = [t for t in ticks if float(t).is_integer()] if hi - lo >= 5 else list(range(math.ceil(lo), int(hi) + 1))
    out = [f'<g class="axis" aria-hidden="true"><line x1="{x0}" y1="{y}" x2="{x0 + width}" y2="{y}" stroke="#333"/>']
    for t, text in zip(ticks, _tick_texts(ticks)):
        out.append(
            f'<line x1="{sx(t):.1f}" y1="{y}" x2="{sx(t):.1f}" y2="{y + 4}" stroke="#333"/>'
            f'<text x="{sx(t):.1f}" y="{y + 16}" text-anchor="middle">{text}</text>'
        )
    out.append(f'<text x="{x0 + width / 2}" y="{y + 32}" text-anchor="middle">{escape(label)}</text></g>')
    return out


def _y_axis(lo: float, hi: float, x: float, y0: float, height: float) -> list[str]:
    def sy(v):
        return y0 + (hi - v) / (hi - lo) * height

    out = [f'<g class="axis" aria-hidden="true"><line x1="{x}" y1="{y0}" x2="{x}" y2="{y0 + height}" stroke="#333"/>']
    ticks = _ticks(lo, hi)
    for t, text in zip(ticks, _tick_texts(ticks)):
        out.append(
            f'<line x1="{x - 4}" y1="{sy(t):.1f}" x2="{x}" y2="{sy(t):.1f}" stroke="#333"/>'
            f'<text x="{x - 6}" y="{sy(t) + 4:.1f}" text-anchor="end">{text}</text>'
        )
    out.append("</g>")
    return out


def _luminance(colour: str) -> float:
    """WCAG 2.1 relative luminance of ``#rrggbb``."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_on_white(colour: str) -> float:
    """WCAG 2.1 contrast ratio of ``#rrggbb`` against white: (1 + 0.05) / (L + 0.05)."""
    return 1.05 / (_luminance(colour) + 0.05)


def text_colour(colour: str) -> str:
    """``colour`` darkened (same hue) until text in it is readable on white (:data:`TEXT_CONTRAST`)."""
    rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    while contrast_on_white("#" + "".join(f"{c:02x}" for c in rgb)) < TEXT_CONTRAST:
        rgb = [int(c * 0.9) for c in rgb]
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _fit(label: str, chars: int = LABEL_CHARS) -> str:
    """``label``, cut to ``chars`` characters with an ellipsis so it stays inside the chart."""
    return label if len(label) <= chars else label[: chars - 1].rstrip() + "…"


def _label(row: Mapping) -> str:
    name = row.get("method_name", row.get("label", "?"))
    return f"{name} ({row['team']})" if row.get("team") else str(name)


# ------------------------------------------------------------------------------ charts
def _label_width(labels: Sequence[str]) -> int:
    """Room for the longest (cut) label at 12 px, between 80 and LABEL_W."""
    longest = max((len(_fit(label)) for label in labels), default=0)
    return int(max(80, min(LABEL_W, 6.6 * longest + 14)))


def forest_plot(
    entries: Sequence[Mapping],
    *,
    statistic: str = "mean",
    title: str | None = None,
    id_prefix: str = "forest",
    narrow: bool = False,
) -> str:
    """Intervals as horizontal bars with the point estimate, one row per entry.

    The axis leaves out outlying entries (``_robust_domain``); a bar or
    dot beyond it is drawn to the edge with an arrow, its tooltip giving the value.
    ``narrow`` draws the phone's variant (issue 25): :data:`NARROW_W` px wide, each entry's name on its own
    line above its bar, so that a 360 px screen reads names and bars without scrolling sideways.

    Parameters
    ----------
    entries : sequence of mapping
        Report rows: ``method_name``, ``team``, and ``statistic`` as a mapping with
        ``estimate``, ``low``, ``high`` (low/high may be None: the point alone).
    statistic : {"mean", "boo_n"}
    """
    title = title or f"{'Boo_n' if statistic == 'boo_n' else 'Mean'} with confidence interval, per entry"
    lo, hi, clipped = _robust_domain(
        [row[statistic]["estimate"] for row in entries],
        [(row[statistic]["low"], row[statistic]["high"]) for row in entries],
    )
    labels = [_label(row) for row in entries]
    left, plot_w, row_h = (
        (NARROW_PAD, NARROW_W - 2 * NARROW_PAD, 2 * ROW_H) if narrow else (_label_width(labels), PLOT_W, ROW_H)
    )
    height = PAD + row_h * len(entries) + 2 * PAD

    def sx(v):
        return left + (v - lo) / (hi - lo) * plot_w

    body = []
    for i, (row, label) in enumerate(zip(entries, labels)):
        stat = row[statistic]
        y = PAD + row_h * i + row_h - ROW_H / 2
        tip = f"{label}: {statistic} {_num(stat['estimate'])}, interval [{_num(stat['low'])}, {_num(stat['high'])}]" + (
            f", groups {row['groups']}" if row.get("groups") else ""
        )
        body.append(
            f'<g class="entry" aria-label={quoteattr(tip)}><title>{escape(tip)}</title>'
            + (
                f'<text x="{left}" y="{y - 10}">{escape(_fit(label, NARROW_LABEL_CHARS))}</text>'
                if narrow
                else f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{escape(_fit(label))}</text>'
            )
        )
        if stat["low"] is not None and stat["high"] is not None:
            (a, out_a), (b, out_b) = _clamp(stat["low"], lo, hi), _clamp(stat["high"], lo, hi)
            body.append(
                f'<rect class="interval" x="{sx(a):.1f}" y="{y - 3}" '
                f'width="{max(sx(b) - sx(a), 1):.1f}" height="6" fill="#9ecae1"/>'
            )
            body += [_arrow(sx(v), y, side) for v, side in ((a, out_a), (b, out_b)) if side]
        if stat["estimate"] is not None:
            v, side = _clamp(stat["estimate"], lo, hi)
            mark = ' data-clipped="true"' if side else ""
            body.append(f'<circle class="estimate" cx="{sx(v):.1f}" cy="{y}" r="4" fill="#08519c"{mark}/>')
            if side and not (stat["low"] is not None and _clamp(stat["low"], lo, hi)[1] == side):
                body.append(_arrow(sx(v), y, side))
        body.append("</g>")
    body += _x_axis(lo, hi, left, plot_w, PAD + row_h * len(entries) + 4, statistic)
    desc = (
        f"{_entries(len(entries))}: {', '.join(labels)}; bars are confidence intervals, dots the point estimates."
        + (f" {CLIPPED_NOTE}" if clipped else "")
    )
    return _svg(NARROW_W if narrow else left + PLOT_W + PAD, height, title, desc, body, id_prefix)


def pairwise_matrix(section: Mapping, entries: Sequence[Mapping]):
    """(P matrix, labels, verdicts) of a report section, in the section's compared order.

    ``p[i][j]`` = P(entry i > entry j) (None on the diagonal); ``verdicts[i][j]`` the
    verdict of row i against column j.
    """
    ids = list(section["compared"])
    rows = {row["submission_id"]: row for row in entries}
    where = {sid: k for k, sid in enumerate(ids)}
    p = [[None] * len(ids) for _ in ids]
    verdicts = [[None] * len(ids) for _ in ids]
    flip = {"a_better": "b_better", "b_better": "a_better"}
    for pair in section["comparisons"]:
        i, j = where[pair["a"]], where[pair["b"]]
        p[i][j] = pair["p"]
        p[j][i] = None if pair["p"] is None else 1 - pair["p"]
        verdicts[i][j] = pair["verdict"]
        verdicts[j][i] = flip.get(pair["verdict"], pair["verdict"])
    return p, [_label(rows[sid]) for sid in ids], verdicts


def _p_colour(p: float) -> str:
    """White at 0.5, blue toward 1 (row better), red toward 0."""
    t = max(-1.0, min(1.0, 2 * (p - 0.5)))
    r, g, b = (int(255 - 200 * t), int(255 - 120 * t), 255) if t >= 0 else (255, int(255 + 150 * t), int(255 + 200 * t))
    return f"#{r:02x}{g:02x}{b:02x}"


#: The report's verdicts, read from the row entry's side.
VERDICT_WORDS = {
    "a_better": "the row entry is better",
    "b_better": "the column entry is better",
    "not_significant": "cannot tell apart",
    "not_meaningful": "significant but below gamma",
    "not_significant_after_correction": "undecided: adjusted p-value not below alpha",
}


def heatmap(
    p_matrix: Sequence[Sequence[float | None]],
    labels: Sequence[str],
    verdicts: Sequence[Sequence[str | None]] | None = None,
    *,
    title: str = "P(row > column)",
    links: Sequence[Sequence[str | None]] | None = None,
    id_prefix: str = "heatmap",
) -> str:
    """Matrix of P(row > column); a cell with a winning verdict is outlined.

    Parameters
    ----------
    p_matrix : k x k, values in [0, 1] or None (diagonal)
    labels : k entry names
    verdicts : k x k verdicts ("a_better": the row wins, "b_better": the column wins, ...)
    links : k x k URLs, optional
        Each cell links to its URL (e.g. the page comparing the two entries).
    """
    k = len(labels)
    cell = max(14, min(40, 480 // max(k, 1)))
    left = _label_width(labels)
    top = PAD + int(0.5 * 7 * max((len(_fit(label)) for label in labels), default=0))  # room for rotated names
    body = []
    for i in range(k):
        y = top + i * cell
        body.append(f'<text x="{left - 6}" y="{y + cell / 2 + 4}" text-anchor="end">{escape(_fit(labels[i]))}</text>')
        body.append(
            f'<text transform="translate({left + i * cell + cell / 2 + 4},{top - 6}) rotate(-45)">'
            f"{escape(_fit(labels[i]))}</text>"
        )
    for i in range(k):
        for j in range(k):
            p = p_matrix[i][j]
            if i == j or p is None or not math.isfinite(p):
                continue
            verdict = verdicts[i][j] if verdicts else None
            tip = f"{labels[i]} vs {labels[j]}: P(row > column) = {_num(p)}" + (
                f"; {VERDICT_WORDS.get(verdict, verdict)}" if verdict else ""
            )
            stroke = ' stroke="#000" stroke-width="2"' if verdict == "a_better" else ""
            mark = (
                f'<rect class="cell" x="{left + j * cell}" y="{top + i * cell}" width="{cell - 1}" '
                f'height="{cell - 1}" fill="{_p_colour(p)}"{stroke} aria-label={quoteattr(tip)}>'
                f"<title>{escape(tip)}</title></rect>"
            )
            if cell >= 28:  # room for the value itself
                dark = abs(p - 0.5) > 0.3
                mark += (
                    f'<text x="{left + j * cell + (cell - 1) / 2:.1f}" y="{top + i * cell + cell / 2 + 4:.1f}" '
                    f'text-anchor="middle" font-size="{SMALL_FONT_PX}" fill="{"#fff" if dark else "#222"}" '
                    f'pointer-events="none" aria-hidden="true">{p:.2f}</text>'
                )
            url = links[i][j] if links else None
            body.append(f"<a href={quoteattr(url)}>{mark}</a>" if url else mark)
    desc = (
        f"{k} by {k} matrix of the probability that the row entry outperforms the column entry; "
        "outlined cells: the row entry is better."
    )
    size = left + k * cell + PAD + (top - PAD)  # rotated names reach right as far as up
    return _svg(size, top + k * cell + PAD, title, desc, body, id_prefix, role="group" if links else "img")


def _spread(ys: list[float], gap: float, top: float, bottom: float) -> list[float]:
    """Label positions near ``ys`` (in order) at least ``gap`` apart, inside [top, bottom]."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    placed = [0.0] * len(ys)
    last = top - gap
    for i in order:
        last = placed[i] = max(ys[i], last + gap)
    overflow = last - bottom
    if overflow > 0:  # shift the whole stack up, never above the top
        for i in order:
            placed[i] = max(top, placed[i] - overflow)
    return placed


def boo_n_curve(
    curves: Mapping[str, Sequence[float | None]], *, title: str = "Boo_n against n", id_prefix: str = "boon"
) -> str:
    """Boo_n (expected best of n runs) for n = 1, 2, ..., one line per entry, its name at its end.

    The y axis leaves out outlying *curves* (``_robust_domain`` on each curve's last point, the curve
    drawn with it): a curve's own points are never outliers of each other (a curve that rises at small n
    and saturates had its first points drawn as arrows below an axis a few units of 1e-5 tall). Points
    beyond the axis are drawn at its edge with an arrow.

    Parameters
    ----------
    curves : mapping label -> values for n = 1..len(values) (report rows' ``boo_n_curve``)
    """
    drawn = [_finite(curve) for curve in curves.values() if _finite(curve)]
    lo, hi, clipped = _robust_domain([curve[-1] for curve in drawn], [curve for curve in drawn])
    n_max = max((len(c) for c in curves.values()), default=1)
    x0, width, height = PAD + 30, PLOT_W, 260
    legend_w = _label_width(list(curves))

    def sx(n):
        return x0 + (n - 1) / max(n_max - 1, 1) * width

    def sy(v):
        return PAD + (hi - v) / (hi - lo) * (height - 2 * PAD)

    series = []
    for label, curve in curves.items():
        series.append((label, [(n, *_clamp(v, lo, hi)) for n, v in enumerate(curve, start=1) if v is not None]))
    ends = _spread([sy(points[-1][1]) if points else PAD for _, points in series], 13, PAD, height - PAD)
    body = []
    for c, ((label, points), end_y) in enumerate(zip(series, ends)):
        colour = PALETTE[c % len(PALETTE)]
        path = " ".join(f"{sx(n):.1f},{sy(v):.1f}" for n, v, _ in points)
        body.append(
            f'<g class="curve" aria-label={quoteattr(label)}><title>{escape(label)}</title>'
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
        )
        for (n, v, side), raw in zip(points, [v for v in curves[label] if v is not None]):
            tip = f"{label}: Boo_{n} = {_num(raw)}" + (" (beyond the axis)" if side else "")
            mark = ' data-clipped="true"' if side else ""
            body.append(
                f'<circle class="point" cx="{sx(n):.1f}" cy="{sy(v):.1f}" r="3" fill="{colour}"{mark}>'
                f"<title>{escape(tip)}</title></circle>"
            )
            if side:
                body.append(_arrow(sx(n), sy(v), side, horizontal=False))
        if points:
            last_x, last_y = sx(points[-1][0]), sy(points[-1][1])
            body.append(
                f'<line x1="{last_x + 3:.1f}" y1="{last_y:.1f}" x2="{last_x + 10:.1f}" y2="{end_y:.1f}" '
                f'stroke="{colour}" aria-hidden="true"/>'
                f'<text class="legend" x="{last_x + 12:.1f}" y="{end_y + 4:.1f}" fill="{text_colour(colour)}">'
                f"{escape(_fit(label))}</text>"
            )
        body.append("</g>")
    body += _x_axis(1, max(n_max, 2), x0, width, height - PAD, "n (runs the best is chosen from)", integer=True)
    body += _y_axis(lo, hi, x0, PAD, height - 2 * PAD)
    desc = (
        f"{_entries(len(curves))}: {', '.join(curves)}; each line is the expected test score of the best of n runs, "
        "the run chosen by its validation score (by its test score where it has none)."
        + (f" {CLIPPED_NOTE}" if clipped else "")
    )
    return _svg(x0 + width + 14 + legend_w, height + 10, title, desc, body, id_prefix)


def strip_plot(
    scores: Mapping[str, Sequence[float]], *, title: str = "Score of every run", id_prefix: str = "strip"
) -> str:
    """Every run's score as a dot, one row per entry, with the mean as a tick.

    The axis leaves out outlying runs (``_robust_domain``); a run beyond is drawn at the
    edge with an arrow (its tooltip gives its score).

    Parameters
    ----------
    scores : mapping label -> run scores (report rows' ``run_scores``)
    """
    lo, hi, clipped = _robust_domain([v for runs in scores.values() for v in runs])
    left = _label_width(list(scores))
    height = PAD + ROW_H * len(scores) + 2 * PAD

    def sx(v):
        return left + (v - lo) / (hi - lo) * PLOT_W

    body = []
    for i, (label, runs) in enumerate(scores.items()):
        y = PAD + ROW_H * i + ROW_H / 2
        finite = _finite(runs)
        body.append(
            f'<g class="entry" aria-label={quoteattr(f"{label}: {len(finite)} runs")}>'
            f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{escape(_fit(label))}'
            f"<title>{escape(label)}</title></text>"
        )
        body.append(_run_dots(finite, y, lo, hi, sx))
        if finite:
            mean, side = _clamp(sum(finite) / len(finite), lo, hi)
            tip = f"{label}: mean {_num(sum(finite) / len(finite))}" + (" (beyond the axis)" if side else "")
            body.append(
                f'<line class="mean" x1="{sx(mean):.1f}" y1="{y - 8}" x2="{sx(mean):.1f}" y2="{y + 8}" '
                f'stroke="#000" stroke-width="2"><title>{escape(tip)}</title></line>'
            )
        body.append("</g>")
    body += _x_axis(lo, hi, left, PLOT_W, PAD + ROW_H * len(scores) + 4, "test score")
    desc = f"{_entries(len(scores))}: {', '.join(scores)}; dots are runs, vertical ticks the means." + (
        f" {CLIPPED_NOTE}" if clipped else ""
    )
    return _svg(left + PLOT_W + PAD, height, title, desc, body, id_prefix)


def _run_dots(runs: Sequence[float], y: float, lo: float, hi: float, sx) -> str:
    """One entry's runs as dots in a group that carries their colour, each tooltip "run r: score" (the entry is the
    row's label and the group's name): on a board of 16 runs the colour and the name repeated per dot took 19 KB of
    the 20,000-entry board's page (310 KB against a 300 KB target; issue 27)."""
    dots = []
    for r, v in enumerate(runs):
        jitter = ((r * 7) % 5 - 2) * 2.0  # deterministic vertical spread
        x, side = _clamp(v, lo, hi)
        tip = f"run {r}: {_num(v)}" + (" (beyond the axis)" if side else "")
        mark = ' data-clipped="true"' if side else ""
        dots.append(
            f'<circle class="run" cx="{sx(x):.1f}" cy="{y + jitter:.1f}" r="3"{mark}><title>{tip}</title></circle>'
        )
        if side:
            dots.append(_arrow(sx(x), y, side))
    return f'<g class="runs" fill="#3182bd" fill-opacity="0.6">{"".join(dots)}</g>'


def performance_profile(
    profile: Mapping, labels: Sequence[str], *, title: str = "Performance profiles", id_prefix: str = "profile"
) -> str:
    """The fraction of each entry's runs scoring above τ, against τ, with its confidence band (Agarwal et al. 2021, §4).

    Parameters
    ----------
    profile : the suite board's ``profile``: ``taus`` (normalised scores), and per entry (in ``labels``' order)
        ``estimate``, ``low``, ``high`` lists of the same length.
    """
    taus = [float(t) for t in profile["taus"]]
    x0, width, height = PAD + 30, PLOT_W, 260
    lo_t, hi_t = (min(taus), max(taus)) if taus else (0.0, 1.0)
    hi_t = hi_t if hi_t > lo_t else lo_t + 1.0
    legend_w = _label_width(list(labels))

    def sx(t):
        return x0 + (t - lo_t) / (hi_t - lo_t) * width

    def sy(v):
        return PAD + (1.0 - v) * (height - 2 * PAD)

    body = []
    ends = _spread([sy(row[-1]) if row else PAD for row in profile["estimate"]], 13, PAD, height - PAD)
    for c, (label, est, low, high, end_y) in enumerate(
        zip(labels, profile["estimate"], profile["low"], profile["high"], ends)
    ):
        colour = PALETTE[c % len(PALETTE)]
        band = [f"{sx(t):.1f},{sy(v):.1f}" for t, v in zip(taus, high)] + [
            f"{sx(t):.1f},{sy(v):.1f}" for t, v in reversed(list(zip(taus, low)))
        ]
        line = " ".join(f"{sx(t):.1f},{sy(v):.1f}" for t, v in zip(taus, est))
        body.append(
            f'<g class="profile" aria-label={quoteattr(label)}><title>{escape(label)}</title>'
            f'<polygon points="{" ".join(band)}" fill="{colour}" fill-opacity="0.15" stroke="none"/>'
            f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>'
        )
        if taus:
            tip = (
                f"{label}: {_num(100 * est[0])} % of runs above τ = {_num(taus[0])}, "
                f"{_num(100 * est[-1])} % above τ = {_num(taus[-1])}"
            )
            body.append(
                f'<circle class="point" cx="{sx(taus[-1]):.1f}" cy="{sy(est[-1]):.1f}" r="3" '
                f'fill="{colour}"><title>{escape(tip)}</title></circle>'
                f'<text class="legend" x="{sx(taus[-1]) + 12:.1f}" y="{end_y + 4:.1f}" '
                f'fill="{text_colour(colour)}">{escape(_fit(label))}</text>'
            )
        body.append("</g>")
    body += _x_axis(lo_t, hi_t, x0, width, height - PAD, "τ (normalised score)")
    body += _y_axis(0.0, 1.0, x0, PAD, height - 2 * PAD)
    desc = (
        f"{_entries(len(labels))}: {', '.join(labels)}; each line is the fraction of the entry's runs, over every "
        "task, whose normalised score exceeds τ, with its stratified-bootstrap confidence band."
    )
    return _svg(x0 + width + 14 + legend_w, height + 10, title, desc, body, id_prefix)


def critical_difference(
    ranked: Sequence[tuple[float, str]],
    cd: float,
    cliques: Sequence[Sequence[str]],
    *,
    title: str = "Critical difference diagram",
    id_prefix: str = "cd",
) -> str:
    """Average ranks on one axis (1 = best, on the left), the critical difference as a bar, and a thick line
    under each group of entries that cannot be told apart (Demšar 2006, Fig. 1).

    Parameters
    ----------
    ranked : (average rank, name) pairs, best first
    cd : the Nemenyi critical difference, in ranks
    cliques : the names of each group whose ranks differ by less than ``cd``
    """
    k = max(2, len(ranked))
    x0, width = PAD + 10, PLOT_W
    axis_y = 50
    rows = len(ranked)
    clique_y0 = axis_y + 14
    label_y0 = clique_y0 + 10 * len(cliques) + 18

    def sx(rank):
        return x0 + (rank - 1) / (k - 1) * width

    body = [
        f'<g class="axis" aria-hidden="true"><line x1="{x0}" y1="{axis_y}" x2="{x0 + width}" y2="{axis_y}" '
        'stroke="#333"/>'
    ]
    for r in range(1, k + 1):
        body.append(
            f'<line x1="{sx(r):.1f}" y1="{axis_y - 5}" x2="{sx(r):.1f}" y2="{axis_y}" stroke="#333"/>'
            f'<text x="{sx(r):.1f}" y="{axis_y - 9}" text-anchor="middle">{r}</text>'
        )
    body.append("</g>")
    cd_end = min(1 + cd, k)
    body.append(
        f'<g class="cd-bar"><title>CD = {_num(cd)} ranks</title>'
        f'<line x1="{sx(1):.1f}" y1="14" x2="{sx(cd_end):.1f}" y2="14" stroke="#b3261e" stroke-width="3"/>'
        f'<text x="{sx(cd_end) + 6:.1f}" y="18">CD = {_num(cd)}</text></g>'
    )
    position = {name: rank for rank, name in ranked}
    for c, clique in enumerate(cliques):
        ranks = [position[n] for n in clique if n in position]
        if len(ranks) < 2:
            continue
        y = clique_y0 + 10 * c
        body.append(
            f'<line class="clique" x1="{sx(min(ranks)) - 3:.1f}" y1="{y}" x2="{sx(max(ranks)) + 3:.1f}" '
            f'y2="{y}" stroke="#333" stroke-width="4"><title>{escape(" ~ ".join(clique))}: not told apart'
            "</title></line>"
        )
    for i, (rank, name) in enumerate(ranked):
        y = label_y0 + 16 * i
        colour = PALETTE[i % len(PALETTE)]
        body.append(
            f'<g class="cd-entry"><title>{escape(name)}: average rank {_num(rank)}</title>'
            f'<circle cx="{sx(rank):.1f}" cy="{axis_y}" r="4" fill="{colour}"/>'
            f'<polyline points="{sx(rank):.1f},{axis_y} {sx(rank):.1f},{y} {x0 + width + 8},{y}" fill="none" '
            f'stroke="{colour}" aria-hidden="true"/>'
            f'<text x="{x0 + width + 12}" y="{y + 4}" fill="{text_colour(colour)}">'
            f"{escape(_fit(name))} ({_num(rank)})</text></g>"
        )
    desc = (
        f"Average ranks over the tasks of {rows} entries (1 = best): "
        + ", ".join(f"{name} {_num(rank)}" for rank, name in ranked)
        + f". Critical difference {_num(cd)}; entries joined by a thick line cannot be told apart."
    )
    height = label_y0 + 16 * rows + 10
    return _svg(x0 + width + 14 + _label_width([n for _, n in ranked]) + 40, height, title, desc, body, id_prefix)


def rank_history(
    series: Mapping[str, Sequence[tuple]], *, title: str = "Rank over time", id_prefix: str = "history"
) -> str:
    """Each entry's rank (1 at the top) against time, a step line per entry from one recomputation to the next.

    Parameters
    ----------
    series : mapping label -> [(datetime, rank or None), ...] in time order (None: not ranked then)
    """
    points = [(at, rank) for rows in series.values() for at, rank in rows if rank is not None]
    x0, width, height = PAD + 30, PLOT_W, 240
    legend_w = _label_width(list(series))
    if not points:
        return _svg(
            x0 + width, 60, title, "No ranked entry yet.", [f'<text x="{x0}" y="30">No history yet.</text>'], id_prefix
        )
    t0 = min(at for at, _ in points).timestamp()
    t1 = max(max(at for at, _ in points).timestamp(), t0 + 1.0)
    worst = max(max(rank for _, rank in points), 2)

    def sx(at):
        return x0 + (at.timestamp() - t0) / (t1 - t0) * width

    def sy(rank):
        return PAD + (rank - 1) / (worst - 1) * (height - 2 * PAD)

    body = []
    ends = _spread(
        [sy(next((r for _, r in reversed(rows) if r is not None), worst)) for rows in series.values()],
        13,
        PAD,
        height - PAD,
    )
    for c, ((label, rows), end_y) in enumerate(zip(series.items(), ends)):
        colour = PALETTE[c % len(PALETTE)]
        ranked = [(at, rank) for at, rank in rows if rank is not None]
        if not ranked:
            continue
        steps = []
        for i, (at, rank) in enumerate(ranked):
            steps.append(f"{sx(at):.1f},{sy(rank):.1f}")
            following = ranked[i + 1][0] if i + 1 < len(ranked) else None
            steps.append(f"{(sx(following) if following else x0 + width):.1f},{sy(rank):.1f}")
        body.append(
            f'<g class="history" aria-label={quoteattr(label)}><title>{escape(label)}</title>'
            f'<polyline points="{" ".join(steps)}" fill="none" stroke="{colour}" stroke-width="2"/>'
        )
        for at, rank in ranked:
            body.append(
                f'<circle class="point" cx="{sx(at):.1f}" cy="{sy(rank):.1f}" r="3" fill="{colour}">'
                f"<title>{escape(f'{label}: rank {rank} from {at:%Y-%m-%d %H:%M} UTC')}</title></circle>"
            )
        body.append(
            f'<text class="legend" x="{x0 + width + 8}" y="{end_y + 4:.1f}" fill="{text_colour(colour)}">'
            f"{escape(_fit(label))}</text></g>"
        )
    body.append(
        f'<g class="axis" aria-hidden="true"><line x1="{x0}" y1="{height - PAD}" x2="{x0 + width}" '
        f'y2="{height - PAD}" stroke="#333"/>'
        f'<text x="{x0}" y="{height - PAD + 16}">{_first_last(t0)}</text>'
        f'<text x="{x0 + width}" y="{height - PAD + 16}" text-anchor="end">{_first_last(t1)}</text>'
        f'<text x="{x0 + width / 2}" y="{height - PAD + 32}" text-anchor="middle">time (UTC)</text></g>'
    )
    body.append(
        f'<g class="axis" aria-hidden="true"><line x1="{x0}" y1="{PAD}" x2="{x0}" y2="{height - PAD}" '
        f'stroke="#333"/><text x="{x0 - 6}" y="{sy(1) + 4:.1f}" text-anchor="end">1</text>'
        f'<text x="{x0 - 6}" y="{sy(worst) + 4:.1f}" text-anchor="end">{worst}</text>'
        f'<text x="12" y="{height / 2:.1f}" transform="rotate(-90 12 {height / 2:.1f})" '
        'text-anchor="middle">rank</text></g>'
    )
    desc = (
        f"{_entries(len(series))}: {', '.join(series)}; each line is the entry's rank (1 = best, at the top) "
        "from each recomputation of the board to the next."
    )
    return _svg(x0 + width + 14 + legend_w, height + 10, title, desc, body, id_prefix)


def _first_last(timestamp: float) -> str:
    from datetime import UTC, datetime

    return escape(f"{datetime.fromtimestamp(timestamp, UTC):%Y-%m-%d %H:%M}")


def shakeup(
    points: Sequence[Mapping], *, title: str = "Shake-up: public rank against private rank", id_prefix: str = "shakeup"
) -> str:
    """Each entry's public rank (x) against its private rank (y), 1 at the top left; on the diagonal an entry
    kept its place, above it the private board ranked it better."""
    size = 320
    x0 = y0 = PAD + 20
    worst = max([2] + [max(p["public_rank"], p["private_rank"]) for p in points])

    def s(rank):
        return (rank - 1) / (worst - 1) * size

    body = [
        f'<line x1="{x0}" y1="{y0}" x2="{x0 + size}" y2="{y0 + size}" stroke="#999" stroke-dasharray="4 3" '
        'aria-hidden="true"/>',
        f'<g class="axis" aria-hidden="true"><line x1="{x0}" y1="{y0 + size}" x2="{x0 + size}" y2="{y0 + size}" '
        f'stroke="#333"/><line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y0 + size}" stroke="#333"/>'
        f'<text x="{x0}" y="{y0 + size + 16}">1</text>'
        f'<text x="{x0 + size}" y="{y0 + size + 16}" text-anchor="end">{worst}</text>'
        f'<text x="{x0 + size / 2}" y="{y0 + size + 32}" text-anchor="middle">public rank</text>'
        f'<text x="{x0 - 6}" y="{y0 + 4}" text-anchor="end">1</text>'
        f'<text x="{x0 - 6}" y="{y0 + size + 4}" text-anchor="end">{worst}</text>'
        f'<text x="14" y="{y0 + size / 2}" transform="rotate(-90 14 {y0 + size / 2})" text-anchor="middle">'
        "private rank</text></g>",
    ]
    for point in points:
        pub, priv = point["public_rank"], point["private_rank"]
        move = pub - priv
        colour = "#2ca02c" if move > 0 else "#d62728" if move < 0 else "#1f77b4"
        words = f"up {move}" if move > 0 else f"down {-move}" if move < 0 else "unchanged"
        tip = f"{point.get('method_name') or point['submission_id']}: public rank {pub}, private rank {priv} ({words})"
        body.append(
            f'<circle class="shake" cx="{x0 + s(pub):.1f}" cy="{y0 + s(priv):.1f}" r="4" fill="{colour}" '
            f'fill-opacity="0.8"><title>{escape(tip)}</title></circle>'
        )
    desc = (
        f"{_entries(len(points))} ranked on both boards; "
        f"{sum(p['public_rank'] > p['private_rank'] for p in points)} moved up on the private board, "
        f"{sum(p['public_rank'] < p['private_rank'] for p in points)} down."
    )
    return _svg(x0 + size + 20, y0 + size + 44, title, desc, body, id_prefix)
