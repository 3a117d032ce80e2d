"""One local[2] SparkSession for every Spark test of the run (pipeline.session.build_session
is getOrCreate, so the integration tests share it too)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pyspark = pytest.importorskip("pyspark", reason="the [spark] extra is not installed")


@pytest.fixture(scope="session")
def spark() -> Iterator["pyspark.sql.SparkSession"]:
    from pipeline.session import build_session

    session = build_session("local[2]", "asyncbroker-tests", {"spark.sql.shuffle.partitions": "4"})
    yield session
