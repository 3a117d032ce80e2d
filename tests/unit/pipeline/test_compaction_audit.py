"""The audit's numbers against values computed here from the crafted records."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from xml.etree import ElementTree

import pytest

from pipeline.cleaner_position import CleanerSettings, keys_per_pass
from asyncbroker.cli import main as asyncbroker_main
from pipeline.cli import audit_main
from pipeline.compaction_audit import run_audit
from pipeline_testlib import BASE_TS, commit_marker, write_cleaner_checkpoint, write_segment
from storage.log_manager import TOPIC_CONFIGS_FILE
from storage.topic_partition import TopicPartition
from wire.compression import CompressionType
from wire.records import Record, build_batch

pytestmark = pytest.mark.spark

DAY = 86_400_000
NOW = BASE_TS + 30 * DAY
DELETE_RETENTION = 2 * DAY
MAX_LAG = 7 * DAY

# (offset, key, value, timestamp): the clean section (segment 0) as a cleaner leaves it: unique
# keys with offset gaps; the dirty section (segment 10) and the active segment (20) as written.
CLEAN = [
    (2, b"k1", b"a", BASE_TS + 2 * DAY),
    (5, b"k2", b"b", BASE_TS + 3 * DAY),
    (7, b"k3", None, BASE_TS + 4 * DAY),  # tombstone, older than delete.retention.ms
    (9, b"k4", b"d", BASE_TS + 5 * DAY),  # newest gap: 8 is gone
]
DIRTY = [
    (10, b"k1", b"a2", BASE_TS + 20 * DAY),
    (11, b"k2", b"b2", BASE_TS + 20 * DAY),
    (12, b"k5", b"e", BASE_TS + 21 * DAY),
    (13, b"k5", b"e2", BASE_TS + 21 * DAY),
    (14, b"k6", None, NOW - DAY),  # tombstone, younger than delete.retention.ms
    (15, b"k1", b"a3", NOW - DAY),
    (16, None, b"keyless", NOW - DAY),
    (17, b"k7", b"g", NOW - DAY),
    (18, b"k8", b"h", NOW - DAY),
    (19, b"k9", b"i", NOW - DAY),
]
ACTIVE = [
    (20, b"k1", b"a4", NOW - 1000),
    (21, b"k10", b"j", NOW - 1000),
    # 22: a commit marker of producer 3 (control records occupy offsets: no gap at 23)
    (23, b"k10", b"j2", NOW - 500),
]


def _batch(recs: list[tuple], codec: CompressionType = CompressionType.NONE) -> bytes:
    first = recs[0][0]
    return build_batch([Record(o, ts, k, v) for o, k, v, ts in recs], base_offset=first, compression=codec,
                       last_offset_delta=recs[-1][0] - first)


@pytest.fixture(scope="module")
def audited_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("audit")
    part = root / "cmp-0"
    write_segment(part, 0, [_batch(CLEAN[:2]), _batch(CLEAN[2:], CompressionType.ZSTD)])
    write_segment(part, 10, [_batch(DIRTY[:4], CompressionType.GZIP), _batch(DIRTY[4:])])
    write_segment(part, 20, [_batch(ACTIVE[:2]), commit_marker(22, producer_id=3, ts=NOW - 900),
                             _batch(ACTIVE[2:])], active=True)
    # a partition of the same topic that was never cleaned, everything in the active segment
    write_segment(root / "cmp-1", 0, [_batch([(0, b"x", b"1", NOW - DAY), (1, b"x", b"2", NOW - DAY)])],
                  active=True)
    # a delete-policy topic
    write_segment(root / "plain-0", 0, [_batch([(0, None, b"1", NOW - DAY)])], active=True)
    write_cleaner_checkpoint(root, {TopicPartition("cmp", 0): 10})
    (root / TOPIC_CONFIGS_FILE).write_text(json.dumps({"cmp": {
        "cleanup.policy": "compact",
        "min.cleanable.dirty.ratio": "0.3",
        "delete.retention.ms": str(DELETE_RETENTION),
        "max.compaction.lag.ms": str(MAX_LAG),
    }}))
    (part / "00000000000000000000.log.cleaned").write_bytes(b"")  # an interrupted cleaning
    return root


def _expected() -> dict:
    data = CLEAN + DIRTY + ACTIVE
    keyed = [r for r in data if r[1] is not None]
    keys = {r[1] for r in keyed}
    dirty_keys = {r[1] for r in DIRTY if r[1] is not None}
    return {
        "records": len(data),
        "distinct_keys": len(keys),
        "superseded_records": len(keyed) - len(keys),
        "tombstones": sum(1 for r in keyed if r[2] is None),
        "tombstones_past_delete_retention": sum(1 for r in keyed if r[2] is None and r[3] <= NOW - DELETE_RETENTION),
        "null_key_records": len(data) - len(keyed),
        "dirty_records": len(DIRTY),
        "dirty_distinct_keys": len(dirty_keys),
        "last_compaction_gap_offset": 9,
        "last_compaction_gap_timestamp_ms": CLEAN[3][3],
        "records_since_last_gap": sum(1 for r in data if r[0] > 9),  # gawk: last_row - last_gap_row
        "oldest_dirty_timestamp_ms": min(r[3] for r in DIRTY + ACTIVE),
        "control_records": 1,
    }


def test_audit_numbers(spark, audited_dir: Path) -> None:  # noqa: ANN001
    cleaner = CleanerSettings(dedupe_buffer_size=24 * 4, threads=1, io_buffer_load_factor=1.0)
    assert keys_per_pass(cleaner) == 4
    report = run_audit(spark, [str(audited_dir)], cleaner=cleaner, now_ms=NOW)
    by_tp = {(p.topic, p.partition): p for p in report.partitions}
    assert sorted(by_tp) == [("cmp", 0), ("cmp", 1), ("plain", 0)]
    a = by_tp[("cmp", 0)]
    for field, value in _expected().items():
        assert getattr(a, field) == value, field
    seg0 = os.path.getsize(audited_dir / "cmp-0" / "00000000000000000000.log")
    seg10 = os.path.getsize(audited_dir / "cmp-0" / "00000000000000000010.log")
    seg20 = os.path.getsize(audited_dir / "cmp-0" / "00000000000000000020.log")
    assert (a.segments, a.bytes) == (3, seg0 + seg10 + seg20)
    assert (a.cleaner_checkpoint, a.first_dirty_offset, a.first_uncleanable_offset) == (10, 10, 20)
    assert (a.clean_bytes, a.dirty_bytes) == (seg0, seg10)
    assert a.dirty_ratio == pytest.approx(seg10 / (seg0 + seg10))
    assert a.eligible_for_cleaning == (seg10 / (seg0 + seg10) > 0.3)
    assert a.cleaning_passes_needed == math.ceil(a.dirty_distinct_keys / 4) == 2
    assert a.oldest_dirty_age_ms == NOW - a.oldest_dirty_timestamp_ms
    assert a.max_compaction_lag_exceeded  # segment 10's first batch: 9 days old, lag 7 days
    assert a.log_end_offset == 24
    assert a.in_flight_files == 1
    assert any("no key" in f for f in a.findings)
    assert any("2 cleaning passes" in f for f in a.findings)
    # default dedupe buffer: Kafka's "about 5 million keys per pass"
    assert keys_per_pass(CleanerSettings()) == 5_033_164

    never = by_tp[("cmp", 1)]
    assert (never.records, never.distinct_keys, never.superseded_records) == (2, 1, 1)
    assert (never.clean_bytes, never.dirty_bytes, never.dirty_ratio, never.eligible_for_cleaning) == (0, 0, 0.0, False)
    assert never.cleaner_checkpoint is None and never.last_compaction_gap_offset is None
    assert never.oldest_dirty_timestamp_ms == NOW - DAY  # everything is past the (absent) checkpoint

    plain = by_tp[("plain", 0)]
    assert plain.cleanup_policy == "delete" and not plain.eligible_for_cleaning
    assert plain.null_key_records == 1
    assert any("does not compact" in f for f in plain.findings)


def test_audit_cli_writes_json_and_html(spark, audited_dir: Path, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    out_json, out_html = tmp_path / "audit.json", tmp_path / "audit.html"
    # Through the `asyncbroker audit` front door, which hands its arguments to pipeline.cli.
    rc = asyncbroker_main(["audit", str(audited_dir), "--master", "local[2]", "--json", str(out_json),
                           "--html", str(out_html), "--now-ms", str(NOW), "--topics", "cmp"])
    assert rc == 0
    table = capsys.readouterr().out
    assert "cmp-0" in table and "cmp-1" in table and "plain-0" not in table
    report = json.loads(out_json.read_text())
    p0 = next(p for p in report["partitions"] if p["partition"] == 0)
    assert p0["superseded_records"] == _expected()["superseded_records"]
    assert p0["cleaning_passes_needed"] == 1  # the default buffer holds every key
    page = out_html.read_text()
    assert page.count("<svg") == 3 and "Dirty ratio by partition" in page and "cmp-0" in page
    for chunk in page.split("<svg")[1:]:  # each chart is well-formed SVG
        svg = ElementTree.fromstring("<svg" + chunk[: chunk.index("</svg>") + len("</svg>")])
        assert svg.findall("{http://www.w3.org/2000/svg}rect")


def test_audit_cli_missing_dir(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    assert audit_main([str(tmp_path / "nope")]) == 1
    assert "does not exist" in capsys.readouterr().err
