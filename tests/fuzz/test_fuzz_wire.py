"""In-process fuzzing of the wire/ decoders (the atheris harness runs the same targets longer).

Inputs are random bytes and mutations of valid requests/batches, so the decoders get both
shallow garbage and deep, almost-valid structures.
"""
from __future__ import annotations

import datetime
import os
import struct
import time
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v3 import request as api_versions3
from kio.schema.fetch.v12 import request as fetch12
from kio.schema.metadata.v1 import request as meta1
from kio.schema.metadata.v12 import request as meta12
from kio.schema.produce.v9 import request as produce9

from wire.compression import CompressionType
from wire.headers import encode_request_header
from wire.messages import encode_request
from wire.records import Record, build_batch
from wire_targets import TARGETS, fuzz_records_unchecked_crc, fuzz_request, run_one

SETTINGS = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "0")) or 250, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _batch(compression: CompressionType) -> bytes:
    now = int(time.time() * 1000)
    return build_batch([Record(offset=i, timestamp=now + i, key=b"k%d" % i, value=b"v" * (i * 7),
                               headers=[("h", b"x")]) for i in range(4)], compression=compression)


SEEDS_BATCHES = [_batch(c) for c in CompressionType]


def _request(entity: object) -> bytes:
    return encode_request_header(entity.__api_key__, entity.__version__, 7, "fuzz") + encode_request(entity)  # type: ignore[attr-defined]


SEED_REQUESTS = [
    _request(produce9.ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=1),
                                     topic_data=(produce9.TopicProduceData(name="t", partition_data=(
                                         produce9.PartitionProduceData(index=0, records=SEEDS_BATCHES[1]),)),))),
    _request(meta12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                    include_topic_authorized_operations=False)),
    _request(meta12.MetadataRequest(topics=(meta12.MetadataRequestTopic(topic_id=None, name="t"),
                                            meta12.MetadataRequestTopic(topic_id=uuid.UUID(int=7), name=None)),
                                    allow_auto_topic_creation=True, include_topic_authorized_operations=True)),
    _request(meta1.MetadataRequest(topics=(meta1.MetadataRequestTopic(name="t"),))),
    _request(api_versions3.ApiVersionsRequest(client_software_name="fuzz", client_software_version="1.0")),
    _request(fetch12.FetchRequest(cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=1,
                                  max_bytes=1000, isolation_level=0, session_id=0, session_epoch=-1, topics=(
                                      fetch12.FetchTopic(topic="t", partitions=(fetch12.FetchPartition(
                                          partition=0, current_leader_epoch=-1, fetch_offset=0,
                                          last_fetched_epoch=-1, log_start_offset=-1,
                                          partition_max_bytes=100),)),),
                                  forgotten_topics_data=(), rack_id="")),
]


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.integers(0, 4))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if op == 0 and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == 1:
            del data[pos:pos + draw(st.integers(1, 16))]
        elif op == 2:
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == 3 and len(data) >= pos + 4:
            struct.pack_into(">i", data, pos, draw(st.sampled_from([-1, 0, 1, 0x7FFFFFFF, -0x80000000, 1 << 20])))
        else:
            data = data[:pos]
    return bytes(data)


@SETTINGS
@given(st.integers(0, len(TARGETS) - 1), st.binary(max_size=512))
def test_decoders_on_random_bytes(target: int, data: bytes) -> None:
    run_one(target, data)


@SETTINGS
@given(mutated(SEED_REQUESTS))
def test_request_decoder_on_mutated_requests(data: bytes) -> None:
    run_one(TARGETS.index(fuzz_request), data)


@SETTINGS
@given(mutated(SEEDS_BATCHES))
def test_record_decoders_on_mutated_batches(data: bytes) -> None:
    run_one(TARGETS.index(fuzz_records_unchecked_crc), data)
    run_one(TARGETS.index(fuzz_records_unchecked_crc) - 1, data)
