"""Render an `AuditReport` as JSON, a terminal table, or a self-contained HTML page.

The HTML page has no external assets and no plotting dependency: its charts
are inline SVG bar charts drawn here (dirty ratio per partition against the
min.cleanable.dirty.ratio line, and how many versions each key has), so the
file can be mailed or opened from a ticket as is.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence

import msgspec

from pipeline.compaction_audit import AuditReport, PartitionAudit

__all__ = ["to_json", "to_text", "to_html", "bar_chart_svg"]


def to_json(report: AuditReport) -> bytes:
    return msgspec.json.format(msgspec.json.encode(report), indent=2)


def _ts(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _age(ms: int | None) -> str:
    if ms is None:
        return "-"
    seconds = ms / 1000
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024
    return f"{n}B"  # pragma: no cover


_TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("partition", "partition"),
    ("policy", "cleanup_policy"),
    ("records", "records"),
    ("bytes", "bytes"),
    ("segs", "segments"),
    ("keys", "distinct_keys"),
    ("superseded", "superseded_records"),
    ("tombstones", "tombstones"),
    ("tomb>ret", "tombstones_past_delete_retention"),
    ("null keys", "null_key_records"),
    ("clean", "clean_bytes"),
    ("dirty", "dirty_bytes"),
    ("ratio", "dirty_ratio"),
    ("eligible", "eligible_for_cleaning"),
    ("dirty keys", "dirty_distinct_keys"),
    ("passes", "cleaning_passes_needed"),
    ("last gap", "last_compaction_gap_offset"),
    ("gap time", "last_compaction_gap_timestamp_ms"),
    ("since gap", "records_since_last_gap"),
    ("oldest dirty", "oldest_dirty_age_ms"),
    ("remote segs", "remote.segments"),
    ("remote bytes", "remote.bytes"),
)


def _remote_cell(p: PartitionAudit, field: str) -> str:
    """A tiered partition's remote tier columns ("-" for a partition that is not tiered)."""
    r = p.remote
    if r is None:
        return "-"
    if field == "segments":
        return str(r.segments)
    return _bytes(r.bytes)


def _cell(p: PartitionAudit, field: str) -> str:
    if field == "partition":
        return f"{p.topic}-{p.partition}"
    if field.startswith("remote."):
        return _remote_cell(p, field[len("remote."):])
    value = getattr(p, field)
    if field in ("bytes", "clean_bytes", "dirty_bytes"):
        return _bytes(value)
    if field == "dirty_ratio":
        return f"{value:.3f}"
    if field == "last_compaction_gap_timestamp_ms":
        return _ts(value)
    if field == "oldest_dirty_age_ms":
        return _age(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None else str(value)


def to_text(report: AuditReport) -> str:
    """A fixed-width table plus the findings, for the terminal."""
    heads = [h for h, _ in _TABLE_COLUMNS]
    rows = [[_cell(p, f) for _, f in _TABLE_COLUMNS] for p in report.partitions]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(heads)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(heads, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    for p in report.partitions:
        for finding in p.findings:
            lines.append(f"{p.topic}-{p.partition}: {finding}")
    return "\n".join(lines) + "\n"


def bar_chart_svg(
    labels: Sequence[str],
    values: Sequence[float],
    *,
    title: str,
    threshold: float | None = None,
    threshold_label: str = "",
    value_format: str = "{:.2f}",
    highlight: Sequence[bool] | None = None,
    width: int = 720,
    bar_height: int = 18,
) -> str:
    """A horizontal bar chart as an SVG element (one bar per label)."""
    left, right, top = 170, 70, 34
    plot_w = width - left - right
    height = top + bar_height * len(labels) + 30
    vmax = max([*values, threshold or 0.0, 1e-9])
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{html.escape(title)}" style="font:12px sans-serif">',
        f'<text x="{left}" y="18" font-weight="bold">{html.escape(title)}</text>',
    ]
    for i, (label, value) in enumerate(zip(labels, values)):
        y = top + i * bar_height
        w = max(plot_w * value / vmax, 0.0)
        hot = highlight[i] if highlight is not None else False
        color = "#d9534f" if hot else "#4a7ebb"
        out.append(f'<text x="{left - 6}" y="{y + bar_height * 0.7:.1f}" text-anchor="end">{html.escape(label)}</text>')
        out.append(f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{bar_height - 4}" fill="{color}">'
                   f'<title>{html.escape(label)}: {value_format.format(value)}</title></rect>')
        out.append(f'<text x="{left + w + 4:.1f}" y="{y + bar_height * 0.7:.1f}">{value_format.format(value)}</text>')
    axis_y = top + bar_height * len(labels)
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{axis_y}" stroke="#333"/>')
    if threshold is not None:
        x = left + plot_w * threshold / vmax
        out.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{axis_y}" stroke="#e08e0b" '
                   f'stroke-dasharray="4 3"/>')
        out.append(f'<text x="{x:.1f}" y="{axis_y + 16}" text-anchor="middle" fill="#a86500">'
                   f'{html.escape(threshold_label)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _bucket_labels(bounds: Sequence[int]) -> list[str]:
    labels: list[str] = []
    lo = 1
    for hi in bounds:
        labels.append(f"{lo}" if lo == hi else f"{lo}-{hi}")
        lo = hi + 1
    labels.append(f"{lo}+")
    return labels


_CSS = """
body{font-family:sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;font-size:12px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}
th{background:#f0f0f0;position:sticky;top:0}
td:first-child,th:first-child{text-align:left}
tr.eligible td{background:#fff4e5}
.findings li{margin:2px 0}
.charts{display:flex;flex-wrap:wrap;gap:24px}
"""


def to_html(report: AuditReport) -> str:
    parts = report.partitions
    generated = _ts(report.generated_at_ms)
    labels = [f"{p.topic}-{p.partition}" for p in parts]
    threshold = min((p.min_cleanable_dirty_ratio for p in parts), default=0.5)
    thresholds = {p.min_cleanable_dirty_ratio for p in parts}
    ratio_chart = bar_chart_svg(
        labels,
        [p.dirty_ratio for p in parts],
        title="Dirty ratio by partition (red: eligible for cleaning)",
        threshold=threshold,
        threshold_label=("min.cleanable.dirty.ratio " + (f"{threshold}" if len(thresholds) <= 1 else "(lowest)")),
        highlight=[p.eligible_for_cleaning for p in parts],
    )
    bucket_totals = [sum(p.key_versions_histogram[i] for p in parts) for i in range(len(report.key_version_buckets) + 1)]
    key_chart = bar_chart_svg(
        _bucket_labels(report.key_version_buckets),
        bucket_totals,
        title="Keys by number of versions in the log (all partitions)",
        value_format="{:,.0f}",
    )
    superseded_chart = bar_chart_svg(
        labels,
        [p.superseded_records for p in parts],
        title="Records a full compaction would drop, by partition",
        value_format="{:,.0f}",
    )
    head = "".join(f"<th>{html.escape(h)}</th>" for h, _ in _TABLE_COLUMNS)
    body = []
    for p in parts:
        cls = ' class="eligible"' if p.eligible_for_cleaning else ""
        cells = "".join(f"<td>{html.escape(_cell(p, f))}</td>" for _, f in _TABLE_COLUMNS)
        body.append(f"<tr{cls}>{cells}</tr>")
    findings = "".join(
        f"<li><b>{html.escape(p.topic)}-{p.partition}</b>: {html.escape(f)}</li>" for p in parts for f in p.findings
    )
    total_records = sum(p.records for p in parts)
    remote_note = f" &middot; remote storage {html.escape(report.remote_storage)}" if report.remote_storage else ""
    total_superseded = sum(p.superseded_records for p in parts)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Compaction audit</title><style>{_CSS}</style></head>
<body>
<h1>Compaction audit</h1>
<p>Log dirs: {html.escape(", ".join(report.log_dirs))}{remote_note} &middot; generated {generated} &middot;
{len(parts)} partitions &middot; {total_records:,} records &middot; {total_superseded:,} superseded
&middot; dedupe buffer {report.cleaner.dedupe_buffer_size:,} bytes / {report.cleaner.threads} thread(s)</p>
<div class="charts">
{ratio_chart}
{key_chart}
{superseded_chart}
</div>
<h2>Partitions</h2>
<table><thead><tr>{head}</tr></thead><tbody>
{"".join(body)}
</tbody></table>
<h2>Findings</h2>
<ul class="findings">{findings or "<li>nothing to report</li>"}</ul>
<p style="font-size:11px;color:#666">Dirty bytes are Kafka's cleanable bytes: closed segments from the
cleaner checkpoint up to the first uncleanable offset (active segment, min.compaction.lag.ms). The last
gap is the newest record whose preceding offset is gone: the last place compaction provably ran. A tiered
partition's bytes and segments are its local ones; its remote tier has the remote columns (segments copied, per
__remote_log_metadata; the time range from its oldest record read to its newest).</p>
</body></html>
"""
