"""Export to Parquet and read it back: the same records, partitioned by topic and partition."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F

from pipeline.cli import export_main
from pipeline_testlib import CODECS, commit_marker, data_batch, spark_rows_as_tuples, storage_records, write_segment

pytestmark = pytest.mark.spark

COLUMNS = ["topic", "partition", "offset", "ts_ms", "key", "value", "headers"]


@pytest.fixture(scope="module")
def source_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("export-src")
    write_segment(root / "orders-0", 0, [data_batch(list(range(0, 30)), codec=CODECS[4], headers=True),
                                         data_batch([30, 33], keys=[b"k", None], values=[None, b"v"])])
    write_segment(root / "orders-0", 34, [data_batch([34, 35], producer_id=4, transactional=True),
                                          commit_marker(36, producer_id=4)], active=True)
    write_segment(root / "orders-2", 0, [data_batch(list(range(0, 10)), codec=CODECS[2])], active=True)
    write_segment(root / "refunds-0", 0, [data_batch([0, 1, 2], codec=CODECS[3])], active=True)
    return root


def test_export_round_trip(spark, source_dir: Path, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "parquet"
    assert export_main([str(source_dir), "--out", str(out), "--master", "local[2]"]) == 0
    expected = sorted(sum((storage_records(source_dir / n) for n in ("orders-0", "orders-2", "refunds-0")), []))
    assert f"exported {len(expected)} records" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["topic=orders", "topic=refunds"]
    assert sorted(p.name for p in (out / "topic=orders").iterdir()) == ["partition=0", "partition=2"]
    back = spark.read.parquet(str(out)).withColumn("ts_ms", F.unix_millis("timestamp"))
    assert sorted(spark_rows_as_tuples(back.select(*COLUMNS).collect())) == expected
    # the batch-level columns survive too
    txn = back.filter("topic = 'orders' AND offset = 35").select("is_transactional", "producer_id",
                                                                  "batch_base_offset").collect()
    assert [tuple(r) for r in txn] == [(True, 4, 34)]


def test_export_refuses_existing_output_unless_overwrite(spark, source_dir: Path, tmp_path: Path,  # noqa: ANN001
                                                          capsys) -> None:  # noqa: ANN001
    out = tmp_path / "existing"
    out.mkdir()
    (out / "marker").write_text("x")
    assert export_main([str(source_dir), "--out", str(out), "--master", "local[2]", "--topics", "refunds"]) == 1
    assert "export failed" in capsys.readouterr().err
    assert export_main([str(source_dir), "--out", str(out), "--master", "local[2]", "--topics", "refunds",
                        "--overwrite"]) == 0
    assert spark.read.parquet(str(out)).count() == 3
