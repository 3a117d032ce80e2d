"""A SparkSession set up for the pipeline's data sources.

Spark's Python workers must import `pipeline` (and `storage`, `wire`) from the
same interpreter as the driver, so PYSPARK_PYTHON is this interpreter; the
package is installed in that venv. SPARK_LOCAL_IP keeps Spark off the
machine's external interfaces (and quiet about them).
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

__all__ = ["build_session", "register_sources"]


def register_sources(spark: SparkSession) -> SparkSession:
    """Register `kafka-log` and `asyncbroker` with the session (idempotent)."""
    from pipeline.broker_stream import AsyncBrokerDataSource
    from pipeline.kafka_log_source import KafkaLogDataSource

    spark.dataSource.register(KafkaLogDataSource)
    spark.dataSource.register(AsyncBrokerDataSource)
    return spark


def build_session(
    master: str = "local[*]",
    app_name: str = "asyncbroker-pipeline",
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """getOrCreate a session with the environment and settings the jobs rely on."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.python.worker.reuse", "true")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return register_sources(spark)
