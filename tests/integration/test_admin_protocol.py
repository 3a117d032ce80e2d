"""The admin APIs at the protocol level, every advertised version, through a raw socket.

Covers what the client libraries do not reach easily: each request version,
DeleteTopics by topic id (v6), DescribeLogDirs, OffsetForLeaderEpoch,
DescribeCluster endpoint types, broker-resource errors, and topic ids and
config overrides surviving a restart.
"""
from __future__ import annotations

import datetime
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from kio.index import load_payload_module
from kio.static.constants import EntityType

from asyncbroker.handlers import HandlerRegistry
from asyncbroker.response_builder import build
from asyncbroker.testing import BrokerProcess
from raw_client import RawClient
from wire.errors import ErrorCode
from wire.messages import decode_response

pytestmark = pytest.mark.timeout(90)

CREATE_TOPICS, DELETE_TOPICS, OFFSET_FOR_LEADER_EPOCH = 19, 20, 23
DESCRIBE_CONFIGS, DESCRIBE_LOG_DIRS, CREATE_PARTITIONS = 32, 35, 37
INCREMENTAL_ALTER_CONFIGS, DESCRIBE_CLUSTER, METADATA, API_VERSIONS = 44, 60, 3, 18
ALTER_CONFIGS = 33
ZERO = uuid.UUID(int=0)
TIMEOUT = datetime.timedelta(seconds=10)


def req(api_key: int, version: int, class_name: str, /, **values: Any) -> Any:
    """A request entity (or a nested one) of any version, from version-agnostic values."""
    module = load_payload_module(api_key, version, EntityType.request)
    return build(getattr(module, class_name), **values)


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(["log.retention.hours=48"]) as b:
        yield b


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(broker.bootstrap) as c:
        yield c


def create_topic(c: RawClient, version: int, name: str, partitions: int = 1, configs: dict[str, str] | None = None,
                 validate_only: bool = False, rf: int = -1) -> Any:
    topic = req(CREATE_TOPICS, version, "CreatableTopic", name=name, num_partitions=partitions,
                replication_factor=rf, assignments=(),
                configs=tuple(req(CREATE_TOPICS, version, "CreatableTopicConfig", name=k, value=v)
                              for k, v in (configs or {}).items()))
    resp = c.request(req(CREATE_TOPICS, version, "CreateTopicsRequest", topics=(topic,), timeout=TIMEOUT,
                         validate_only=validate_only))
    assert len(resp.topics) == 1
    return resp.topics[0]


def metadata_ids(c: RawClient) -> dict[str, uuid.UUID]:
    resp = c.request(req(METADATA, 12, "MetadataRequest", topics=None, allow_auto_topic_creation=False,
                         include_topic_authorized_operations=False))
    return {t.name: t.topic_id for t in resp.topics}


def test_api_versions_answers_each_version_whole_every_time(client: RawClient) -> None:
    """The answer is encoded once per version and kept (asyncbroker.handlers.api_versions): asked
    in any order of versions, each answer reads at its own version with every range the broker
    serves (and, from v3, its features), the same bytes each time; a refused request between
    them still gets INVALID_REQUEST with nothing listed."""
    served = HandlerRegistry.discover().supported_versions()
    first: dict[int, bytes] = {}
    for version in (3, 0, 4, 1, 3, 2, 0, 4, 1, 2):
        values = {"client_software_name": "t", "client_software_version": "1"} if version >= 3 else {}
        entity = req(API_VERSIONS, version, "ApiVersionsRequest", **values)
        cid = client.send_request(entity)
        frame = client.recv_frame()
        assert struct.unpack_from(">i", frame)[0] == cid
        body = frame[4:]  # (ApiVersions answers carry response header v0 at every version)
        resp = decode_response(API_VERSIONS, version, body)
        assert resp.error_code == ErrorCode.NONE
        assert {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys} == served
        if version >= 3:
            assert {f.name for f in resp.finalized_features} == {"group.version", "share.version",
                                                                  "transaction.version"}
        assert first.setdefault(version, body) == body
    refused = client.request(req(API_VERSIONS, 3, "ApiVersionsRequest", client_software_name="not valid!",
                                 client_software_version="1"))
    assert refused.error_code == ErrorCode.INVALID_REQUEST and refused.api_keys == ()
    again = client.request(req(API_VERSIONS, 3, "ApiVersionsRequest", client_software_name="t",
                               client_software_version="1"))
    assert {k.api_key: (k.min_version, k.max_version) for k in again.api_keys} == served


def test_api_versions_advertise_admin_ranges(client: RawClient) -> None:
    resp = client.request(req(API_VERSIONS, 3, "ApiVersionsRequest", client_software_name="t",
                              client_software_version="1"))
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert ranges[CREATE_TOPICS] == (2, 7)
    assert ranges[DELETE_TOPICS] == (1, 6)
    assert ranges[CREATE_PARTITIONS] == (0, 3)
    assert ranges[DESCRIBE_CONFIGS] == (1, 4)
    assert ranges[INCREMENTAL_ALTER_CONFIGS] == (0, 1)
    assert ranges[DESCRIBE_CLUSTER] == (0, 2)
    assert ranges[DESCRIBE_LOG_DIRS] == (1, 5)
    assert ranges[ALTER_CONFIGS] == (0, 2)
    assert ranges[OFFSET_FOR_LEADER_EPOCH] == (2, 4)


@pytest.mark.parametrize("version", range(2, 8))
def test_create_topics_every_version(client: RawClient, version: int) -> None:
    name = f"proto-create-v{version}"
    result = create_topic(client, version, name, 2, {"retention.ms": "1000"})
    assert result.error_code == 0 and result.name == name
    if version >= 5:
        assert result.num_partitions == 2 and result.replication_factor == 1
        configs = {c.name: c for c in result.configs}
        assert configs["retention.ms"].value == "1000" and configs["retention.ms"].config_source == 1
    if version >= 7:
        assert result.topic_id == metadata_ids(client)[name]
    again = create_topic(client, version, name, 2)
    assert again.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert again.error_message


def test_create_topics_errors(client: RawClient) -> None:
    assert create_topic(client, 7, "../x").error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert create_topic(client, 7, "p0", 0).error_code == ErrorCode.INVALID_PARTITIONS
    assert create_topic(client, 7, "rf2", 1, rf=2).error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert create_topic(client, 7, "cfg", 1, {"segment.bytes": "1"}).error_code == ErrorCode.INVALID_CONFIG
    validated = create_topic(client, 7, "only-validated", 3, validate_only=True)
    assert validated.error_code == 0 and validated.num_partitions == 3
    assert "only-validated" not in metadata_ids(client)
    # duplicate names in one request
    topic = req(CREATE_TOPICS, 7, "CreatableTopic", name="twice", num_partitions=1, replication_factor=-1,
                assignments=(), configs=())
    resp = client.request(req(CREATE_TOPICS, 7, "CreateTopicsRequest", topics=(topic, topic), timeout=TIMEOUT,
                              validate_only=False))
    # Kafka answers a name given twice once.
    assert [(t.name, t.error_code, t.error_message) for t in resp.topics] == [
        ("twice", ErrorCode.INVALID_REQUEST, "Duplicate topic name.")]


def test_create_topics_manual_assignment(client: RawClient, broker: BrokerProcess) -> None:
    node = client.request(req(DESCRIBE_CLUSTER, 0, "DescribeClusterRequest",
                              include_cluster_authorized_operations=False)).brokers[0].broker_id
    assignments = tuple(req(CREATE_TOPICS, 7, "CreatableReplicaAssignment", partition_index=p, broker_ids=(node,))
                        for p in range(3))
    topic = req(CREATE_TOPICS, 7, "CreatableTopic", name="assigned", num_partitions=-1, replication_factor=-1,
                assignments=assignments, configs=())
    resp = client.request(req(CREATE_TOPICS, 7, "CreateTopicsRequest", topics=(topic,), timeout=TIMEOUT,
                              validate_only=False))
    assert resp.topics[0].error_code == 0 and resp.topics[0].num_partitions == 3
    bad = req(CREATE_TOPICS, 7, "CreatableTopic", name="assigned-bad", num_partitions=-1, replication_factor=-1,
              assignments=(req(CREATE_TOPICS, 7, "CreatableReplicaAssignment", partition_index=0,
                               broker_ids=(node + 7,)),), configs=())
    resp = client.request(req(CREATE_TOPICS, 7, "CreateTopicsRequest", topics=(bad,), timeout=TIMEOUT,
                              validate_only=False))
    assert resp.topics[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_delete_topics_by_name_and_by_id(client: RawClient) -> None:
    create_topic(client, 7, "del-v1")
    resp = client.request(req(DELETE_TOPICS, 1, "DeleteTopicsRequest", topic_names=("del-v1", "del-missing"),
                              timeout=TIMEOUT))
    codes = {r.name: r.error_code for r in resp.responses}
    assert codes == {"del-v1": 0, "del-missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}

    topic_id = create_topic(client, 7, "del-v6").topic_id
    states = (
        req(DELETE_TOPICS, 6, "DeleteTopicState", name=None, topic_id=topic_id),
        req(DELETE_TOPICS, 6, "DeleteTopicState", name=None, topic_id=uuid.uuid4()),
        req(DELETE_TOPICS, 6, "DeleteTopicState", name="x", topic_id=uuid.uuid4()),
    )
    resp = client.request(req(DELETE_TOPICS, 6, "DeleteTopicsRequest", topics=states, timeout=TIMEOUT))
    assert resp.responses[0].error_code == 0 and resp.responses[0].name == "del-v6"
    assert resp.responses[0].topic_id == topic_id
    assert resp.responses[1].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert resp.responses[2].error_code == ErrorCode.INVALID_REQUEST
    assert "del-v6" not in metadata_ids(client)
    # recreate under the same name: a new id
    assert create_topic(client, 7, "del-v6").topic_id not in (topic_id, ZERO)


@pytest.mark.parametrize("version", range(0, 4))
def test_create_partitions_every_version(client: RawClient, version: int) -> None:
    name = f"grow-v{version}"
    create_topic(client, 7, name, 1)
    topic = req(CREATE_PARTITIONS, version, "CreatePartitionsTopic", name=name, count=3, assignments=None)
    resp = client.request(req(CREATE_PARTITIONS, version, "CreatePartitionsRequest", topics=(topic,),
                              timeout=TIMEOUT, validate_only=False))
    assert resp.results[0].error_code == 0
    resp = client.request(req(CREATE_PARTITIONS, version, "CreatePartitionsRequest", topics=(topic,),
                              timeout=TIMEOUT, validate_only=False))
    assert resp.results[0].error_code == ErrorCode.INVALID_PARTITIONS


@pytest.mark.parametrize("version", range(1, 5))
def test_describe_configs_every_version(client: RawClient, version: int) -> None:
    name = f"desc-v{version}"
    create_topic(client, 7, name, 1, {"segment.ms": "60000"})
    resource = req(DESCRIBE_CONFIGS, version, "DescribeConfigsResource", resource_type=2, resource_name=name,
                   configuration_keys=None)
    resp = client.request(req(DESCRIBE_CONFIGS, version, "DescribeConfigsRequest", resources=(resource,),
                              include_synonyms=True, include_documentation=True))
    result = resp.results[0]
    assert result.error_code == 0
    configs = {c.name: c for c in result.configs}
    seg = configs["segment.ms"]
    assert seg.value == "60000" and seg.config_source == 1 and not seg.read_only
    # Kafka lists log.roll.ms's synonyms only (log.roll.hours only after log.roll.ms's own value).
    assert [s.name for s in seg.synonyms] == ["segment.ms"]
    ret = configs["retention.ms"]
    assert ret.value == str(48 * 3600000) and ret.config_source == 5  # DEFAULT_CONFIG, as Kafka says
    if version >= 3:
        assert seg.config_type == 5 and seg.documentation  # LONG
    # without include_synonyms: no synonyms
    resp = client.request(req(DESCRIBE_CONFIGS, version, "DescribeConfigsRequest", resources=(resource,),
                              include_synonyms=False, include_documentation=False))
    assert all(c.synonyms == () for c in resp.results[0].configs)


def test_describe_configs_resource_errors(client: RawClient) -> None:
    resources = (
        req(DESCRIBE_CONFIGS, 4, "DescribeConfigsResource", resource_type=2, resource_name="nope",
            configuration_keys=None),
        req(DESCRIBE_CONFIGS, 4, "DescribeConfigsResource", resource_type=2, resource_name="../x",
            configuration_keys=None),
        req(DESCRIBE_CONFIGS, 4, "DescribeConfigsResource", resource_type=4, resource_name="424242",
            configuration_keys=None),
        req(DESCRIBE_CONFIGS, 4, "DescribeConfigsResource", resource_type=99, resource_name="x",
            configuration_keys=None),
    )
    resp = client.request(req(DESCRIBE_CONFIGS, 4, "DescribeConfigsRequest", resources=resources,
                              include_synonyms=False, include_documentation=False))
    assert [r.error_code for r in resp.results] == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_TOPIC_EXCEPTION,
        ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST,
    ]


def test_incremental_alter_broker_and_duplicates(client: RawClient) -> None:
    create_topic(client, 7, "alter-dup")
    entry = req(INCREMENTAL_ALTER_CONFIGS, 1, "AlterableConfig", name="retention.ms", config_operation=0, value="5")
    topic = req(INCREMENTAL_ALTER_CONFIGS, 1, "AlterConfigsResource", resource_type=2, resource_name="alter-dup",
                configs=(entry,))
    broker_entry = req(INCREMENTAL_ALTER_CONFIGS, 1, "AlterableConfig", name="num.partitions", config_operation=0,
                       value="5")
    broker_res = req(INCREMENTAL_ALTER_CONFIGS, 1, "AlterConfigsResource", resource_type=4, resource_name="",
                     configs=(broker_entry,))
    resp = client.request(req(INCREMENTAL_ALTER_CONFIGS, 1, "IncrementalAlterConfigsRequest",
                              resources=(topic, topic, broker_res), validate_only=False))
    assert [r.error_code for r in resp.responses] == [ErrorCode.INVALID_REQUEST] * 3


@pytest.mark.parametrize("version", range(0, 2))
def test_describe_cluster(client: RawClient, broker: BrokerProcess, version: int) -> None:
    resp = client.request(req(DESCRIBE_CLUSTER, version, "DescribeClusterRequest",
                              include_cluster_authorized_operations=True, endpoint_type=1))
    assert resp.error_code == 0 and resp.cluster_id
    assert [(b.host, b.port) for b in resp.brokers] == [("127.0.0.1", broker.port)]
    assert resp.controller_id == resp.brokers[0].broker_id
    assert resp.cluster_authorized_operations > 0
    if version >= 1:
        resp = client.request(req(DESCRIBE_CLUSTER, 1, "DescribeClusterRequest",
                                  include_cluster_authorized_operations=False, endpoint_type=2))
        assert resp.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE


def produce(bootstrap: str, topic: str, count: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})
    for i in range(count):
        p.produce(topic, value=b"v%d" % i, partition=0)
    assert p.flush(15) == 0


@pytest.mark.parametrize("version", range(1, 5))
def test_describe_log_dirs(client: RawClient, broker: BrokerProcess, version: int) -> None:
    name = f"dirs-v{version}"
    create_topic(client, 7, name, 2)
    produce(broker.bootstrap, name, 5)
    for topics in (None, (req(DESCRIBE_LOG_DIRS, version, "DescribableLogDirTopic", topic=name, partitions=(0,)),)):
        resp = client.request(req(DESCRIBE_LOG_DIRS, version, "DescribeLogDirsRequest", topics=topics))
        assert len(resp.results) == 1
        result = resp.results[0]
        assert result.error_code == 0 and result.log_dir == str(broker.log_dir.resolve())
        parts = {p.partition_index: p for t in result.topics if t.name == name for p in t.partitions}
        assert parts[0].partition_size > 0 and parts[0].offset_lag == 0 and not parts[0].is_future_key
        assert set(parts) == ({0, 1} if topics is None else {0})
        if version >= 4:
            assert result.total_bytes > 0 and result.usable_bytes > 0


@pytest.mark.parametrize("version", range(2, 5))
def test_offset_for_leader_epoch(client: RawClient, broker: BrokerProcess, version: int) -> None:
    name = f"epoch-v{version}"
    create_topic(client, 7, name, 1)
    produce(broker.bootstrap, name, 7)

    def ask(topic: str, epoch: int, current: int = -1) -> Any:
        part = req(OFFSET_FOR_LEADER_EPOCH, version, "OffsetForLeaderPartition", partition=0,
                   current_leader_epoch=current, leader_epoch=epoch)
        t = req(OFFSET_FOR_LEADER_EPOCH, version, "OffsetForLeaderTopic", topic=topic, partitions=(part,))
        resp = client.request(req(OFFSET_FOR_LEADER_EPOCH, version, "OffsetForLeaderEpochRequest", replica_id=-1,
                                  topics=(t,)))
        return resp.topics[0].partitions[0]

    answer = ask(name, 0, 0)
    assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (0, 0, 7)
    answer = ask(name, 3)
    assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (0, -1, -1)
    assert ask(name, 0, current=2).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert ask("epoch-missing", 0).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_topic_ids_and_overrides_survive_restart(tmp_path: Any) -> None:
    with BrokerProcess(log_dir=tmp_path) as b:
        with RawClient(b.bootstrap) as c:
            topic_id = create_topic(c, 7, "durable", 2, {"retention.ms": "5000"}).topic_id
            entry = req(INCREMENTAL_ALTER_CONFIGS, 1, "AlterableConfig", name="segment.ms", config_operation=0,
                        value="90000")
            res = req(INCREMENTAL_ALTER_CONFIGS, 1, "AlterConfigsResource", resource_type=2,
                      resource_name="durable", configs=(entry,))
            resp = c.request(req(INCREMENTAL_ALTER_CONFIGS, 1, "IncrementalAlterConfigsRequest", resources=(res,),
                                 validate_only=False))
            assert resp.responses[0].error_code == 0
        b.restart()
        with RawClient(b.bootstrap) as c:
            assert metadata_ids(c)["durable"] == topic_id
            resource = req(DESCRIBE_CONFIGS, 4, "DescribeConfigsResource", resource_type=2, resource_name="durable",
                           configuration_keys=("retention.ms", "segment.ms"))
            resp = c.request(req(DESCRIBE_CONFIGS, 4, "DescribeConfigsRequest", resources=(resource,),
                                 include_synonyms=False, include_documentation=False))
            values = {e.name: (e.value, e.config_source) for e in resp.results[0].configs}
            assert values == {"retention.ms": ("5000", 1), "segment.ms": ("90000", 1)}
