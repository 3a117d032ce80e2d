"""SVG bar charts for the console's pages, in the style of the compaction audit report
(pipeline/audit_report.py bar_chart_svg: horizontal bars, highlighted bars red, a dashed
threshold line). The console cannot import that one: asyncbroker must not import pipeline
(the Spark side), and pipeline cannot import asyncbroker's modules either, so this is the
console's own, drawn the same way. Every label is escaped; the result is marked safe for Jinja2."""

from __future__ import annotations

import html
from collections.abc import Sequence

from markupsafe import Markup


def bar_chart_svg(labels: Sequence[str], values: Sequence[float], *, title: str, threshold: float | None = None,
                  threshold_label: str = "", value_format: str = "{:.2f}", highlight: Sequence[bool] | None = None,
                  width: int = 720, bar_height: int = 18, chart_id: str = "") -> Markup:
    """A horizontal bar chart as an SVG element (one bar per label)."""
    left, right, top = 170, 90, 34
    plot_w = width - left - right
    height = top + bar_height * len(labels) + 30
    vmax = max([*values, threshold or 0.0, 1e-9])
    ident = f' id="{html.escape(chart_id)}"' if chart_id else ""
    out = [f'<svg xmlns="http://www.w3.org/2000/svg"{ident} class="chart" width="{width}" height="{height}" '
           f'role="img" aria-label="{html.escape(title)}" style="font:12px sans-serif">',
           f'<text x="{left}" y="18" font-weight="bold">{html.escape(title)}</text>']
    for i, (label, value) in enumerate(zip(labels, values)):
        y = top + i * bar_height
        w = max(plot_w * value / vmax, 0.0)
        color = "#d9534f" if highlight is not None and highlight[i] else "#4a7ebb"
        shown = html.escape(value_format.format(value))
        out.append(f'<text x="{left - 6}" y="{y + bar_height * 0.7:.1f}" text-anchor="end">{html.escape(label)}</text>')
        out.append(f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{bar_height - 4}" fill="{color}">'
                   f'<title>{html.escape(label)}: {shown}</title></rect>')
        out.append(f'<text x="{left + w + 4:.1f}" y="{y + bar_height * 0.7:.1f}">{shown}</text>')
    axis_y = top + bar_height * len(labels)
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{axis_y}" stroke="#333"/>')
    if threshold is not None:
        x = left + plot_w * threshold / vmax
        out.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{axis_y}" stroke="#e08e0b" '
                   f'stroke-dasharray="4 3"/>')
        out.append(f'<text x="{x:.1f}" y="{axis_y + 16}" text-anchor="middle" fill="#a86500">'
                   f'{html.escape(threshold_label)}</text>')
    out.append("</svg>")
    return Markup("\n".join(out))
