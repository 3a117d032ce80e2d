"""The row schema of the `kafka-log` source: one row per record of a log.

Column names follow the issue (and, where they overlap, Spark's own Kafka
source: `timestamp` is a Spark timestamp, `timestamp_type` Kafka's 0/1).
A caller may ask for fewer columns by passing a schema made of any subset of
them (in any order) to `.schema(...)`; the reader then builds only those.
`headers` is null for a record without headers (as librdkafka reports
it); that also spares Spark building an empty array per row, which costs
more than all the other columns together. `value_length` (-1 for a null
value) is an extra column for jobs that need
to tell tombstones apart without moving values through Arrow (the audit).
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = ["RECORD_SCHEMA", "EXTRA_COLUMNS", "KNOWN_COLUMNS", "HEADER_TYPE", "check_requested_schema"]

HEADER_TYPE = ArrayType(
    StructType([StructField("key", StringType(), True), StructField("value", BinaryType(), True)]),
    containsNull=False,
)

RECORD_SCHEMA = StructType(
    [
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("offset", LongType(), False),
        StructField("timestamp", TimestampType(), False),
        StructField("timestamp_type", IntegerType(), False),
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("headers", HEADER_TYPE, True),  # null: the record has no headers
        StructField("producer_id", LongType(), False),
        StructField("is_transactional", BooleanType(), False),
        StructField("is_control", BooleanType(), False),
        StructField("batch_base_offset", LongType(), False),
    ]
)

EXTRA_COLUMNS: dict[str, DataType] = {"value_length": IntegerType()}

KNOWN_COLUMNS: dict[str, DataType] = {f.name: f.dataType for f in RECORD_SCHEMA.fields} | EXTRA_COLUMNS


def check_requested_schema(schema: StructType) -> None:
    """A user schema may only name known columns with their types (ValueError otherwise)."""
    for field in schema.fields:
        expected = KNOWN_COLUMNS.get(field.name)
        if expected is None:
            raise ValueError(f"kafka-log has no column {field.name!r}; columns: {', '.join(KNOWN_COLUMNS)}")
        if field.dataType != expected:
            raise ValueError(f"column {field.name!r} has type {expected.simpleString()}, not {field.dataType.simpleString()}")
