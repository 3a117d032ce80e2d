"""`asyncbroker`: Structured Streaming source and sink over the Kafka protocol.

    spark.readStream.format("asyncbroker")
        .option("bootstrap.servers", "127.0.0.1:9092")
        .option("subscribe", "orders")            # comma-separated topics
        .option("startingOffsets", "earliest")    # earliest | latest | {"orders": {"0": 42}}
        .option("maxOffsetsPerTrigger", "10000")  # optional
        .load()
    df.writeStream.format("asyncbroker").option("bootstrap.servers", ...)
        .option("topic", "orders-copy")           # or a `topic` column
        .option("checkpointLocation", ...).start()

Source offsets are `{"topic": {"partition": next_offset}}`, the same shape as
Spark's Kafka source. The driver asks the broker for each partition's high
watermark (ListOffsets) in `latestOffset`; each task fetches exactly the
offset range [start, end) of one partition (Fetch). Gaps left by compaction
and offsets taken by control records are fine: a task stops when it has
seen an offset >= end - 1 or reached the partition end. `maxOffsetsPerTrigger`
caps offsets per micro-batch, split across partitions in proportion to
their backlog; Trigger.AvailableNow pins the target at the offsets current
when the query starts. Restarting a query resumes from the offsets in its
checkpoint, so no record is lost; a micro-batch that failed after part of its
output was produced is replayed, so the sink is at-least-once (like Spark's
Kafka sink: duplicates only from replays).

Why confluent-kafka and not `wire/` for the protocol: pipeline may import
storage and wire but never the service, and wire is deliberately sans-io
(bytes in, objects out); a Fetch/ListOffsets/Produce client on top of it
would be a second Kafka client to maintain (connections, metadata and leader
lookups, version negotiation, retries, batching, compression on produce).
librdkafka (confluent-kafka, already a test dependency and installed) is a
complete, widely used client, and using it here also exercises the broker
the way real Spark users' clients will.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from pipeline.record_schema import RECORD_SCHEMA

__all__ = ["AsyncBrokerDataSource", "STREAM_SCHEMA", "TopicPartitionRange"]

STREAM_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers")
STREAM_SCHEMA = StructType([RECORD_SCHEMA[c] for c in STREAM_COLUMNS])

Offsets = dict[str, dict[str, int]]  # topic -> partition (as str, JSON keys) -> next offset

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _options(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in options.items()}


def _bootstrap(opts: Mapping[str, str]) -> str:
    for key in ("bootstrap.servers", "kafka.bootstrap.servers", "bootstrapservers"):
        if opts.get(key):
            return opts[key]
    raise ValueError("asyncbroker needs option bootstrap.servers")


def _client_conf(opts: Mapping[str, str]) -> dict[str, Any]:
    """librdkafka settings passed through as `kafka.<key>` options."""
    return {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.") and k != "kafka.bootstrap.servers"}


class TopicPartitionRange(InputPartition):
    """Offsets [start, end) of one topic partition: one task."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end


class _BrokerOffsets:
    """Driver-side metadata and ListOffsets through one long-lived consumer."""

    def __init__(self, bootstrap: str, conf: Mapping[str, Any], timeout: float) -> None:
        from confluent_kafka import Consumer

        self.timeout = timeout
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": f"asyncbroker-spark-driver-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            **conf,
        })

    def partitions(self, topics: Sequence[str]) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        for topic in topics:
            meta = self.consumer.list_topics(topic, timeout=self.timeout)
            info = meta.topics.get(topic)
            if info is None or info.error is not None:
                continue  # not created yet: no partitions to read
            out += [(topic, p) for p in sorted(info.partitions)]
        return out

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        from confluent_kafka import TopicPartition

        low, high = self.consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=self.timeout,
                                                        cached=False)
        return int(low), int(high)

    def close(self) -> None:
        self.consumer.close()


def _parse_starting(raw: str | None) -> str | Offsets:
    text = (raw or "earliest").strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    parsed = json.loads(text)
    return {str(t): {str(p): int(o) for p, o in parts.items()} for t, parts in parsed.items()}


class AsyncBrokerStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        opts = _options(options)
        self.bootstrap = _bootstrap(opts)
        topics = opts.get("subscribe") or opts.get("topics") or opts.get("topic")
        if not topics:
            raise ValueError("asyncbroker source needs option subscribe (comma-separated topics)")
        self.topics = [t.strip() for t in topics.split(",") if t.strip()]
        self.starting = _parse_starting(opts.get("startingoffsets"))
        self.max_offsets = int(opts["maxoffsetspertrigger"]) if opts.get("maxoffsetspertrigger") else None
        self.timeout = float(opts.get("timeoutseconds") or 30)
        self.conf = _client_conf(opts)
        self.schema = schema
        self._target: Offsets | None = None  # Trigger.AvailableNow's pinned end
        self._driver: _BrokerOffsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_driver"] = None  # the driver's client never travels to the tasks
        return state

    # -- driver side --------------------------------------------------------------------------
    def _offsets(self) -> _BrokerOffsets:
        if self._driver is None:
            self._driver = _BrokerOffsets(self.bootstrap, self.conf, self.timeout)
        return self._driver

    def _current(self, which: str) -> Offsets:
        client = self._offsets()
        out: Offsets = {}
        for topic, partition in client.partitions(self.topics):
            low, high = client.watermarks(topic, partition)
            out.setdefault(topic, {})[str(partition)] = low if which == "earliest" else high
        return out

    def initialOffset(self) -> dict:
        if isinstance(self.starting, str):
            return self._current(self.starting)
        earliest = self._current("earliest")
        for topic, parts in self.starting.items():
            for p, offset in parts.items():
                if offset >= 0:
                    earliest.setdefault(topic, {})[p] = offset
                elif offset == -1:  # Spark's Kafka spelling of latest
                    earliest.setdefault(topic, {})[p] = self._offsets().watermarks(topic, int(p))[1]
        return earliest

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_offsets) if self.max_offsets else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._current("latest")

    def reportLatestOffset(self) -> dict | None:
        return self._current("latest")

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        latest = self._target if self._target is not None else self._current("latest")
        earliest_now: Offsets | None = None
        begin: Offsets = {t: dict(ps) for t, ps in start.items()}
        for topic, parts in latest.items():
            for p in parts:
                if p not in begin.get(topic, {}):
                    # a partition that appeared after the query started is read from its beginning
                    earliest_now = earliest_now or self._current("earliest")
                    begin.setdefault(topic, {})[p] = earliest_now.get(topic, {}).get(p, 0)
        end: Offsets = {}
        backlog: dict[tuple[str, str], int] = {}
        for topic, parts in begin.items():
            for p, s in parts.items():
                e = max(latest.get(topic, {}).get(p, s), s)
                end.setdefault(topic, {})[p] = e
                backlog[(topic, p)] = e - s
        if isinstance(limit, ReadMaxRows):
            total = sum(backlog.values())
            if total > limit.max_rows:
                for (topic, p), n in backlog.items():
                    share = (n * limit.max_rows) // total
                    if n and share == 0:
                        share = 1  # every partition with a backlog makes progress
                    end[topic][p] = begin[topic][p] + min(n, share)
        return end

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        out: list[InputPartition] = []
        for topic, parts in sorted(end.items()):
            for p, e in sorted(parts.items(), key=lambda kv: int(kv[0])):
                s = start.get(topic, {}).get(p)
                if s is None:
                    s = 0
                if e > s:
                    out.append(TopicPartitionRange(topic, int(p), int(s), int(e)))
        return out

    def commit(self, end: dict) -> None:
        """Nothing to do: the query's checkpoint is the only record of progress."""

    def stop(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    # -- task side ----------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[tuple]:
        assert isinstance(partition, TopicPartitionRange)
        yield from fetch_range(self.bootstrap, self.conf, partition, [f.name for f in self.schema.fields],
                               self.timeout)


def fetch_range(bootstrap: str, conf: Mapping[str, Any], rng: TopicPartitionRange, columns: Sequence[str],
                timeout: float) -> Iterator[tuple]:
    """Rows of offsets [rng.start, rng.end) of one partition, fetched over the Kafka protocol."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"asyncbroker-spark-task-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "fetch.wait.max.ms": 100,
        **conf,
    })
    try:
        consumer.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
        deadline = time.monotonic() + timeout
        last_wanted = rng.end - 1
        while True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"fetching {rng.topic}-{rng.partition} [{rng.start}, {rng.end}) took over {timeout}s")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    if msg.offset() >= rng.end:
                        return  # everything below end has been seen (the rest were gaps)
                    continue
                raise KafkaException(err)
            offset = msg.offset()
            if offset >= rng.end:
                return
            deadline = time.monotonic() + timeout  # progress: reset the stall deadline
            yield _row(msg, columns)
            if offset >= last_wanted:
                return
    finally:
        consumer.close()


def _row(msg: Any, columns: Sequence[str]) -> tuple:
    ts_type, ts = msg.timestamp()
    values = {
        "topic": msg.topic(),
        "partition": msg.partition(),
        "offset": msg.offset(),
        "timestamp": _EPOCH + dt.timedelta(milliseconds=ts),
        "timestamp_type": 1 if ts_type == 2 else 0,  # librdkafka: 1 CreateTime, 2 LogAppendTime
        "key": msg.key(),
        "value": msg.value(),
        "headers": msg.headers() or None,  # null when none, as in kafka-log
    }
    return tuple(values[c] for c in columns)


# -- sink ---------------------------------------------------------------------------------------


class ProducedCount(WriterCommitMessage):
    def __init__(self, records: int) -> None:
        self.records = records


def produce_rows(bootstrap: str, conf: Mapping[str, Any], default_topic: str | None, rows: Iterator[Any],
                 timeout: float) -> int:
    """Produce every row and wait for the acks.

    Columns: `value` (binary or string), optional `key`, `headers`
    (array of (key, value)), `topic` (else the `topic` option) and `partition`
    (else librdkafka's partitioner hashes the key).
    """
    from confluent_kafka import KafkaException, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", **conf})
    failures: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(err)

    count = 0
    for row in rows:
        data = row.asDict() if hasattr(row, "asDict") else dict(row)
        topic = data.get("topic") or default_topic
        if not topic:
            raise ValueError("asyncbroker sink needs option topic or a topic column")
        kwargs: dict[str, Any] = {"value": _as_bytes(data.get("value")), "key": _as_bytes(data.get("key"))}
        if data.get("partition") is not None:
            kwargs["partition"] = int(data["partition"])
        headers = data.get("headers")
        if headers:
            kwargs["headers"] = [(h["key"] if isinstance(h, dict) else h[0],
                                  h["value"] if isinstance(h, dict) else h[1]) for h in headers]
        while True:
            try:
                producer.produce(topic, on_delivery=on_delivery, **kwargs)
                break
            except BufferError:
                producer.poll(0.1)  # local queue full: let deliveries drain
        count += 1
        producer.poll(0)
    remaining = producer.flush(timeout)
    if remaining:
        raise TimeoutError(f"{remaining} records were not acknowledged within {timeout}s")
    if failures:
        raise KafkaException(failures[0])
    return count


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return str(value).encode("utf-8")


class _SinkOptions:
    def __init__(self, options: Mapping[str, str]) -> None:
        opts = _options(options)
        self.bootstrap = _bootstrap(opts)
        self.topic = opts.get("topic")
        self.timeout = float(opts.get("timeoutseconds") or 60)
        self.conf = _client_conf(opts)


class _RowSinkWriter:
    """What the streaming and the batch writer share: a value column is required, and each
    task produces its rows and reports how many were acknowledged."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        if "value" not in schema.names:
            raise ValueError("asyncbroker sink needs a value column")
        self.sink = _SinkOptions(options)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        s = self.sink
        return ProducedCount(produce_rows(s.bootstrap, s.conf, s.topic, iterator, s.timeout))


class AsyncBrokerStreamWriter(_RowSinkWriter, DataSourceStreamWriter):
    """At-least-once: a replayed micro-batch is produced again."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Every task flushed and saw its acks before returning: nothing left to do."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Produced records cannot be taken back; the replay re-produces the batch."""


class AsyncBrokerBatchWriter(_RowSinkWriter, DataSourceWriter):
    """Produces the DataFrame's rows (see _RowSinkWriter)."""


class AsyncBrokerBatchReader(DataSourceReader):
    """Batch read of everything currently in the topics (earliest to latest)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.stream = AsyncBrokerStreamReader(options, schema)

    def partitions(self) -> Sequence[InputPartition]:
        s = self.stream
        start = s.initialOffset()
        end = s.latestOffset(start, ReadAllAvailable())
        s.stop()
        return s.partitions(start, end)

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        if not isinstance(partition, TopicPartitionRange):
            return
        yield from self.stream.read(partition)


class AsyncBrokerDataSource(DataSource):
    """Kafka-protocol source and sink (format name `asyncbroker`)."""

    @classmethod
    def name(cls) -> str:
        return "asyncbroker"

    def schema(self) -> StructType:
        return STREAM_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return AsyncBrokerStreamReader(self.options, schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        return AsyncBrokerBatchReader(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return AsyncBrokerStreamWriter(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return AsyncBrokerBatchWriter(self.options, schema)

