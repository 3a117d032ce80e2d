"""Export the records of log directories as Parquet, partitioned by topic and partition.

The output is a plain Hive-style dataset (`topic=<t>/partition=<p>/part-*.parquet`)
any engine can read back; every column of the `kafka-log` source is kept. A tiered topic's
records in the remote tier are exported too when the tier is given (`remoteStorage`, or the
broker's settings, in `read_options`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pipeline.kafka_log_source import check_readable
from pipeline.session import SessionSource, session_of

__all__ = ["export_records", "EXPORT_FORMATS"]

EXPORT_FORMATS = ("parquet", "orc", "json")


def export_records(
    spark_source: SessionSource,
    log_dirs: Sequence[str],
    out: str,
    *,
    fmt: str = "parquet",
    topics: Iterable[str] | None = None,
    mode: str = "errorifexists",
    read_options: Mapping[str, str] | None = None,
) -> int:
    """Write every record of `log_dirs` to `out`; returns the number of records written."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(EXPORT_FORMATS)}")
    options = dict(read_options or {})
    if topics is not None:
        options["topics"] = ",".join(topics)
    check_readable(log_dirs, options)  # before Spark: a plain message, not a task failure
    spark = session_of(spark_source)
    reader = spark.read.format("kafka-log")
    for key, value in options.items():
        reader = reader.option(key, value)
    records = reader.load(list(log_dirs))
    records.write.partitionBy("topic", "partition").mode(mode).format(fmt).save(out)
    # Counting the written files (Parquet/ORC footers) is cheaper than a second scan of the logs.
    return spark.read.format(fmt).load(out).count()
