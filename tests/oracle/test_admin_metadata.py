"""Differential scenarios: ApiVersions, Metadata and DescribeCluster, compared with Kafka 4.4."""

from __future__ import annotations

import uuid

import pytest

from admin_steps import api_versions, create_topics, creatable, describe_cluster, find_coordinator, \
    metadata_all, metadata_topics
from differential import ScenarioRun
from steps import create_topic, wait_for_leaders

pytestmark = pytest.mark.timeout(180)

# -- ApiVersions -------------------------------------------------------------------------

# APIs Kafka 4.4 serves that asyncbroker does not (KD-200): delegation tokens, KRaft,
# reassignment, the share coordinator's state RPCs, streams groups, ...
NOT_SERVED = (
    "write_txn_markers", "alter_replica_log_dirs", "create_delegation_token", "renew_delegation_token", "expire_delegation_token",
    "describe_delegation_token", "elect_leaders", "alter_partition_reassignments", "list_partition_reassignments",
    "describe_quorum", "update_features",
    "unregister_broker", "list_config_resources", "describe_topic_partitions", "add_raft_voter", "remove_raft_voter",
    "initialize_share_group_state", "read_share_group_state", "write_share_group_state",
    "delete_share_group_state", "read_share_group_state_summary", "streams_group_heartbeat",
    "streams_group_describe",
)
# Versions kio (the protocol library) has no schema for, so asyncbroker cannot decode them
# (KD-201): Produce v0-2, DeleteGroups v3, TxnOffsetCommit v6 and two APIs
# newer than kio.
NO_SCHEMA = ("produce", "delete_groups", "txn_offset_commit", "api-93", "api-94")
# Versions kio knows that the handler of another area does not serve yet (KD-202).
NOT_YET_SERVED = ("fetch", "list_offsets")


@pytest.mark.parametrize("version", range(0, 5))
def test_api_versions(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        api_versions(run, version)

    known = {
        "KD-200": {f"0:.api_keys.{name}" for name in NOT_SERVED},
        "KD-201": {f"0:.api_keys.{name}" for name in NO_SCHEMA},
        "KD-202": {f"0:.api_keys.{name}" for name in NOT_YET_SERVED},
    }
    if version >= 3:
        known["KD-203"] = {"0:.supported_features[names]", "0:.finalized_features_epoch",
                           "0:.finalized_features[names]"}
    brokers.compare(scenario, known=known)


# -- Metadata ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 14))
def test_metadata_named_unknown_and_invalid_topics(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """Existing, unknown, invalid, too long and empty names in one request, no auto-creation
    (v0-v3 cannot turn it off, so they ask only for the existing topic)."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "m", partitions=3, record=False)
        if version < 4:
            metadata_topics(run, ["m"], version=version)
        else:
            metadata_topics(run, ["m", "absent", "=bad name!", "=" + "x" * 250, "=", "=.."], version=version)

    brokers.compare(scenario)


@pytest.mark.parametrize("version", [1, 3, 4, 7, 9, 12, 13])
def test_metadata_auto_creates_topics(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """auto.create.topics.enable is on in both: the request that creates the topic answers
    UNKNOWN_TOPIC_OR_PARTITION, later ones see the topic (v0-v3 always allow it)."""
    def scenario(run: ScenarioRun) -> None:
        metadata_topics(run, ["auto"], version=version, auto_create=True, label="creating request")
        wait_for_leaders(run, "auto", 1)
        metadata_topics(run, ["auto"], version=version, auto_create=True, label="after creation")
        # An invalid name is never created.
        metadata_topics(run, ["=bad name"], version=version, auto_create=True, label="invalid name")

    brokers.compare(scenario)


@pytest.mark.parametrize("version", [4, 8, 12, 13])
def test_metadata_without_auto_creation_creates_nothing(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        metadata_topics(run, ["manual"], version=version, auto_create=False)
        create_topic(run, "other", record=False)  # a later condition, so the first request had its chance
        metadata_topics(run, ["manual", "other"], version=version, auto_create=False)

    brokers.compare(scenario)


@pytest.mark.parametrize("version", [0, 1, 5, 9, 10, 12, 13])
def test_metadata_all_topics(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "all-a", partitions=2, record=False)
        create_topic(run, "all-b", partitions=1, record=False)
        metadata_all(run, version)

    brokers.compare(scenario)


@pytest.mark.parametrize("version", range(8, 14))
def test_metadata_authorized_operations(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """No authorizer: every operation allowed, as bit sets, only when asked (cluster ones v8-v10)."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "ops", record=False)
        metadata_topics(run, ["ops", "absent"], version=version, topic_ops=True, cluster_ops=True)
        metadata_topics(run, ["ops"], version=version, topic_ops=False, cluster_ops=True)
        metadata_topics(run, ["ops"], version=version, topic_ops=True, cluster_ops=False)
        metadata_all(run, version, cluster_ops=True, topic_ops=True)

    brokers.compare(scenario)


@pytest.mark.parametrize("version", [10, 11, 12, 13])
def test_metadata_by_topic_id(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "by-id", partitions=2, record=False)
        metadata_topics(run, [run.topic_id("by-id")], version=version, label="known id")
        metadata_topics(run, [uuid.UUID(int=0x1234)], version=version, label="unknown id")
        metadata_topics(run, [None], version=version, label="neither name nor id")

    brokers.compare(scenario)


def test_metadata_internal_topic(brokers) -> None:  # type: ignore[no-untyped-def]
    """__consumer_offsets (created by FindCoordinator when missing) is flagged internal."""
    def scenario(run: ScenarioRun) -> None:
        find_coordinator(run, "g")
        run.wait_until(lambda: _offsets_topic_ready(run), "__consumer_offsets")
        for version in (1, 9, 12):
            metadata_topics(run, ["=__consumer_offsets"], version=version)

    brokers.compare(scenario)


def test_transaction_state_topic(brokers) -> None:  # type: ignore[no-untyped-def]
    """__transaction_state (created by the first transaction coordinator lookup): its
    partitions, the internal flag and the topic configs Kafka gives it."""
    import txn_steps as ts
    from admin_steps import describe_configs

    def scenario(run: ScenarioRun) -> None:
        ts.wait_for_coordinator(run)
        for version in (1, 12):
            metadata_topics(run, ["=__transaction_state"], version=version)
        describe_configs(run, [(2, "=__transaction_state", ["cleanup.policy", "compression.type", "segment.bytes",
                                                             "min.insync.replicas",
                                                             "unclean.leader.election.enable"])])

    brokers.compare(scenario)


def _offsets_topic_ready(run: ScenarioRun) -> bool:
    t = metadata_topics(run, ["=__consumer_offsets"], record=False).topics[0]
    return t.error_code.value == 0 and all(p.leader_id >= 0 for p in t.partitions) and len(t.partitions) == 50


def test_metadata_after_create_topics_with_assignment_and_configs(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topics(run, [creatable(run, "assigned", -1, assignments=[[1], [1], [1]]),
                            creatable(run, "compacted", 2, configs={"cleanup.policy": "compact"})], label="create")
        metadata_topics(run, ["assigned", "compacted"], version=12)

    brokers.compare(scenario)


# -- DescribeCluster ---------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 3))
def test_describe_cluster(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        describe_cluster(run, version, cluster_ops=True, label="with operations")
        describe_cluster(run, version, cluster_ops=False, label="without operations")
        describe_cluster(run, version, endpoint_type=2, label="controller endpoint")
        describe_cluster(run, version, endpoint_type=3, label="unknown endpoint type")
        describe_cluster(run, version, fenced=True, label="fenced brokers too")

    brokers.compare(scenario)


def test_versions_a_broker_does_not_serve(brokers) -> None:  # type: ignore[no-untyped-def]
    """An ApiVersions version too new gets a v0 answer with UNSUPPORTED_VERSION and
    ApiVersions' own range only (KIP-511); any other API at a version or key the broker does
    not serve closes the connection."""
    import struct

    from kio.schema.index import api_key_map

    from wire.messages import decode_response

    def scenario(run: ScenarioRun) -> None:
        conn = run.connect()
        conn.send_raw(18, 99, b"\x00")
        frame = conn._recv_exact(struct.unpack(">i", conn._recv_exact(4))[0])
        answer = decode_response(18, 0, frame[4:])
        run.note("ApiVersions v99", {"error_code": answer.error_code, "api_keys": {
            api_key_map[a.api_key]: f"{a.min_version}..{a.max_version}" for a in answer.api_keys}})
        for api_key, version in ((3, 14), (19, 99), (250, 0)):
            conn = run.connect()
            conn.send_raw(api_key, version, b"\x00")
            run.note(f"api {api_key} v{version}: connection closed", conn.closed_by_peer(5.0))

    brokers.compare(scenario)


def _compact(text: str | None) -> bytes:
    """A compact (flexible-version) string, null for None."""
    return b"\x00" if text is None else bytes([len(text.encode()) + 1]) + text.encode()


def test_raw_api_versions_and_metadata_bodies(brokers) -> None:  # type: ignore[no-untyped-def]
    """A client's first two requests as raw bodies, read by the hand-written decoders: tags the
    schemas do not define (skipped), client software names Kafka's ApiVersionsRequest.isValid
    refuses (INVALID_REQUEST), nulls the schemas forbid, a boolean byte other than 0 and 1, and a
    body cut inside its tags (the connection closes)."""
    import struct

    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=1, record=False)
        for version in (3, 4):
            for label, body in (
                    ("unknown tags", _compact("oracle") + _compact("1.0") + b"\x02\x05\x01a\x40\x00"),
                    ("a name with a space", _compact("bad name") + _compact("1.0") + b"\x00"),
                    ("a version ending in a dot", _compact("oracle") + _compact("1.") + b"\x00"),
                    ("an empty name", _compact("") + _compact("1.0") + b"\x00")):
                conn = run.connect()
                answer = conn.receive(18, version, conn.send_raw(18, version, body))
                if answer.error_code:  # the whole (short) answer
                    run.record(f"ApiVersions v{version} with {label}", None, answer)
                else:  # a served request: which APIs it lists is test_api_versions' subject
                    run.note(f"ApiVersions v{version} with {label}", {"lists apis": bool(answer.api_keys)})
            conn = run.connect()
            conn.send_raw(18, version, b"\x00" + _compact("1.0") + b"\x00")
            run.note(f"ApiVersions v{version} with a null name: connection closed", conn.closed_by_peer(5))
        name = run.topic("t").encode()
        for version in (9, 12):
            fresh = run.topic(f"fresh-{version}").encode()  # (Kafka creates it after its answer)
            topic_id = uuid.UUID(int=0).bytes if version >= 10 else b""
            ops = b"\x00" if version <= 10 else b""  # include_cluster_authorized_operations (v8-10)
            body = (b"\x02" + topic_id + _compact(name.decode()) + b"\x01\x07\x02ab"  # a topic with a tag
                    + b"\x00" + ops + b"\x00" + b"\x02\x09\x00\x0b\x01z")  # no auto creation; the request's tags
            cid = run.conn.send_raw(3, version, body)
            run.record(f"Metadata v{version} with unknown tags", None, run.conn.receive(3, version, cid))
            body = b"\x02" + topic_id + _compact(fresh.decode()) + b"\x00" + b"\x02" + ops + b"\x00" + b"\x00"
            cid = run.conn.send_raw(3, version, body)
            run.record(f"Metadata v{version} with allow_auto_topic_creation byte 2", None,
                       run.conn.receive(3, version, cid))
            conn = run.connect()
            conn.send_raw(3, version, body[:-1])
            run.note(f"Metadata v{version} cut inside its tags: connection closed", conn.closed_by_peer(5))
        conn = run.connect()
        conn.send_raw(3, 0, struct.pack(">i", -1))
        run.note("Metadata v0 with a null topic array: connection closed", conn.closed_by_peer(5))

    brokers.compare(scenario)


def test_api_versions_v5_names_the_cluster_and_node(brokers) -> None:  # type: ignore[no-untyped-def]
    """KIP-1242 (ApiVersions v5): a client names the cluster and the broker it means to reach.
    Both right, or neither named: the usual answer. Another cluster or node: REBOOTSTRAP_REQUIRED.
    Only one of the two: INVALID_REQUEST. (kio has no v5 schema: raw bodies, the answers read
    as v4's, whose layout v5 keeps.)"""
    import struct

    from steps import METADATA

    def scenario(run: ScenarioRun) -> None:
        meta = run.call(METADATA, 12, _record=False, topics=(), allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False)
        cluster, node = meta.cluster_id, meta.brokers[0].node_id
        for label, cluster_id, node_id in (
                ("neither", None, -1), ("both right", cluster, node), ("another cluster", "AAAAAAAAAAAAAAAAAAAAAA", node),
                ("another node", cluster, node + 5), ("the cluster only", cluster, -1), ("the node only", None, node)):
            conn = run.connect()
            body = _compact("oracle") + _compact("1.0") + _compact(cluster_id) + struct.pack(">i", node_id) + b"\x00"
            answer = conn.receive(18, 4, conn.send_raw(18, 5, body))
            if answer.error_code:
                run.record(f"ApiVersions v5, {label}", None, answer)
            else:
                served = {a.api_key: (a.min_version, a.max_version) for a in answer.api_keys}
                run.note(f"ApiVersions v5, {label}", {"ApiVersions": served[18]})
            run.note(f"ApiVersions v5, {label}: connection closed", conn.closed_by_peer(0.5))

    brokers.compare(scenario)
