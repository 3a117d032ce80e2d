"""Kafka's own `__transaction_state` decoder reads the records asyncbroker writes, and
asyncbroker's reads the records Kafka 4.4 writes.

DumpLogSegments --transaction-log-decoder prints each key and value through Kafka 4.4's
generated JSON converters; every field must come back as asyncbroker encoded it, in both
value versions, for every state, and a tombstone must read as a deletion.
"""
from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from asyncbroker.transaction_log import TransactionLogValue, TxnRecord, encode_key, encode_value, read
from asyncbroker.transaction_state import TransactionState
from jvm.kafka_jvm import KafkaServer, dump_log_segments
from storage.clock import MockClock
from storage.log import Log
from storage.log_config import LogConfig
from storage.topic_partition import TopicPartition
from wire.records import Record, build_batch, decode_records, iter_batch_headers

pytestmark = pytest.mark.timeout(300)

_LINE = re.compile(r"^\| offset: (\d+) .* key: (\{.*\}) payload: (.*)$")


def _written() -> list[tuple[str, int | None, TransactionLogValue | None]]:
    rows: list[tuple[str, int | None, TransactionLogValue | None]] = []
    for i, state in enumerate(TransactionState):
        partitions = () if state == TransactionState.EMPTY else (
            TopicPartition("orders", 0), TopicPartition("payments", 2), TopicPartition("orders", 3))
        rows.append((f"txn-{i}-v0", 0, TransactionLogValue(1000 + i, i, 60_000, state, partitions, 1_700_000_000_500 + i,
                                                          1_700_000_000_000 + i)))
        rows.append((f"txn-{i}-v1", 1, TransactionLogValue(
            2000 + i, i, 900_000, state, partitions, 1_700_000_001_500 + i, 1_700_000_001_000 + i,
            previous_producer_id=1999 + i, next_producer_id=2001 + i if i % 2 else -1,
            next_producer_epoch=0 if i % 2 else -1, client_transaction_version=2 if i % 3 else 0)))
    rows.append(("txn-0-v0", None, None))
    return rows


def _expected_json(version: int, value: TransactionLogValue) -> dict[str, object]:
    data: dict[str, object] = {"producerId": value.producer_id}
    groups: dict[str, list[int]] = {}
    for tp in value.partitions:
        groups.setdefault(tp.topic, []).append(tp.partition)
    if version >= 1 and value.previous_producer_id != -1:
        data["previousProducerId"] = value.previous_producer_id
    if version >= 1 and value.next_producer_id != -1:
        data["nextProducerId"] = value.next_producer_id
    data["producerEpoch"] = value.producer_epoch
    if version >= 1 and value.next_producer_epoch != -1:
        data["nextProducerEpoch"] = value.next_producer_epoch
    data.update({
        "transactionTimeoutMs": value.transaction_timeout_ms,
        # Kafka 4.4's decoder names the state (4.3 printed its id).
        "transactionStatus": value.state.state_name,
        "transactionPartitions": None if value.state == TransactionState.EMPTY else [
            {"topic": t, "partitionIds": p} for t, p in groups.items()],
        "transactionLastUpdateTimestampMs": value.last_update_timestamp_ms,
        "transactionStartTimestampMs": value.start_timestamp_ms,
    })
    if version >= 1 and value.client_transaction_version != 0:
        data["clientTransactionVersion"] = value.client_transaction_version
    return {"version": str(version), "data": data}


def test_kafka_decodes_every_record_asyncbroker_writes(tmp_path: Path) -> None:
    rows = _written()
    log = Log.open(tmp_path / "__transaction_state-0", LogConfig(), clock=MockClock(1_700_000_000_000))
    try:
        for txn_id, version, value in rows:
            encoded = None if value is None or version is None else encode_value(value, version)
            log.append_as_leader(build_batch(
                [Record(offset=0, timestamp=1_700_000_000_000, key=encode_key(txn_id), value=encoded)]))
        segment = tmp_path / "__transaction_state-0" / "00000000000000000000.log"
    finally:
        log.close()
    output = dump_log_segments([segment], ["--transaction-log-decoder", "--print-data-log"])
    decoded = [m.groups() for m in map(_LINE.match, output.splitlines()) if m]
    assert len(decoded) == len(rows), output
    for (offset, key, payload), (txn_id, version, value) in zip(decoded, rows):
        assert json.loads(key) == {"type": "0", "data": {"transactionalId": txn_id}}, offset
        if value is None or version is None:
            assert payload == "<DELETE>", offset
            continue
        got = json.loads(payload)
        # Kafka's converter prints fields in schema order; the partition groups' order is ours.
        assert got == _expected_json(version, value), (offset, payload)
        assert list(got["data"]) == list(_expected_json(version, value)["data"]), (offset, payload)


# -- the other way: what Kafka 4.4 writes, asyncbroker reads ---------------------------------


def _kafka_records(log_dir: Path, transactional_id: str) -> list[TransactionLogValue]:
    """Every value Kafka wrote for `transactional_id`, in log order (one partition holds an id)."""
    found: list[TransactionLogValue] = []
    for partition_dir in sorted(log_dir.glob("__transaction_state-*")):
        for segment in sorted(partition_dir.glob("*.log")):
            data = segment.read_bytes()
            for position in iter_batch_headers(data):
                for record in decode_records(data, position.position):
                    if record.key is None:
                        continue
                    got = read(record.key, record.value)
                    if isinstance(got, TxnRecord) and got.transactional_id == transactional_id:
                        found.append(got.value)
    return found


def test_asyncbroker_reads_what_kafka_writes(kafka: KafkaServer) -> None:
    topic = f"txn-log-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        future.result(30)
    transactional_id = f"reads-kafka-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, b"a", partition=0)
    producer.produce(topic, b"b", partition=1)
    producer.commit_transaction(60)
    # CompleteCommit is written after the markers, a moment after the client's EndTxn answer.
    deadline = time.monotonic() + 30
    values = _kafka_records(kafka.log_dir, transactional_id)
    while (not values or values[-1].state != TransactionState.COMPLETE_COMMIT) and time.monotonic() < deadline:
        time.sleep(0.05)
        values = _kafka_records(kafka.log_dir, transactional_id)
    assert [v.state for v in values] == [TransactionState.EMPTY, TransactionState.ONGOING,
                                         TransactionState.PREPARE_COMMIT, TransactionState.COMPLETE_COMMIT]
    assert len({(v.producer_id, v.transaction_timeout_ms) for v in values}) == 1
    assert set(values[1].partitions) == set(values[2].partitions) == {TopicPartition(topic, 0),
                                                                      TopicPartition(topic, 1)}
    assert values[0].partitions == values[3].partitions == ()
    assert values[0].start_timestamp_ms == -1 and values[1].start_timestamp_ms == values[2].start_timestamp_ms > 0
    assert values[3].last_update_timestamp_ms >= values[2].last_update_timestamp_ms
