"""Metadata answers come from the encoded-answer cache while no topic changes, and every
change shows in the next answer: created, grown, deleted topics, and errors never cached."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import pytest
from kio.schema.create_partitions.v3 import request as cp3
from kio.schema.create_topics.v7 import request as ct7
from kio.schema.delete_topics.v6 import request as dt6
from kio.schema.metadata.v12 import request as meta12

from asyncbroker.testing import BrokerProcess
from raw_client import RawClient
from wire.errors import ErrorCode
from wire.messages import decode_response

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(["auto.create.topics.enable=false"]) as b:
        yield b


def metadata(c: RawClient, *names: str) -> tuple[bytes, object]:
    """The raw answer frame (past the correlation id) and its decoded form."""
    request = meta12.MetadataRequest(
        topics=tuple(meta12.MetadataRequestTopic(topic_id=None, name=n) for n in names),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    cid = c.send_request(request)
    frame = c.recv_frame()
    assert int.from_bytes(frame[:4], "big") == cid
    return frame[4:], decode_response(3, 12, frame[5:])  # past the v1 header's tagged fields


def partitions_of(answer: object) -> list[tuple[str, int, int]]:
    return [(t.name, t.error_code, len(t.partitions)) for t in answer.topics]  # type: ignore[attr-defined]


def test_answers_follow_every_topic_change(broker: BrokerProcess) -> None:
    with RawClient(broker.bootstrap) as c:
        created = c.request(ct7.CreateTopicsRequest(topics=(ct7.CreatableTopic(
            name="cached", num_partitions=3, replication_factor=1, assignments=(), configs=()),),
            timeout=datetime.timedelta(seconds=30), validate_only=False))
        assert created.topics[0].error_code == ErrorCode.NONE
        first, answer = metadata(c, "cached")
        assert partitions_of(answer) == [("cached", ErrorCode.NONE, 3)]
        again, _ = metadata(c, "cached")
        assert again == first  # the same bytes, from the cache
        grown = c.request(cp3.CreatePartitionsRequest(topics=(cp3.CreatePartitionsTopic(
            name="cached", count=5, assignments=None),), timeout=datetime.timedelta(seconds=30),
            validate_only=False))
        assert grown.results[0].error_code == ErrorCode.NONE
        _, answer = metadata(c, "cached")
        assert partitions_of(answer) == [("cached", ErrorCode.NONE, 5)]
        # An unknown topic is an error entry: never cached, so its creation shows at once.
        _, answer = metadata(c, "cached", "later")
        assert partitions_of(answer) == [("cached", ErrorCode.NONE, 5),
                                         ("later", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)]
        c.request(ct7.CreateTopicsRequest(topics=(ct7.CreatableTopic(
            name="later", num_partitions=1, replication_factor=1, assignments=(), configs=()),),
            timeout=datetime.timedelta(seconds=30), validate_only=False))
        _, answer = metadata(c, "cached", "later")
        assert partitions_of(answer) == [("cached", ErrorCode.NONE, 5), ("later", ErrorCode.NONE, 1)]
        deleted = c.request(dt6.DeleteTopicsRequest(topics=(dt6.DeleteTopicState(name="cached", topic_id=None),),
                                                    timeout=datetime.timedelta(seconds=30)))
        assert deleted.responses[0].error_code == ErrorCode.NONE
        _, answer = metadata(c, "cached", "later")
        assert partitions_of(answer) == [("cached", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0),
                                         ("later", ErrorCode.NONE, 1)]
