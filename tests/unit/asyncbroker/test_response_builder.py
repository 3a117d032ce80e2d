"""ResponseBuilder: one description of a response serves every version."""

from __future__ import annotations

import datetime

import pytest

from asyncbroker.response_builder import ResponseBuilder
from wire.messages import decode_response, encode_response


def test_fields_missing_in_old_versions_are_dropped() -> None:
    for version in (3, 8, 11):
        b = ResponseBuilder(0, version)
        part = b.entity(
            "PartitionProduceResponse", index=0, error_code=3, base_offset=-1, log_append_time=-1,
            log_start_offset=7, record_errors=(), error_message="boom",
        )
        topic = b.entity("TopicProduceResponse", name="t", partition_responses=(part,))
        resp = b.entity("ProduceResponse", responses=(topic,), throttle_time=0)
        decoded = decode_response(0, version, encode_response(resp))
        p = decoded.responses[0].partition_responses[0]
        assert p.error_code == 3 and p.base_offset == -1
        assert p.log_append_time is None
        if version >= 5:
            assert p.log_start_offset == 7
        else:
            assert not hasattr(p, "log_start_offset")
        if version >= 8:
            assert p.error_message == "boom"


def test_log_append_time_is_converted() -> None:
    b = ResponseBuilder(0, 9)
    part = b.entity("PartitionProduceResponse", index=0, error_code=0, base_offset=0,
                    log_append_time=1_700_000_000_123, log_start_offset=0, record_errors=())
    assert part.log_append_time == datetime.datetime.fromtimestamp(1_700_000_000.123, tz=datetime.timezone.utc)


def test_a_name_no_version_has_is_refused_and_another_versions_name_is_dropped(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from asyncbroker import response_builder

    monkeypatch.setattr(response_builder, "STRICT", True)
    v2 = ResponseBuilder(8, 2)
    topic = v2.entity("OffsetCommitResponseTopic", name="t", topic_id=None, partitions=())  # topic_id: v10's
    assert topic.name == "t"
    with pytest.raises(TypeError, match="has no field 'partitons' in any version"):
        v2.entity("OffsetCommitResponseTopic", name="t", partitons=())


def test_the_suite_builds_strictly() -> None:
    """tests/conftest.py turns the strict check on for the suite and the brokers it starts."""
    from asyncbroker import response_builder

    assert response_builder.STRICT
