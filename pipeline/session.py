"""A SparkSession set up for the pipeline's data sources.

Spark's Python workers must import `pipeline` (and `storage`, `wire`) from the
same interpreter as the driver, so PYSPARK_PYTHON is this interpreter; the
package is installed in that venv. SPARK_LOCAL_IP keeps Spark off the
machine's external interfaces (and quiet about them).

Spark's own Kafka connector is on the session's classpath, so
`spark.read.format("kafka")` (against a running broker) and
`spark.read.format("kafka-log")` (over its log directories) work side by side.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from pyspark.sql import SparkSession

__all__ = ["KAFKA_CONNECTOR", "KAFKA_CONNECTOR_JARS_ENV", "SessionSource", "build_session",
           "kafka_connector_conf", "register_sources", "session_of"]

KAFKA_CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13"
KAFKA_CONNECTOR_JARS_ENV = "SPARK_KAFKA_CONNECTOR_JARS"


SessionSource = SparkSession | Callable[[], SparkSession]
"""A session, or how to start one: a job given the latter starts it only once its checks before
Spark have passed (the CLI's JVM takes seconds to come up, only for a refusal to follow)."""


def session_of(source: SessionSource) -> SparkSession:
    return source if isinstance(source, SparkSession) else source()


def kafka_connector_conf() -> dict[str, str]:
    """How Spark finds its Kafka connector: the jars listed in $SPARK_KAFKA_CONNECTOR_JARS
    (os.pathsep-separated: the test suite's copy, fetched by Maven), else the connector at
    pyspark's own version as `spark.jars.packages`, which Spark resolves from Maven Central
    (through Ivy, cached in ~/.ivy2) when the session starts."""
    import pyspark

    jars = [p for p in os.environ.get(KAFKA_CONNECTOR_JARS_ENV, "").split(os.pathsep) if p]
    if jars:
        return {"spark.jars": ",".join(jars)}
    return {"spark.jars.packages": f"{KAFKA_CONNECTOR}:{pyspark.__version__}"}


def register_sources(spark: SparkSession) -> SparkSession:
    """Register `kafka-log` with the session (idempotent)."""
    from pipeline.kafka_log_source import KafkaLogDataSource

    spark.dataSource.register(KafkaLogDataSource)
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
    for key, value in {**kafka_connector_conf(), **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return register_sources(spark)
