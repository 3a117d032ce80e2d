"""Steps of the data-path scenarios: Produce, Fetch, ListOffsets, DeleteRecords, OffsetForLeaderEpoch.

Each step is a recorded call (compared between the brokers) unless it says
otherwise. Requests name topics symbolically and take every field a client
may set, so a scenario states exactly what it sends; `steps.py` keeps the
shared basics (create_topic, metadata), this module the data path's wider
forms. Two values of the data path must differ between two brokers and are
masked in the recorded answers: producer ids (each broker allocates its own,
and the session-wide Kafka has handed out others before a scenario starts),
shown as `<pid-n>` in order of first appearance in the run; and the clock
reading in an INVALID_TIMESTAMP message's allowed window.
"""

from __future__ import annotations

import datetime
import re
import struct
from collections.abc import Mapping
from typing import Any

from differential import DEFAULT_TIMEOUT_MS, Connection, ScenarioRun, entity, request_class_name
from steps import DELETE_RECORDS, FETCH, INIT_PRODUCER_ID, LIST_OFFSETS, PRODUCE, TIMEOUT
from wire.records import CRC_OFFSET, MAGIC_OFFSET, compute_crc

OFFSET_FOR_LEADER_EPOCH = 23
COORDINATOR_LOAD_IN_PROGRESS = 14

# ListOffsets special timestamps (Kafka's ListOffsetsRequest constants).
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5

# Records per partition: a batch's bytes, None (a null records field) or b"" (an empty one).
Batches = Mapping[int, bytes | None]


# -- producer ids --------------------------------------------------------------------------


def _producer_ids(run: ScenarioRun) -> dict[int, str]:
    ids = getattr(run, "_producer_ids", None)
    if ids is None:
        ids = {}
        run._producer_ids = ids  # type: ignore[attr-defined]
    return ids


def learn_producer_id(run: ScenarioRun, producer_id: int) -> str:
    ids = _producer_ids(run)
    return ids.setdefault(producer_id, f"<pid-{len(ids)}>")


def _mask_producer_ids(run: ScenarioRun, value: Any) -> Any:
    """Replace learned producer ids wherever a `producer_id` field holds one, and the CRC of a
    fetched batch that carries one (the CRC covers the producer id)."""
    ids = _producer_ids(run)
    if isinstance(value, dict):
        masked = {k: (ids.get(v, v) if k == "producer_id" and isinstance(v, int) else _mask_producer_ids(run, v))
                  for k, v in value.items()}
        if "crc" in masked and isinstance(value.get("producer_id"), int) and value["producer_id"] in ids:
            masked["crc"] = "<crc>"
        return masked
    if isinstance(value, list):
        return [_mask_producer_ids(run, v) for v in value]
    return value


def call(run: ScenarioRun, api_key: int, version: int, *, label: str | None = None,
         conn: Connection | None = None, record: bool = True, **fields: Any) -> Any:
    """run.call, with learned producer ids masked in the recorded answer."""
    response = run.call(api_key, version, _label=label, _conn=conn, _record=record, **fields)
    if record and _producer_ids(run):
        step = run.transcript[-1]
        step.response = _mask_producer_ids(run, step.response)
    return response


def init_producer_id(run: ScenarioRun, *, version: int = 4, record: bool = True) -> tuple[int, int]:
    """An idempotent producer's id and epoch (no transactional id).

    Kafka answers COORDINATOR_LOAD_IN_PROGRESS until its broker has fetched a block of
    producer ids from the controller (the first call of a session); clients retry that, and
    so does this step, unrecorded, until another answer comes."""

    def answered() -> Any:
        r = run.call(INIT_PRODUCER_ID, version, _record=False, transactional_id=None,
                     transaction_timeout=datetime.timedelta(milliseconds=60_000), producer_id=-1,
                     producer_epoch=-1)
        return None if r.error_code.value == COORDINATOR_LOAD_IN_PROGRESS else r

    response = run.wait_until(answered, "a producer id")
    producer_id, epoch = int(response.producer_id), int(response.producer_epoch)
    if record:
        learn_producer_id(run, producer_id)
        run.record(f"InitProducerIdRequest v{version}", None, response)
        run.transcript[-1].response = _mask_producer_ids(run, run.transcript[-1].response)
    return producer_id, epoch


# -- Produce -------------------------------------------------------------------------------


def produce_request(run: ScenarioRun, topics: Mapping[str, Batches], *, version: int = 11, acks: int = -1,
                    transactional_id: str | None = None, timeout_ms: int = DEFAULT_TIMEOUT_MS,
                    raw_names: bool = False) -> Any:
    """A ProduceRequest entity over several topics; `raw_names` sends the names as given."""
    topic_data = tuple(
        entity(PRODUCE, version, "TopicProduceData", name=symbol if raw_names else run.topic(symbol),
               partition_data=tuple(entity(PRODUCE, version, "PartitionProduceData", index=p, records=b)
                                    for p, b in batches.items()))
        for symbol, batches in topics.items()
    )
    return entity(PRODUCE, version, request_class_name(PRODUCE, version), transactional_id=transactional_id,
                  acks=acks, timeout=datetime.timedelta(milliseconds=timeout_ms), topic_data=topic_data)


def produce_topics(run: ScenarioRun, topics: Mapping[str, Batches], *, version: int = 11, acks: int = -1,
                   label: str | None = None, record: bool = True, raw_names: bool = False,
                   transactional_id: str | None = None) -> Any:
    """Produce to several topics in one request (acks 1 or -1: an answer comes)."""
    request = produce_request(run, topics, version=version, acks=acks, raw_names=raw_names,
                              transactional_id=transactional_id)
    response = run.send(request, label=label, record=record)
    if record:
        run.transcript[-1].response = _mask_clock_window(_mask_producer_ids(run, run.transcript[-1].response))
    return response


def produce(run: ScenarioRun, symbol: str, batches: Batches, **kwargs: Any) -> Any:
    """Produce to one topic (see produce_topics)."""
    return produce_topics(run, {symbol: batches}, **kwargs)


_CLOCK_WINDOW = re.compile(r"should be within \[(-?\d+), (-?\d+)\]")


def _mask_clock_window(value: Any) -> Any:
    """An INVALID_TIMESTAMP message states the window [now - before.max.ms, now + after.max.ms]
    by the broker's clock, which must differ between two brokers; its width must not, so the
    window is kept as its width from a masked start."""
    if isinstance(value, str):
        return _CLOCK_WINDOW.sub(lambda m: f"should be within [<now-before>, <now-before>+{int(m[2]) - int(m[1])}]",
                                 value)
    if isinstance(value, dict):
        return {k: _mask_clock_window(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_clock_window(v) for v in value]
    return value


def produce_unanswered(run: ScenarioRun, topics: Mapping[str, Batches], *, version: int = 11,
                       conn: Connection | None = None, raw_names: bool = False) -> None:
    """An acks=0 Produce: no answer comes, so nothing is read; the scenario records what the
    connection does next."""
    (conn or run.conn).send(produce_request(run, topics, version=version, acks=0, raw_names=raw_names))


# -- record batch surgery ------------------------------------------------------------------


def with_crc_broken(records: bytes) -> bytes:
    """The batch with one bit of its stored CRC flipped (its contents intact)."""
    out = bytearray(records)
    out[CRC_OFFSET + 3] ^= 0x01
    return bytes(out)


def with_magic(records: bytes, magic: int, *, fix_crc: bool = True) -> bytes:
    """The batch with another magic byte (the CRC, which does not cover it, stays right)."""
    out = bytearray(records)
    out[MAGIC_OFFSET] = magic
    if fix_crc:
        (length,) = struct.unpack_from(">i", out, 8)
        struct.pack_into(">I", out, CRC_OFFSET, compute_crc(out, 0, length))
    return bytes(out)


# -- Fetch ---------------------------------------------------------------------------------


def fetch_partition(version: int, partition: int, fetch_offset: int, *, partition_max_bytes: int = 1_048_576,
                    current_leader_epoch: int = -1, last_fetched_epoch: int = -1,
                    log_start_offset: int = -1) -> Any:
    return entity(FETCH, version, "FetchPartition", partition=partition, current_leader_epoch=current_leader_epoch,
                  fetch_offset=fetch_offset, last_fetched_epoch=last_fetched_epoch,
                  log_start_offset=log_start_offset, partition_max_bytes=partition_max_bytes,
                  replica_directory_id=None)


def fetch_topics(run: ScenarioRun, topics: Mapping[str, Mapping[int, int | dict[str, Any]]], *, version: int = 12,
                 max_wait_ms: int = 0, min_bytes: int = 1, max_bytes: int = 52_428_800,
                 partition_max_bytes: int = 1_048_576, isolation_level: int = 0, session_id: int = 0,
                 session_epoch: int = -1, replica_id: int = -1, forgotten: Mapping[str, list[int]] | None = None,
                 topic_ids: Mapping[str, Any] | None = None, label: str | None = None, record: bool = True,
                 conn: Connection | None = None) -> Any:
    """Fetch from several topics. A partition maps to its fetch offset, or to a dict of its
    FetchPartition fields (fetch_offset, partition_max_bytes, current_leader_epoch, ...).
    From v13 topics go by id: `topic_ids` overrides the learned one (an unknown id)."""

    def topic_fields(symbol: str) -> dict[str, Any]:
        if version >= 13:
            tid = (topic_ids or {}).get(symbol)
            return {"topic_id": tid if tid is not None else run.topic_id(symbol)}
        return {"topic": run.topic(symbol)}

    request_topics = []
    for symbol, partitions in topics.items():
        parts = []
        for p, spec in partitions.items():
            fields: dict[str, Any] = {"partition_max_bytes": partition_max_bytes}
            if isinstance(spec, dict):
                fields.update(spec)
            else:
                fields["fetch_offset"] = spec
            parts.append(fetch_partition(version, p, **fields))
        request_topics.append(entity(FETCH, version, "FetchTopic", partitions=tuple(parts), **topic_fields(symbol)))
    forgotten_topics = tuple(
        entity(FETCH, version, "ForgottenTopic", partitions=tuple(ps), **topic_fields(symbol))
        for symbol, ps in (forgotten or {}).items()
    )
    replica_state = entity(FETCH, version, "ReplicaState", replica_id=replica_id, replica_epoch=-1) \
        if version >= 15 else None
    return call(run, FETCH, version, label=label, record=record, conn=conn, cluster_id=None, replica_id=replica_id,
                replica_state=replica_state, max_wait=datetime.timedelta(milliseconds=max_wait_ms),
                min_bytes=min_bytes, max_bytes=max_bytes, isolation_level=isolation_level, session_id=session_id,
                session_epoch=session_epoch, topics=tuple(request_topics), forgotten_topics_data=forgotten_topics,
                rack_id="")


# -- ListOffsets ---------------------------------------------------------------------------


def list_offsets_topics(run: ScenarioRun, topics: Mapping[str, list[tuple[int, int] | tuple[int, int, int]]], *,
                        version: int = 9, isolation_level: int = 0, replica_id: int = -1, label: str | None = None,
                        record: bool = True) -> Any:
    """ListOffsets over several topics: (partition, timestamp[, current_leader_epoch]) targets."""
    request_topics = tuple(
        entity(LIST_OFFSETS, version, "ListOffsetsTopic", name=run.topic(symbol), partitions=tuple(
            entity(LIST_OFFSETS, version, "ListOffsetsPartition", partition_index=t[0], timestamp=t[1],
                   current_leader_epoch=t[2] if len(t) > 2 else -1)
            for t in targets))
        for symbol, targets in topics.items()
    )
    return call(run, LIST_OFFSETS, version, label=label, record=record, replica_id=replica_id,
                isolation_level=isolation_level, topics=request_topics)


# -- DeleteRecords -------------------------------------------------------------------------


def delete_records(run: ScenarioRun, topics: Mapping[str, Mapping[int, int]], *, version: int = 2,
                   label: str | None = None, record: bool = True) -> Any:
    request_topics = tuple(
        entity(DELETE_RECORDS, version, "DeleteRecordsTopic", name=run.topic(symbol), partitions=tuple(
            entity(DELETE_RECORDS, version, "DeleteRecordsPartition", partition_index=p, offset=o)
            for p, o in partitions.items()))
        for symbol, partitions in topics.items()
    )
    return call(run, DELETE_RECORDS, version, label=label, record=record, topics=request_topics, timeout=TIMEOUT)


# -- OffsetForLeaderEpoch ------------------------------------------------------------------


def offset_for_leader_epoch(run: ScenarioRun, topics: Mapping[str, list[tuple[int, int, int]]], *,
                            version: int = 4, replica_id: int = -1, label: str | None = None,
                            record: bool = True) -> Any:
    """(partition, current_leader_epoch, leader_epoch) per topic."""
    request_topics = tuple(
        entity(OFFSET_FOR_LEADER_EPOCH, version, "OffsetForLeaderTopic", topic=run.topic(symbol), partitions=tuple(
            entity(OFFSET_FOR_LEADER_EPOCH, version, "OffsetForLeaderPartition", partition=p,
                   current_leader_epoch=current, leader_epoch=epoch)
            for p, current, epoch in parts))
        for symbol, parts in topics.items()
    )
    return call(run, OFFSET_FOR_LEADER_EPOCH, version, label=label, record=record, replica_id=replica_id,
                topics=request_topics)
