"""The hand-written OffsetCommit response encoder matches kio byte for byte."""

from __future__ import annotations

import uuid

import pytest

from asyncbroker.handlers.offset_commit import encode_offset_commit_response
from asyncbroker.response_builder import ResponseBuilder
from wire.messages import ApiKey, encode_response

TOPICS = [("orders", [(0, 0), (3, 12)]), ("ünïcode-topic", [(7, 25)]), ("empty", [])]
# v10 names topics by id.
TOPIC_IDS = [(uuid.UUID(int=7), [(0, 0), (3, 12)]), (uuid.uuid4(), [(7, 100)]), (uuid.uuid4(), [])]


@pytest.mark.parametrize("version", range(2, 11))
def test_offset_commit_response_matches_kio(version: int) -> None:
    b = ResponseBuilder(ApiKey.OFFSET_COMMIT, version)
    topics = TOPIC_IDS if version >= 10 else TOPICS
    entity = b.entity("OffsetCommitResponse", throttle_time=0, topics=tuple(
        b.entity("OffsetCommitResponseTopic", name=key, topic_id=key, partitions=tuple(
            b.entity("OffsetCommitResponsePartition", partition_index=i, error_code=e) for i, e in parts))
        for key, parts in topics))
    assert encode_offset_commit_response(version, topics) == encode_response(entity)
