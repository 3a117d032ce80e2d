"""Differential scenarios: Produce (v3-12), compared with Kafka 4.4 field by field.

Each scenario produces, then reads back what the log kept (Fetch, ListOffsets), so a
difference in what was appended shows even when the Produce answers agree.
"""

from __future__ import annotations

import struct

import pytest

from data_steps import (
    fetch_topics,
    init_producer_id,
    learn_producer_id,
    list_offsets_topics,
    produce,
    produce_request,
    produce_topics,
    produce_unanswered,
    with_crc_broken,
    with_magic,
)
from differential import BASE_TIMESTAMP, ScenarioRun, batch
from steps import PRODUCE, create_topic, metadata
from wire.records import ATTRIBUTES_OFFSET, CompressionType, compute_crc

pytestmark = pytest.mark.timeout(180)

HOUR_MS = 3_600_000
FIND_COORDINATOR = 10


def patched(records: bytes, offset: int, fmt: str, value: int, *, fix_crc: bool = True) -> bytes:
    """`records` with one header field overwritten (and the CRC made right again)."""
    out = bytearray(records)
    struct.pack_into(fmt, out, offset, value)
    if fix_crc:
        (length,) = struct.unpack_from(">i", out, 8)
        struct.pack_into(">I", out, 17, compute_crc(out, 0, length))
    return bytes(out)


def with_attributes(records: bytes, attributes: int) -> bytes:
    return patched(records, ATTRIBUTES_OFFSET, ">h", attributes)


# -- acks ------------------------------------------------------------------------------


@pytest.mark.parametrize("acks", [1, -1])
def test_acks_one_and_all_answer_after_the_append(brokers, acks: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=1, record=False)
        produce(run, "t", {0: batch(3)}, acks=acks)
        produce(run, "t", {0: batch(2, compression=CompressionType.LZ4)}, acks=acks)
        fetch_topics(run, {"t": {0: 0}})
    brokers.compare(scenario)


def test_acks_zero_gets_no_answer_and_the_connection_goes_on(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, record=False)
        produce_unanswered(run, {"t": {0: batch(2), 1: batch(1)}})
        # The next request on the same connection gets the next answer: nothing was sent for acks=0.
        produce(run, "t", {0: batch(1)}, acks=1, label="next request on the connection")
        fetch_topics(run, {"t": {0: 0, 1: 0}})
    brokers.compare(scenario)


def test_acks_zero_failure_closes_the_connection(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=1, record=False)
        produce_unanswered(run, {"t": {0: batch(1), 5: batch(1)}})
        run.note("connection closed after an unknown partition", run.conn.closed_by_peer(10))
        conn = run.connect()
        produce_unanswered(run, {"t": {0: with_crc_broken(batch(2))}}, conn=conn)
        run.note("connection closed after a corrupt batch", conn.closed_by_peer(10))
        run.conn = run.connect()
        list_offsets_topics(run, {"t": [(0, -1)]}, label="what was appended")
    brokers.compare(scenario)


def test_invalid_acks(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, record=False)
        for acks in (2, -2, 5):
            produce(run, "t", {0: batch(1), 1: batch(1)}, acks=acks, label=f"acks {acks}")
        # Unknown partitions and invalid records are answered before acks are looked at.
        produce_topics(run, {"t": {0: batch(1), 1: b"", 9: batch(1)}, "missing": {0: batch(1)}}, acks=2,
                       label="acks 2 with other errors")
        fetch_topics(run, {"t": {0: 0, 1: 0}}, label="nothing appended")
    brokers.compare(scenario)


# -- codecs and shapes -----------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name.lower())
def test_each_codec_with_headers_and_nulls(brokers, codec: CompressionType) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=1, record=False)
        produce(run, "t", {0: batch([(b"k", b"v"), (None, b"no key"), (b"no value", None), (None, None)],
                                    compression=codec, headers=(("h1", b"x"), ("h2", None)))})
        produce(run, "t", {0: batch(50, compression=codec, value_size=100)})
        fetch_topics(run, {"t": {0: 0}})
        fetch_topics(run, {"t": {0: 2}}, label="fetch inside the first batch")
        list_offsets_topics(run, {"t": [(0, -3), (0, BASE_TIMESTAMP + 10)]})
    brokers.compare(scenario)


@pytest.mark.parametrize("version", [3, 6, 7, 8])
def test_zstd_needs_version_7(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, record=False)
        produce(run, "t", {0: batch(2, compression=CompressionType.ZSTD), 1: batch(2, compression=CompressionType.GZIP)},
                version=version)
        fetch_topics(run, {"t": {0: 0, 1: 0}})
    brokers.compare(scenario)


def test_several_topics_and_partitions_in_one_request(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "a", partitions=3, record=False)
        create_topic(run, "b", partitions=2, record=False)
        produce_topics(run, {"a": {0: batch(1), 1: batch(2), 2: batch(3, compression=CompressionType.SNAPPY)},
                             "b": {1: batch(4), 0: batch(5)}})
        produce_topics(run, {"b": {0: batch(1)}, "a": {2: batch(1)}})
        fetch_topics(run, {"a": {0: 0, 1: 0, 2: 0}, "b": {0: 0, 1: 0}})
    brokers.compare(scenario)


def test_one_partition_named_twice_in_one_request(brokers) -> None:  # type: ignore[no-untyped-def]
    """Kafka keys a Produce by partition: one answer, the later entry's records."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=1, record=False)
        produce(run, "t", {0: batch(1)}, record=False)
        produce_topics(run, {"t": {0: batch(2)}}, label="single entry")
        request = produce_request(run, {"t": {0: batch([(b"first", b"1")])}})
        # A second entry for the same topic and partition, carrying other records.
        second = produce_request(run, {"t": {0: batch([(b"second", b"2"), (b"second", b"3")])}})
        request = type(request)(transactional_id=None, acks=-1, timeout=request.timeout,
                                topic_data=request.topic_data + second.topic_data)
        run.send(request, label="same partition twice")
        fetch_topics(run, {"t": {0: 0}})
    brokers.compare(scenario)


def test_unknown_tagged_fields_are_skipped(brokers) -> None:  # type: ignore[no-untyped-def]
    """Produce v9+ defines no tagged fields; Kafka's readers skip the ones a client sends, on
    the partition, the topic and the request, and append the records. A body that ends inside
    a tagged field closes the connection."""
    def body(name: str, records: bytes, *, cut: int = 0) -> bytes:
        encoded = name.encode()
        out = (b"\x00" + struct.pack(">hi", -1, 30_000)  # null transactional id, acks, timeout
               + b"\x02" + bytes([len(encoded) + 1]) + encoded
               + b"\x02" + struct.pack(">i", 0) + bytes([len(records) + 1]) + records
               + b"\x01\x07\x03abc"  # the partition's tagged fields: tag 7, 3 bytes
               + b"\x02\x08\x00\x09\x01\xff"  # the topic's: tags 8 and 9
               + b"\x01\x0a\x02zz")  # the request's: tag 10
        return out[: len(out) - cut]

    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=1, record=False)
        records = batch(2)
        assert len(records) < 127  # one-byte compact lengths above
        cid = run.conn.send_raw(PRODUCE, 9, body(run.topic("t"), records))
        run.record("Produce v9 with unknown tagged fields", None, run.conn.receive(PRODUCE, 9, cid))
        fetch_topics(run, {"t": {0: 0}})
        conn = run.connect()
        conn.send_raw(PRODUCE, 9, body(run.topic("t"), records, cut=1))
        run.note("connection closed after a body cut inside a tagged field", conn.closed_by_peer(10))
    brokers.compare(scenario)


# -- sizes -----------------------------------------------------------------------------


def test_batch_over_the_topic_max_message_bytes(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, configs={"max.message.bytes": "300"}, record=False)
        produce(run, "t", {0: batch(2), 1: batch(20, value_size=30)})
        produce(run, "t", {0: batch(20, value_size=30, compression=CompressionType.GZIP)}, label="compressed below")
        produce(run, "t", {1: batch(20, value_size=30)}, version=7, label="v7")
        fetch_topics(run, {"t": {0: 0, 1: 0}})
    brokers.compare(scenario)


def test_batch_over_the_broker_message_max_bytes(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=1, record=False)
        produce(run, "t", {0: batch(1, value_size=1_048_576)}, label="just over message.max.bytes")
        produce(run, "t", {0: batch(1, value_size=1_048_500)}, label="just under")
        list_offsets_topics(run, {"t": [(0, -1)]})
    brokers.compare(scenario)


# -- malformed records -----------------------------------------------------------------


def test_corrupt_crc(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, record=False)
        produce(run, "t", {0: with_crc_broken(batch(3)), 1: batch(1)})
        produce(run, "t", {0: with_crc_broken(batch(3, compression=CompressionType.ZSTD))}, label="compressed")
        fetch_topics(run, {"t": {0: 0, 1: 0}})
    brokers.compare(scenario)


@pytest.mark.parametrize("magic", [0, 1, 3, -1])
def test_wrong_magic(brokers, magic: int) -> None:  # type: ignore[no-untyped-def]
    """Magic 0/1 fail the partition (only v2 batches from Produce v3); a magic Kafka cannot
    frame at all fails the whole request, with the framing error's message."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, record=False)
        produce(run, "t", {0: with_magic(batch(3), magic & 0xFF), 1: batch(1)})
        fetch_topics(run, {"t": {0: 0, 1: 0}})
    brokers.compare(scenario)


def test_record_framing(brokers) -> None:  # type: ignore[no-untyped-def]
    """How Kafka frames a records field: partial trailing bytes are dropped, a size below any
    message fails the request, more than one batch fails the partition."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, record=False)
        good = batch(3)
        cases = {
            "two batches": good + batch(2),
            "truncated batch": good[:-5],
            "fewer bytes than a batch header": good[:30],
            "ten zero bytes": b"\x00" * 10,
            "two stray bytes after the batch": good + b"\x00\x00",
            "a partial second batch": good + good[:30],
            "a second batch of size 0": good + b"\x00" * 20,
            "a first batch of size 0": b"\x00" * 20,
            "empty records": b"",
        }
        for label, records in cases.items():
            produce(run, "t", {0: records, 1: batch(1)}, label=label)
        fetch_topics(run, {"t": {0: 0, 1: 0}})
    brokers.compare(scenario)


def test_batch_header_rules(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, record=False)
        good = batch(3)
        cases = {
            "base offset 5": patched(good, 0, ">q", 5),
            "last offset delta 5 for 3 records": patched(good, 23, ">i", 5),
            "records count 0": patched(good, 57, ">i", 0),
            "unknown codec id 5": with_attributes(good, 5),
            "control batch": with_attributes(good, 0x20),
            "producer id without a sequence": patched(good, 43, ">q", 7),
        }
        for label, records in cases.items():
            produce(run, "t", {0: records, 1: batch(1)}, label=label)
        for version in (3, 6):
            produce(run, "t", {0: with_attributes(good, 5), 1: batch(1)}, version=version,
                    label=f"unknown codec id 5, v{version}")
        fetch_topics(run, {"t": {0: 0, 1: 0}})
    brokers.compare(scenario)


def test_transactional_batch_without_transactional_id(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, record=False)
        producer_id = 7
        learn_producer_id(run, producer_id)
        produce(run, "t", {0: batch(1), 1: batch(3, producer_id=producer_id, producer_epoch=0, base_sequence=0,
                                                  transactional=True)})
        fetch_topics(run, {"t": {0: 0, 1: 0}})
    brokers.compare(scenario)


# -- timestamps ------------------------------------------------------------------------


def test_timestamps_before_the_allowed_window(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=3, configs={"message.timestamp.before.max.ms": str(HOUR_MS)},
                     record=False)
        old = BASE_TIMESTAMP - 10 * HOUR_MS
        produce(run, "t", {0: batch(3, base_timestamp=old),
                           1: batch(3, base_timestamp=BASE_TIMESTAMP - 3 * HOUR_MS, timestamp_step=2 * HOUR_MS),
                           2: batch(2, base_timestamp=old, compression=CompressionType.GZIP)})
        produce(run, "t", {0: batch(3, base_timestamp=old)}, version=7, label="v7")
        produce(run, "t", {0: batch([(b"k", b"v")], base_timestamp=-1)}, label="no timestamp")
        fetch_topics(run, {"t": {0: 0, 1: 0, 2: 0}})
    brokers.compare(scenario)


def test_timestamps_after_the_allowed_window(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, configs={"message.timestamp.after.max.ms": str(HOUR_MS)}, record=False)
        future = BASE_TIMESTAMP + 10 * HOUR_MS
        produce(run, "t", {0: batch(3, base_timestamp=future), 1: batch(2, base_timestamp=future,
                                                                     compression=CompressionType.SNAPPY)})
        # Only the last record is in the future: only it is listed, and the batch fails with it.
        produce(run, "t", {0: batch(2, base_timestamp=BASE_TIMESTAMP, timestamp_step=6 * HOUR_MS)},
                label="last record in the future")
        fetch_topics(run, {"t": {0: 0, 1: 0}})
    brokers.compare(scenario)


def test_log_append_time_topic(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "l", partitions=1, configs={"message.timestamp.type": "LogAppendTime",
                                                      "message.timestamp.before.max.ms": "1000"}, record=False)
        # Out of the window but never checked: the broker stamps the batch.
        produce(run, "l", {0: batch(3, base_timestamp=BASE_TIMESTAMP - 10 * HOUR_MS)})
        produce(run, "l", {0: batch(2, compression=CompressionType.LZ4)})
        fetch_topics(run, {"l": {0: 0}})
        list_offsets_topics(run, {"l": [(0, -1)]})
        list_offsets_topics(run, {"l": [(0, -2)]})
    brokers.compare(scenario)


def test_log_append_time_claimed_by_the_producer(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "l", partitions=1, configs={"message.timestamp.type": "LogAppendTime"}, record=False)
        create_topic(run, "c", partitions=1, record=False)
        records = [(b"k", b"v"), (None, None)]
        produce(run, "l", {0: with_attributes(batch(records), 0x08)}, label="LogAppendTime topic")
        produce(run, "l", {0: with_attributes(batch(records, compression=CompressionType.GZIP), 0x09)},
                label="LogAppendTime topic, compressed")
        produce(run, "c", {0: with_attributes(batch(records), 0x08)}, label="CreateTime topic")
        fetch_topics(run, {"l": {0: 0}, "c": {0: 0}})
    brokers.compare(scenario)


# -- compacted topics ------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 7, 8, 12])
def test_keyless_records_on_a_compacted_topic(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "c", partitions=1, configs={"cleanup.policy": "compact"}, record=False)
        produce(run, "c", {0: batch([(b"k", b"1"), (None, b"2"), (b"k2", b"3"), (None, None)])}, version=version)
        produce(run, "c", {0: batch([(None, b"2")] * 5, compression=CompressionType.GZIP)}, version=version,
                label="compressed, five keyless")
        produce(run, "c", {0: batch([(b"k", b"1"), (b"k", None)])}, version=version, label="keyed")
        fetch_topics(run, {"c": {0: 0}})
    brokers.compare(scenario)


# -- idempotence -----------------------------------------------------------------------


def test_idempotent_duplicates_and_sequence_gaps(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=1, record=False)
        pid, epoch = init_producer_id(run)
        first = batch(3, producer_id=pid, producer_epoch=epoch, base_sequence=0)
        produce(run, "t", {0: first}, label="sequence 0")
        produce(run, "t", {0: first}, label="the same batch again")
        produce(run, "t", {0: batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=3)}, label="sequence 3")
        produce(run, "t", {0: first}, label="an older batch again")
        produce(run, "t", {0: batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=9)}, label="a gap")
        produce(run, "t", {0: batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=4)}, label="an overlap")
        produce(run, "t", {0: batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=5)}, label="next in line")
        fetch_topics(run, {"t": {0: 0}})
    brokers.compare(scenario)


def test_idempotent_epochs_and_unknown_producers(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, record=False)
        pid, epoch = init_producer_id(run)
        produce(run, "t", {0: batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=0)})
        produce(run, "t", {0: batch(2, producer_id=pid, producer_epoch=epoch + 1, base_sequence=0)},
                label="a bumped epoch from sequence 0")
        produce(run, "t", {0: batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=2)}, label="a fenced epoch")
        produce(run, "t", {0: batch(2, producer_id=pid, producer_epoch=epoch + 2, base_sequence=5)},
                label="a new epoch not from sequence 0")
        produce(run, "t", {1: batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=5)},
                label="a partition first written at sequence 5")
        # Producer ids nobody handed out (still relative to this broker's own, so comparable).
        stranger = pid + 100_000
        learn_producer_id(run, stranger)
        learn_producer_id(run, stranger + 1)
        produce(run, "t", {1: batch(2, producer_id=stranger, producer_epoch=0, base_sequence=0)},
                label="unknown producer at sequence 0")
        produce(run, "t", {1: batch(2, producer_id=stranger + 1, producer_epoch=3, base_sequence=8)},
                label="unknown producer at sequence 8")
        fetch_topics(run, {"t": {0: 0, 1: 0}})
    brokers.compare(scenario)


# -- topics and partitions -------------------------------------------------------------


def test_unknown_topic_is_not_created_by_produce(brokers) -> None:  # type: ignore[no-untyped-def]
    """auto.create.topics.enable=true on both brokers: Produce still never creates a topic
    (clients create them through Metadata)."""
    def scenario(run: ScenarioRun) -> None:
        produce(run, "missing", {0: batch(1)})
        produce(run, "missing", {0: batch(1)}, acks=1, version=3)
        metadata(run, ["missing"])
    brokers.compare(scenario)


def test_unknown_partition(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, record=False)
        produce(run, "t", {0: batch(1), 2: batch(1), -1: batch(1)})
        fetch_topics(run, {"t": {0: 0, 1: 0}})
    brokers.compare(scenario)


def test_invalid_topic_names(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        produce_topics(run, {"bad/name": {0: batch(1)}, "": {0: batch(1)}, "a" * 250: {0: batch(1)},
                             "..": {0: batch(1)}}, raw_names=True)
    brokers.compare(scenario)


def test_internal_topics(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        # A group coordinator makes __consumer_offsets exist on both brokers.
        def coordinator() -> bool:
            answer = run.call(FIND_COORDINATOR, 4, _record=False, key_type=0, coordinator_keys=(run.group("g"),))
            return answer.coordinators[0].error_code.value == 0
        run.wait_until(coordinator, "a group coordinator")
        produce_topics(run, {"__consumer_offsets": {0: batch(1), 99: batch(1)}, "__cluster_metadata": {0: batch(1)}},
                       raw_names=True)
    brokers.compare(scenario)


@pytest.mark.parametrize("version", range(3, 13))
def test_every_version_with_every_outcome(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """One request per version mixing success, an unknown partition, a record error and a
    size error, so every field of every version's answer is compared."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=3, configs={"cleanup.policy": "compact", "max.message.bytes": "400"},
                     record=False)
        produce(run, "t", {0: batch(3), 1: batch([(None, b"x"), (b"k", b"y")]), 2: batch(40, value_size=20),
                           3: batch(1)}, version=version)
        produce(run, "t", {0: batch(2, compression=CompressionType.GZIP)}, version=version)
        fetch_topics(run, {"t": {0: 0, 1: 0, 2: 0}})
    brokers.compare(scenario)
