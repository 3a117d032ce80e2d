"""Defaults that keep people safe: loopback listener, hostile topic names and config values
are refused before anything touches the log directory."""
from __future__ import annotations

import datetime
import sys
import time
from pathlib import Path

import pytest
from kio.schema.create_topics.v5 import request as ct5
from kio.schema.metadata.v12 import request as meta12
from kio.schema.produce.v9 import request as produce9

from asyncbroker.config import KafkaConfig
from asyncbroker.testing import BrokerProcess
from wire.errors import ErrorCode
from wire.records import Record, build_batch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from raw_client import RawClient  # noqa: E402

pytestmark = pytest.mark.timeout(60)

BAD_NAMES = ["abc\n", "..", ".", "a/b", "../../etc", "x" * 250, "sp ace", "nul\x00", "ünï", "a\\b", ""]
BAD_CONFIGS = [{"segment.bytes": "12"}, {"segment.bytes": "abc"}, {"cleanup.policy": "shred"},
               {"min.cleanable.dirty.ratio": "nan"}, {"retention.ms": "-7"}, {"no.such.key": "1"},
               {"segment.index.bytes": "-1"}, {"max.message.bytes": "99999999999999999999"}]


def test_default_listener_is_loopback() -> None:
    config = KafkaConfig.load(None, [], {})
    assert config.listener_host_port()[0] == "127.0.0.1"
    assert config.socket_request_max_bytes == 104857600


def _entries(d: Path) -> set[str]:
    return {p.name for p in d.iterdir()}


def _create(c: RawClient, name: str, configs: dict[str, str]) -> int:
    resp = c.request(ct5.CreateTopicsRequest(topics=(ct5.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=(),
        configs=tuple(ct5.CreatableTopicConfig(name=k, value=v) for k, v in configs.items())),),
        timeout=datetime.timedelta(seconds=5), validate_only=False))
    return resp.topics[0].error_code


def test_hostile_names_and_configs_never_touch_files() -> None:
    with BrokerProcess() as broker, RawClient(broker.bootstrap) as c:
        before = _entries(broker.log_dir)
        for name in BAD_NAMES:
            assert _create(c, name, {}) == ErrorCode.INVALID_TOPIC_EXCEPTION, repr(name)
            resp = c.request(meta12.MetadataRequest(
                topics=(meta12.MetadataRequestTopic(topic_id=None, name=name),), allow_auto_topic_creation=True,
                include_topic_authorized_operations=False))
            assert resp.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION, repr(name)
            batch = build_batch([Record(offset=0, timestamp=int(time.time() * 1000), key=None, value=b"v", headers=[])])
            resp = c.request(produce9.ProduceRequest(
                transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=5),
                topic_data=(produce9.TopicProduceData(name=name, partition_data=(
                    produce9.PartitionProduceData(index=0, records=batch),)),)))
            assert resp.responses[0].partition_responses[0].error_code != 0, repr(name)
        for i, configs in enumerate(BAD_CONFIGS):
            assert _create(c, f"cfg-{i}", configs) == ErrorCode.INVALID_CONFIG, configs
        assert _entries(broker.log_dir) == before


def test_excessive_partition_count_is_refused_without_touching_files() -> None:
    with BrokerProcess() as broker, RawClient(broker.bootstrap) as c:
        before = _entries(broker.log_dir)
        resp = c.request(ct5.CreateTopicsRequest(topics=(ct5.CreatableTopic(
            name="huge", num_partitions=2**31 - 1, replication_factor=1, assignments=(), configs=()),),
            timeout=datetime.timedelta(seconds=5), validate_only=False))
        assert resp.topics[0].error_code == ErrorCode.POLICY_VIOLATION
        assert _entries(broker.log_dir) == before
