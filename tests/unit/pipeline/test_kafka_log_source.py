"""The kafka-log data source returns exactly what storage's reader returns."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType

from pipeline_testlib import (
    BASE_TS,
    CODECS,
    commit_marker,
    data_batch,
    spark_rows_as_tuples,
    storage_records,
    write_segment,
)

pytestmark = pytest.mark.spark

COLUMNS = ["topic", "partition", "offset", "ts_ms", "key", "value", "headers"]


def _build_alpha0(part: Path) -> None:
    # segment 0: one batch per codec, with headers
    batches, off = [], 0
    for codec in CODECS:
        batches.append(data_batch(list(range(off, off + 20)), codec=codec, headers=True))
        off += 20
    write_segment(part, 0, batches)
    # segment 100: what the cleaner leaves: gaps inside and between batches, tombstones,
    # a committed transaction and its marker
    write_segment(part, 100, [
        data_batch([100, 103, 104, 110], codec=CODECS[4]),
        data_batch([111, 115], keys=[b"gone", b"still"], values=[None, b"here"]),
        data_batch([120, 121, 122], producer_id=7, transactional=True, codec=CODECS[1]),
        commit_marker(123, producer_id=7),
        data_batch([130, 131]),
    ])
    # active segment
    write_segment(part, 200, [data_batch(list(range(200, 260)), codec=CODECS[2]),
                              data_batch(list(range(260, 300)), codec=CODECS[3])], active=True)


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple], list[tuple]]:
    root = tmp_path_factory.mktemp("logs")
    _build_alpha0(root / "alpha-0")
    big = [data_batch(list(range(i, i + 50)), codec=CODECS[(i // 50) % 5], headers=(i // 50) % 2 == 0)
           for i in range(0, 3000, 50)]
    write_segment(root / "alpha-1", 0, big, active=True)
    write_segment(root / "beta-0", 0, [data_batch([0, 1, 2], keys=[None, b"k", b"k"], values=[b"a", None, b"c"])])
    write_segment(root / "beta-0", 5, [data_batch([5, 6])], active=True)
    expected = []
    expected_with_control = []
    for name in ("alpha-0", "alpha-1", "beta-0"):
        expected += storage_records(root / name)
        expected_with_control += storage_records(root / name, include_control=True)
    # What a running broker leaves around meanwhile: none of it may be read.
    (root / "alpha-0" / "00000000000000000050.log.deleted").write_bytes(
        data_batch(list(range(50, 60)), ts=BASE_TS))
    (root / "alpha-0" / "00000000000000000100.log.cleaned").write_bytes(data_batch([100]))
    (root / "alpha-0" / "00000000000000000100.log.swap").write_bytes(data_batch([100]))
    (root / "alpha-0.0123456789abcdef0123456789abcdef-delete").mkdir()
    write_segment(root / "alpha-0.0123456789abcdef0123456789abcdef-delete", 0, [data_batch([0, 1])])
    with open(root / "alpha-0" / "00000000000000000200.log", "ab") as f:  # a half-written batch
        f.write(data_batch(list(range(300, 310)))[:40])
    return root, expected, expected_with_control


def _collect(df) -> list[tuple]:  # noqa: ANN001
    rows = df.withColumn("ts_ms", F.unix_millis("timestamp")).select(*COLUMNS).collect()
    return sorted(spark_rows_as_tuples(rows), key=lambda r: (r[0], r[1], r[2]))


def test_same_records_as_storage_reader(spark, log_dir) -> None:  # noqa: ANN001
    root, expected, _ = log_dir
    df = spark.read.format("kafka-log").option("maxPartitionBytes", "8192").load(str(root))
    assert df.rdd.getNumPartitions() > 5  # alpha-1's segment was split at index entries
    assert _collect(df) == sorted(expected, key=lambda r: (r[0], r[1], r[2]))


def test_control_records_only_when_asked(spark, log_dir) -> None:  # noqa: ANN001
    root, expected, with_control = log_dir
    df = spark.read.format("kafka-log").option("includeControl", "true").load(str(root))
    got = _collect(df)
    assert got == sorted(with_control, key=lambda r: (r[0], r[1], r[2]))
    assert len(got) == len(expected) + 1
    marker = df.filter("is_control").select("offset", "is_transactional", "producer_id").collect()
    assert [tuple(m) for m in marker] == [(123, True, 7)]


def test_batch_columns(spark, log_dir) -> None:  # noqa: ANN001
    root, _, _ = log_dir
    df = spark.read.format("kafka-log").option("topics", "alpha").option("partitions", "0").load(str(root))
    rows = {r["offset"]: r for r in df.collect()}
    assert rows[103]["batch_base_offset"] == 100
    assert rows[121]["is_transactional"] and rows[121]["producer_id"] == 7
    assert not rows[5]["is_transactional"] and rows[5]["producer_id"] == -1
    assert rows[0]["timestamp_type"] == 0
    assert rows[111]["value"] is None and bytes(rows[111]["key"]) == b"gone"


def test_topic_partition_and_offset_options(spark, log_dir) -> None:  # noqa: ANN001
    root, expected, _ = log_dir
    df = (spark.read.format("kafka-log").option("topics", "alpha").option("partitions", "0")
          .option("startingOffsets", '{"alpha": {"0": 103}}').option("endingOffsets", "201").load(str(root)))
    want = [r for r in expected if r[0] == "alpha" and r[1] == 0 and 103 <= r[2] < 201]
    assert _collect(df) == want
    assert want[0][2] == 103 and want[-1][2] == 200


def test_several_log_dirs_and_column_subset(spark, log_dir, tmp_path: Path) -> None:  # noqa: ANN001
    root, expected, _ = log_dir
    write_segment(tmp_path / "gamma-3", 0, [data_batch([0, 1, 2, 3])], active=True)
    schema = StructType([StructField("offset", LongType(), False)])
    df = spark.read.format("kafka-log").schema(schema).load([str(root), str(tmp_path)])
    assert df.columns == ["offset"]
    assert df.count() == len(expected) + 4


def test_empty_log_dir(spark, tmp_path: Path) -> None:  # noqa: ANN001
    assert spark.read.format("kafka-log").load(str(tmp_path)).count() == 0
