"""Capture what Kafka 4.4 writes to __remote_log_metadata, into tests/unit/wire/ (run by hand).

    PYTHONPATH=. .venv/bin/python tests/jvm/capture_remote_log_metadata.py [output.json]

Starts a Kafka 4.4 with tiered storage (kafka_jvm.KafkaServer(tiered_storage=True): the
topic-based metadata manager, the rsm module's directory tier) and makes it write every kind of
record value its metadata manager has:

- RemoteLogSegmentMetadataRecord (COPY_SEGMENT_STARTED) for each segment copied: with an
  empty transaction index and with one (an aborted transaction), with one leader epoch and with
  two (the broker is restarted between two produces: its partitions' leader epoch goes up);
- RemoteLogSegmentMetadataUpdateRecord: COPY_SEGMENT_FINISHED, and DELETE_SEGMENT_STARTED /
  DELETE_SEGMENT_FINISHED (DeleteRecords past a remote segment);
- RemotePartitionDeleteMetadataRecord: DELETE_PARTITION_MARKED / STARTED / FINISHED (a tiered
  topic deleted).

Then it stops Kafka, reads the metadata topic's segment files (wire.records) and Kafka's own
decoding of them (DumpLogSegments --remote-log-metadata-decoder), checks which partition each
topic-partition's records went to against the partitioner (metadata_partition(): murmur2 of the
4 bytes of a hash of the topic id's halves and the partition, as RemoteLogMetadataTopicPartitioner
computes it), and writes a JSON file: the topic's
layout and configs, the assignments, one example of every (record type, state) with its value
in hex and Kafka's text, and each partition's sequence of records.
"""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
for p in (REPO, TESTS, TESTS / "oracle"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from differential import ScenarioRun, batch, run_scenario  # noqa: E402
from jvm.kafka_jvm import REMOTE_LOG_METADATA_TOPIC, KafkaServer, dump_log_segments  # noqa: E402
from wire.records import decode_records, iter_batch_headers  # noqa: E402

import test_tiered_storage as tiered  # noqa: E402
import txn_steps as ts  # noqa: E402
from admin_steps import TOPIC, describe_configs, delete_topics, metadata_topics  # noqa: E402
from logs_steps import delete_records, list_offset  # noqa: E402
from steps import create_topic, wait_for_leaders  # noqa: E402
from storage.partition_metadata import uuid_from_base64, uuid_to_base64  # noqa: E402

OUTPUT = TESTS / "unit" / "wire" / "kafka-4.4.0-remote-log-metadata.json"  # next to the wire tests
KAFKA_VERSION = "4.4.0"


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2 (the default partitioner's hash), as a signed 32-bit int."""
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ len(data)) & 0xFFFFFFFF
    n4 = len(data) // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = data[4 * n4:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if len(tail) >= 1:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def _int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def metadata_partition(topic_id: uuid.UUID, partition: int, partitions: int) -> int:
    """RemoteLogMetadataTopicPartitioner.metadataPartition (read from Kafka 4.4's bytecode): not a
    hash of TopicIdPartition.toString() but of 4 bytes, big-endian, of
    Objects.hash(topicId.getLeastSignificantBits(), topicId.getMostSignificantBits(), partition)
    (31 * h + Long.hashCode / Integer.hashCode from 1); then Utils.toPositive(Utils.murmur2(those
    bytes)) % partitions."""
    msb = int.from_bytes(topic_id.bytes[:8], "big")
    lsb = int.from_bytes(topic_id.bytes[8:], "big")
    h = 1
    for element in ((lsb ^ (lsb >> 32)) & 0xFFFFFFFF, (msb ^ (msb >> 32)) & 0xFFFFFFFF, partition):
        h = _int32(31 * h + _int32(element))
    return (murmur2((h & 0xFFFFFFFF).to_bytes(4, "big")) & 0x7FFFFFFF) % partitions


def main(output: Path) -> None:
    facts: dict[str, Any] = {}
    kafka = KafkaServer(tiered_storage=True, heap="512m")
    try:
        kafka.start()
        topic_ids: dict[str, str] = {}

        def first(run: ScenarioRun) -> None:
            # "orders": an aborted transaction first (a segment with a transaction index), then
            # 7 batches; partition 1 plain. "gone": tiered, then deleted.
            create_topic(run, "orders", 2, configs=tiered.TIERED, record=False)
            create_topic(run, "gone", configs=tiered.TIERED, record=False)
            ts.wait_for_coordinator(run)
            p = ts.init(run, "tx")
            aborted = batch(tiered.rows(0), base_timestamp=tiered.T0, producer_id=p.producer_id,
                            producer_epoch=p.producer_epoch, base_sequence=0, transactional=True)
            ts.send(run, "orders", 0, "tx", aborted, version=12)
            ts.end_txn(run, "tx", p.producer_id, p.producer_epoch, False)
            ts.wait_for_state(run, "tx", "CompleteAbort")
            tiered.produce_batches(run, "orders", range(1, 8), partition=0)  # remote: [0, 21) [21, 41) [41, 61)
            tiered.produce_batches(run, "orders", range(0, 5), partition=1)  # remote: [0, 20) [20, 40)
            tiered.produce_batches(run, "gone", range(0, 5))
            tiered.wait_tiered(run, "orders", 61, 0)
            tiered.wait_tiered(run, "orders", 40, 1)
            tiered.wait_tiered(run, "gone", 40, 0)
            for symbol in ("orders", "gone"):
                topic_ids[run.topic(symbol)] = uuid_to_base64(run.topic_id(symbol))
            facts["run"] = run.suffix

        run_scenario(first, "kafka", kafka.bootstrap)
        suffix = facts["run"]
        orders, gone = f"orders{suffix}", f"gone{suffix}"

        # A restart: the partitions' leader epoch goes from 0 to 1, so the next segment of
        # orders-1 holds two epochs.
        kafka.restart()

        def second(run: ScenarioRun) -> None:
            metadata_topics(run, ["orders", "gone"], record=False)  # learns their topic ids
            wait_for_leaders(run, "orders", 2)
            # orders-1: batch 4 (offsets 40..49, epoch 0) is still the active segment; batch 5 joins
            # it under epoch 1, then [60, 80) starts and [40, 60) is copied with both epochs.
            tiered.produce_batches(run, "orders", range(5, 8), partition=1)
            tiered.wait_tiered(run, "orders", 60, 1)
            # DeleteRecords past [0, 21) and [21, 41) of orders-0: their remote copies are deleted.
            delete_records(run, "orders", {0: 45}, record=False)
            run.wait_until(lambda: tiered.remote_starts(kafka.remote_dir, run, "orders", 0)[:1] == [41],
                           "remote segments of orders-0 below 41 deleted")
            assert list_offset(run, "orders", -2, 0) == 45
            configs = describe_configs(run, [(TOPIC, "=" + REMOTE_LOG_METADATA_TOPIC, None)], record=False)
            facts["configs"] = {c.name: c.value for c in configs.results[0].configs}
            facts["overrides"] = {c.name: c.value for c in configs.results[0].configs if int(c.config_source) == 1}
            t = metadata_topics(run, ["=" + REMOTE_LOG_METADATA_TOPIC], record=False).topics[0]
            facts["partitions"] = len(t.partitions)
            facts["is_internal"] = t.is_internal
            facts["replicas"] = sorted({len(p.replica_nodes) for p in t.partitions})
            delete_topics(run, ["gone"])

        run = ScenarioRun("kafka", kafka.bootstrap, suffix[1:])  # the same run id: the same topics
        try:
            second(run)
        finally:
            run.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(p.name.startswith(gone) for p in kafka.remote_dir.iterdir()
                                                  if any(p.iterdir())):
            time.sleep(0.2)  # the deleted topic's remote segments go, then DELETE_PARTITION_FINISHED
        time.sleep(2)
        code = kafka.shutdown()
        assert code in (0, 143), code

        records = read_metadata_topic(kafka.log_dir, facts["partitions"])
        write(output, facts, topic_ids, records)
    finally:
        kafka.stop()


_PAYLOAD = re.compile(r"^\| offset: (\d+) .*? payload: (.*)$")


def read_metadata_topic(log_dir: Path, partitions: int) -> list[dict[str, Any]]:
    """Every record of __remote_log_metadata: partition, offset, batch fields, value, and the
    payload as DumpLogSegments --remote-log-metadata-decoder prints it."""
    out: list[dict[str, Any]] = []
    for p in range(partitions):
        directory = log_dir / f"{REMOTE_LOG_METADATA_TOPIC}-{p}"
        files = sorted(directory.glob("*.log"))
        decoded: dict[int, str] = {}
        found = []
        for f in files:
            data = f.read_bytes()
            for b in iter_batch_headers(data):
                h = b.header
                for r in decode_records(data, b.position):
                    assert r.key is None and r.value is not None
                    found.append({"partition": p, "offset": r.offset, "timestamp": r.timestamp,
                                  "timestamp_type": int(h.timestamp_type), "producer_id": h.producer_id,
                                  "producer_epoch": h.producer_epoch, "base_sequence": h.base_sequence,
                                  "records_in_batch": h.records_count, "compression": int(h.attributes & 7),
                                  "value_hex": r.value.hex()})
        if found:
            text = dump_log_segments(files, ["--remote-log-metadata-decoder"])
            for line in text.splitlines():
                m = _PAYLOAD.match(line)
                if m:
                    decoded[int(m.group(1))] = m.group(2)
            for rec in found:
                rec["kafka"] = decoded[rec["offset"]]
            out.extend(found)
    return out


def kind(record: dict[str, Any]) -> tuple[int, str]:
    """(api key, state) of a record value: its frame is uvarint 1, api key, version 0."""
    value = bytes.fromhex(record["value_hex"])
    assert value[0] == 1 and value[2] == 0, value[:3]
    state = re.search(r"state=(\w+)", record["kafka"])
    return value[1], state.group(1) if state else "?"


def write(output: Path, facts: dict[str, Any], topic_ids: dict[str, str], records: list[dict[str, Any]]) -> None:
    partitions = facts["partitions"]
    assignments = []
    for name, tid in sorted(topic_ids.items()):
        for p in (0, 1) if name.startswith("orders") else (0,):
            key = f"{tid}:{name}-{p}"
            used = sorted({r["partition"] for r in records if key in r["kafka"]})
            expected = metadata_partition(uuid_from_base64(tid), p, partitions)
            assert used == [expected], (key, used, expected)
            assignments.append({"topic_id_partition": key, "metadata_partition": expected})
    examples: dict[tuple[int, str], dict[str, Any]] = {}
    for r in records:
        k = kind(r)
        if k != (0, "COPY_SEGMENT_STARTED"):
            examples.setdefault(k, r)
        # Three copies: a plain segment, one with a transaction index, one with two leader epochs.
        elif "txnIdxEmpty=false" in r["kafka"]:
            examples.setdefault((0, "COPY_SEGMENT_STARTED, txnIdxEmpty=false"), r)
        elif re.search(r"segmentLeaderEpochs=\{\d+=\d+, \d+=\d+\}", r["kafka"]):
            examples.setdefault((0, "COPY_SEGMENT_STARTED, two leader epochs"), r)
        else:
            examples.setdefault(k, r)
    expected = {(0, "COPY_SEGMENT_STARTED"), (0, "COPY_SEGMENT_STARTED, txnIdxEmpty=false"),
                (0, "COPY_SEGMENT_STARTED, two leader epochs"), (1, "COPY_SEGMENT_FINISHED"),
                (1, "DELETE_SEGMENT_STARTED"), (1, "DELETE_SEGMENT_FINISHED")}
    assert set(examples) == expected, sorted(examples)
    names = {0: "RemoteLogSegmentMetadataRecord", 1: "RemoteLogSegmentMetadataUpdateRecord",
             2: "RemotePartitionDeleteMetadataRecord"}
    sequences: dict[str, list[list[Any]]] = {}
    for r in records:
        tip = re.search(r"topicIdPartition=([^,}]+)", r["kafka"]).group(1)  # type: ignore[union-attr]
        start = re.search(r"startOffset=(\d+)", r["kafka"])
        segment = re.search(r"RemoteLogSegmentId\{topicIdPartition=[^,]+, id=([^}]+)\}", r["kafka"])
        sequences.setdefault(tip, []).append(
            [r["partition"], r["offset"], names[kind(r)[0]], kind(r)[1],
             segment.group(1) if segment else None, int(start.group(1)) if start else None])
    doc = {
        "kafka_version": KAFKA_VERSION,
        "captured_by": "tests/jvm/capture_remote_log_metadata.py (Kafka 4.4 with tiered storage, "
                       "kafka_jvm.tiered_storage_settings)",
        "value_format": "uvarint frame version 1, uvarint api key (0 segment metadata, 1 segment metadata "
                        "update, 2 partition delete), uvarint version 0, then the flexible message body "
                        "(Kafka's storage/src/main/resources/message/RemoteLog*Record.json)",
        "metadata_topic": {
            "name": REMOTE_LOG_METADATA_TOPIC, "partitions": partitions, "is_internal": facts["is_internal"],
            "replication_factor": facts["replicas"],
            "config_overrides": facts["overrides"],
            "note": "Created by the broker's TopicBasedRemoteLogMetadataManager at start: 50 partitions "
                    "(rlmm.config.remote.log.metadata.topic.num.partitions), replication factor from "
                    "rlmm.config.remote.log.metadata.topic.replication.factor (1 here), overrides "
                    "cleanup.policy=delete, retention.ms=-1 (remote.log.metadata.topic.retention.ms), "
                    "min.insync.replicas=2 (remote.log.metadata.topic.min.isr's default, set even with "
                    "one replica) and remote.storage.enable=false. Not flagged internal in Metadata.",
        },
        "partitioner": "RemoteLogMetadataTopicPartitioner: Utils.toPositive(Utils.murmur2(b)) % partitions, b "
                       "the 4 big-endian bytes of Objects.hash(topicId.getLeastSignificantBits(), "
                       "topicId.getMostSignificantBits(), partition) (NOT a hash of TopicIdPartition.toString()); "
                       "tests/jvm/capture_remote_log_metadata.py's metadata_partition() computes it and checked "
                       "every assignment below against where Kafka wrote",
        "assignments": assignments,
        "batches": "One record per batch, key null, value uncompressed, CreateTime when the metadata "
                   "manager's producer sent it (a few ms after the event timestamp inside the value, not "
                   "equal to it); written by an idempotent producer: one producer id per broker run (0, then "
                   "1000 after the restart), epoch 0, sequences counting from 0 per partition and run.",
        "tagged_fields": "txnIdxEmpty is tagged field 0 of RemoteLogSegmentMetadataRecord, written only when "
                         "true (01 00 01 01 ends a value with an empty transaction index, 00 one with a "
                         "transaction index).",
        "partition_deletion": "Kafka 4.4 writes no RemotePartitionDeleteMetadataRecord (api key 2): nothing but "
                              "the metadata manager itself calls putRemotePartitionDeleteMetadata. A deleted "
                              "topic's remote segments get DELETE_SEGMENT_STARTED, all of them, then "
                              "DELETE_SEGMENT_FINISHED, all of them (see the sequence of the 'gone' topic); "
                              "DeleteRecords and retention alternate STARTED/FINISHED segment by segment.",
        "leader_epochs": "A restart of the single node took the partitions' leader epoch from 0 to 2; a "
                         "segment's segmentLeaderEpochs holds each epoch that starts in it (the first at the "
                         "segment's start offset when the epoch started earlier).",
        "examples": [{"kind": f"{names[k[0]]} {k[1]}", **r} for k, r in sorted(examples.items(), key=lambda kv: kv[0])],
        "sequences": {"columns": ["metadata partition", "offset", "record", "state", "segment id", "start offset"],
                      **sequences},
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {output}: {len(records)} records, {len(doc['examples'])} examples")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUT)
