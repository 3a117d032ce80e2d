"""The hand-written OffsetCommit response encoder matches kio byte for byte."""

from __future__ import annotations

import pytest

from asyncbroker.handlers.offset_commit import encode_offset_commit_response
from asyncbroker.response_builder import ResponseBuilder
from wire.messages import ApiKey, encode_response

TOPICS = [("orders", [(0, 0), (3, 12)]), ("ünïcode-topic", [(7, 25)]), ("empty", [])]


@pytest.mark.parametrize("version", range(2, 10))
def test_offset_commit_response_matches_kio(version: int) -> None:
    b = ResponseBuilder(ApiKey.OFFSET_COMMIT, version)
    entity = b.entity("OffsetCommitResponse", throttle_time=0, topics=tuple(
        b.entity("OffsetCommitResponseTopic", name=name, partitions=tuple(
            b.entity("OffsetCommitResponsePartition", partition_index=i, error_code=e) for i, e in parts))
        for name, parts in TOPICS))
    assert encode_offset_commit_response(version, TOPICS) == encode_response(entity)
