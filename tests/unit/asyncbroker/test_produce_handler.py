"""The Produce handler's path for the usual request (_append_one_partition) against its general
path, over a real socket to a broker listening on loopback: the same requests, in the same
order, to two topics configured alike, one with the usual path on and one with it off, get the
same answers; and the usual path takes the usual requests (not only declines them)."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import re
import struct
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import pytest

from asyncbroker.config import KafkaConfig
from asyncbroker.handlers import produce
from asyncbroker.server import KafkaServer
from wire.compression import CompressionType
from wire.errors import ErrorCode
from wire.headers import encode_request_header
from wire.messages import ApiKey, decode_response, encode_request
from wire.records import ATTRIBUTES_OFFSET, CONTROL_FLAG_MASK, Record, build_batch, compute_crc, decode_records


def _batch(n: int = 2, *, key: bytes | None = b"k", ts: int | None = None, **kwargs: Any) -> bytes:
    now = ts if ts is not None else int(datetime.datetime.now().timestamp() * 1000)
    return build_batch([Record(offset=i, timestamp=now, key=key, value=b"v%d" % i) for i in range(n)], **kwargs)


def _control_batch() -> bytes:
    records = bytearray(_batch(1))
    struct.pack_into(">h", records, ATTRIBUTES_OFFSET, CONTROL_FLAG_MASK)
    struct.pack_into(">I", records, 17, compute_crc(records, 0, len(records) - 12))
    return bytes(records)


def _bad_crc() -> bytes:
    records = bytearray(_batch(1))
    records[-1] ^= 0xFF
    return bytes(records)


class Client:
    """One connection speaking Produce with kio's request classes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer, self.correlation_id = reader, writer, 0

    async def produce(self, version: int, topic: str, partitions: list[tuple[int, bytes | None]], *,
                      acks: int = -1, transactional_id: str | None = None) -> Any:
        import importlib

        schema = importlib.import_module(f"kio.schema.produce.v{version}.request")
        request = schema.ProduceRequest(
            transactional_id=transactional_id, acks=acks, timeout=datetime.timedelta(seconds=30),
            topic_data=(schema.TopicProduceData(name=topic, partition_data=tuple(
                schema.PartitionProduceData(index=index, records=records) for index, records in partitions)),),
        )
        self.correlation_id += 1
        body = encode_request_header(ApiKey.PRODUCE, version, self.correlation_id, "test") + encode_request(request)
        self.writer.write(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), 10))[0]
        frame = await asyncio.wait_for(self.reader.readexactly(size), 10)
        assert struct.unpack_from(">i", frame)[0] == self.correlation_id
        header_size = 5 if version >= 9 else 4
        return decode_response(ApiKey.PRODUCE, version, frame[header_size:])


@contextlib.asynccontextmanager
async def _served(tmp_path: Path, *config: str) -> AsyncIterator[tuple[KafkaServer, Client]]:
    """A broker listening on loopback, in this process (the test turns its paths on and off),
    and one connection to it."""
    settings = KafkaConfig.load(None, [f"log.dirs={tmp_path}", "listeners=PLAINTEXT://127.0.0.1:0",
                                       "auto.create.topics.enable=false", *config], {})
    server = KafkaServer(settings)
    await server.start()
    host, port = server.bound["PLAINTEXT"]
    reader, writer = await asyncio.open_connection(host, port)
    try:
        yield server, Client(reader, writer)
    finally:
        writer.close()
        await server.stop()


# Steps: (version, partitions, keyword arguments, what the usual path does with it), sent in
# order to one topic. "taken": answered there (an append's own failure too, mapped as the
# general path maps it); "declined": left to the general path; "not asked": acks it never takes.
Step = tuple[int, list[tuple[int, Any]], dict[str, Any], str]
STEPS: list[Step] = [
    (9, [(0, lambda: _batch())], {}, "taken"),
    (12, [(0, lambda: _batch(3))], {}, "taken"),
    (7, [(0, lambda: _batch(1))], {"acks": 1}, "taken"),
    (8, [(0, lambda: _batch(2, compression=CompressionType.GZIP))], {}, "taken"),
    (11, [(0, lambda: _batch(1, key=None))], {}, "taken"),
    (9, [(0, lambda: _batch(2, producer_id=77, producer_epoch=0, base_sequence=0))], {}, "taken"),
    (9, [(0, lambda: _batch(2, producer_id=77, producer_epoch=0, base_sequence=0))], {}, "taken"),  # a duplicate
    (9, [(0, lambda: _batch(1, producer_id=77, producer_epoch=0, base_sequence=9))], {}, "taken"),  # out of order
    (9, [(0, _bad_crc)], {}, "taken"),
    (9, [(0, lambda: _batch(ts=4_000_000_000_000))], {}, "taken"),                # beyond the after bound
    (9, [(0, lambda: _batch(60))], {}, "taken"),                                  # over max.message.bytes
    (9, [(0, _control_batch)], {}, "taken"),
    (3, [(0, lambda: _batch())], {}, "declined"),                                 # before v7
    (9, [(3, lambda: _batch())], {}, "declined"),                                 # no such partition
    (9, [(0, lambda: _batch()), (1, lambda: _batch())], {}, "declined"),          # two partitions
    (9, [(0, lambda: _batch() + _batch())], {}, "declined"),                      # two batches
    (9, [(0, lambda: _batch() + b"\0\0\0")], {}, "declined"),                     # stray bytes after it
    (9, [(0, lambda: _batch(2, producer_id=78, producer_epoch=0, base_sequence=0, is_transactional=True))], {},
     "declined"),                                                                 # no transactional id
    (9, [(0, None)], {}, "declined"),                                             # null records
    (9, [(0, lambda: _batch())], {"acks": 2}, "not asked"),
    (9, [(0, lambda: _batch())], {}, "taken"),
]
# Each step's answer, partition by partition.
ERRORS = [["NONE"]] * 7 + [
    ["OUT_OF_ORDER_SEQUENCE_NUMBER"], ["CORRUPT_MESSAGE"], ["INVALID_TIMESTAMP"], ["MESSAGE_TOO_LARGE"],
    ["INVALID_RECORD"], ["NONE"], ["UNKNOWN_TOPIC_OR_PARTITION"], ["NONE", "NONE"], ["INVALID_RECORD"],
    ["NONE"], ["TRANSACTIONAL_ID_AUTHORIZATION_FAILED"], ["INVALID_RECORD"], ["INVALID_REQUIRED_ACKS"], ["NONE"],
]
TOPIC_CONFIGS = {"message.timestamp.after.max.ms": "3600000", "max.message.bytes": "400"}


def _masked(answer: Any) -> Any:
    """Each partition's answer as a dict, without the topic name (each run has its own topic)
    and without the clock's reading in a timestamp error."""
    return [[{name: re.sub(r"within \[-?\d+, -?\d+\]", "within [...]", repr(value))
              if name == "record_errors" else value
              for name, value in ((f.name, getattr(p, f.name)) for f in dataclasses.fields(p))}
             for p in t.partition_responses] for t in answer.responses], answer.throttle_time


async def _run(client: Client, topic: str, steps: list[Step], asked: list[bool]) -> tuple[list[Any], list[str]]:
    """Each step's answer, and what the usual path did with it (`asked` records its answers)."""
    answers, outcomes = [], []
    for version, partitions, kwargs, _ in steps:
        built = [(index, make() if make is not None else None) for index, make in partitions]
        before = len(asked)
        answers.append(_masked(await client.produce(version, topic, built, **kwargs)))
        outcomes.append("not asked" if len(asked) == before else "taken" if asked[-1] else "declined")
    return answers, outcomes


async def test_both_paths_answer_alike_and_the_usual_path_takes_the_usual(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with _served(tmp_path) as (server, client):
        await _compare(server, client, monkeypatch)


def _record_the_usual_path(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the usual path answered, request by request, from now on (it still answers)."""
    original: Callable[..., Any] = produce._append_one_partition
    answered: list[bool] = []

    def recorded(*args: Any) -> Any:
        answer = original(*args)
        answered.append(answer is not None)
        return answer

    monkeypatch.setattr(produce, "_append_one_partition", recorded)
    return answered


async def _compare(server: KafkaServer, client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    assert server.broker is not None
    for name in ("usual", "general"):
        await server.broker.topics.create_topic(name, 2, -1, dict(TOPIC_CONFIGS))
    # Timestamps come from the clock: the same batches for both runs, built once.
    steps = [(v, [(i, (lambda b=make(): b) if make is not None else None) for i, make in ps], kw, expected)
             for v, ps, kw, expected in STEPS]
    asked = _record_the_usual_path(monkeypatch)
    usual, outcomes = await _run(client, "usual", steps, asked)
    monkeypatch.setattr(produce, "_append_one_partition", lambda *args: None)
    general, _ = await _run(client, "general", steps, [])

    for step, (a, b) in enumerate(zip(usual, general)):
        assert a == b, f"step {step}: {steps[step][0]}, {steps[step][2]}"
    assert outcomes == [expected for *_, expected in STEPS]
    # The answers are what the steps meant.
    assert usual[6][0][0][0]["base_offset"] == usual[5][0][0][0]["base_offset"]  # the duplicate's own offsets
    assert [[ErrorCode(p["error_code"]).name for t in a[0] for p in t] for a in usual] == ERRORS


@pytest.mark.parametrize("kind", ["authorizer", "quota"])
async def test_an_authorizer_or_quotas_send_every_request_the_general_way(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """The usual path consults neither ACLs nor quotas: with either in force it declines, and
    the general path answers."""
    from asyncbroker.client_quotas import entity_of

    extra = ["authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
             "allow.everyone.if.no.acl.found=true"] if kind == "authorizer" else []
    async with _served(tmp_path, *extra) as (server, client):
        broker = server.broker
        assert broker is not None
        await broker.topics.create_topic("t", 1, -1, {})
        if kind == "quota":
            broker.quota_managers.quotas.apply(entity_of([("client-id", "test")]), [("producer_byte_rate", 1e9, False)])
        taken = _record_the_usual_path(monkeypatch)
        answer = _masked(await client.produce(9, "t", [(0, _batch())]))
        assert taken == [False]
        assert answer[0][0][0]["error_code"] == 0 and answer[0][0][0]["base_offset"] == 0


async def test_a_whole_default_size_batch_is_appended_on_the_loop_and_a_larger_one_on_the_io_pool(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch as librdkafka and the Java producer fill one under the default message.max.bytes
    (about 1 MB) is appended on the event loop: the executor hop costs such a request more CPU
    than its append (replica_manager.INLINE_APPEND_MAX_BYTES). One above that bound goes to the
    IO pool. Both are answered and read back whole, at their offsets."""
    from asyncbroker import replica_manager
    from storage.topic_partition import TopicPartition

    def tens_of_kib(n: int) -> bytes:
        now = int(datetime.datetime.now().timestamp() * 1000)
        return build_batch([Record(offset=i, timestamp=now, key=None, value=bytes([i]) * 10_240) for i in range(n)])

    usual, larger = tens_of_kib(97), tens_of_kib(150)
    assert 1_000_000 - 10_300 < len(usual) <= 1_000_000 < replica_manager.INLINE_APPEND_MAX_BYTES < len(larger)
    async with _served(tmp_path, "message.max.bytes=4194304") as (server, client):
        broker = server.broker
        assert broker is not None
        await broker.topics.create_topic("t", 1, -1, {})
        taken = _record_the_usual_path(monkeypatch)
        pooled: list[int] = []
        append_all = replica_manager._append_all

        def recorded(appends: list[Any]) -> None:
            pooled.extend(len(a.records) for a in appends)
            append_all(appends)

        monkeypatch.setattr(replica_manager, "_append_all", recorded)
        answers = [_masked(await client.produce(9, "t", [(0, records)])) for records in (usual, larger)]
        assert taken == [True, False]
        assert pooled == [len(larger)]  # the larger batch alone took the hop
        assert [(a[0][0][0]["error_code"], a[0][0][0]["base_offset"]) for a in answers] == [(0, 0), (0, 97)]
        log = broker.replica_manager.log_of(TopicPartition("t", 0))
        assert log.log_end_offset == 247
        stored = log.read(0, 4_000_000).read_bytes()
        assert len(stored) == len(usual) + len(larger)
        read_back = [(r.offset, r.value) for r in decode_records(stored, 0)] + \
            [(r.offset, r.value) for r in decode_records(stored, len(usual))]
        assert read_back == [(i, bytes([i]) * 10_240) for i in range(97)] + \
            [(97 + i, bytes([i]) * 10_240) for i in range(150)]
