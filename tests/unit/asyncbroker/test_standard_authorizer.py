"""StandardAuthorizer's rules, one at a time, and its ACL file (asyncbroker.standard_authorizer).

The differential scenarios (tests/oracle/test_authorizer.py) compare whole requests with
Kafka; these pin each rule so that a failure names it.
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from asyncbroker.acl_binding import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    InvalidAclError,
    PatternType,
    ResourceType,
)
from asyncbroker.standard_authorizer import ACLS_FILE, AclFileError, StandardAuthorizer

O, R, P = AclOperation, ResourceType, PatternType
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
HOST = "127.0.0.1"


def acl(name: str, operation: AclOperation, permission: AclPermissionType = ALLOW, *,
        principal: str = "User:alice", host: str = "*", resource: ResourceType = R.TOPIC,
        pattern: PatternType = P.LITERAL) -> AclBinding:
    return AclBinding(resource, name, pattern, principal, host, operation, permission)


def authorizer(tmp_path: Path, *acls: AclBinding, super_users: str = "", allow_everyone: bool = False
               ) -> StandardAuthorizer:
    a = StandardAuthorizer([tmp_path], super_users, allow_everyone)
    a.create(list(acls))
    return a


def may(a: StandardAuthorizer, operation: AclOperation, name: str, principal: str = "User:alice",
        host: str = HOST, resource: ResourceType = R.TOPIC) -> bool:
    return a.authorize(principal, host, operation, resource, name)


def test_no_acl_denies_unless_everyone_is_allowed(tmp_path: Path) -> None:
    assert not may(authorizer(tmp_path), O.READ, "t")
    assert may(authorizer(tmp_path, allow_everyone=True), O.READ, "t")


def test_allow_everyone_stops_at_the_first_acl_on_the_resource(tmp_path: Path) -> None:
    """An ACL for someone else closes the resource to the rest, even with the open default."""
    a = authorizer(tmp_path, acl("t", O.READ, principal="User:bob"), allow_everyone=True)
    assert may(a, O.READ, "t", "User:bob")
    assert not may(a, O.READ, "t")
    assert may(a, O.READ, "other-topic")


def test_super_users_pass_everything(tmp_path: Path) -> None:
    a = authorizer(tmp_path, acl("t", O.ALL, DENY, principal="User:root"), super_users=" User:root ; User:ops")
    assert may(a, O.DELETE, "t", "User:root")
    assert may(a, O.ALTER, CLUSTER_NAME, "User:ops", resource=R.CLUSTER)
    assert not may(a, O.READ, "t", "User:alice")


def test_literal_wildcard_and_prefixed_patterns(tmp_path: Path) -> None:
    a = authorizer(tmp_path, acl("orders", O.READ), acl("pay.", O.WRITE, pattern=P.PREFIXED),
                   acl("*", O.DESCRIBE, principal="User:bob"))
    assert may(a, O.READ, "orders")
    assert not may(a, O.READ, "orders2")  # literal means the whole name
    assert may(a, O.WRITE, "pay.eu") and may(a, O.WRITE, "pay.")
    assert not may(a, O.WRITE, "pay")
    assert may(a, O.DESCRIBE, "anything", "User:bob")
    assert not may(a, O.READ, "orders", resource=R.GROUP)  # another resource type


def test_wildcard_principal_and_hosts(tmp_path: Path) -> None:
    a = authorizer(tmp_path, acl("t", O.READ, principal="User:*"), acl("t", O.WRITE, host="10.0.0.1"))
    assert may(a, O.READ, "t", "User:anyone")
    assert not may(a, O.WRITE, "t")
    assert may(a, O.WRITE, "t", host="10.0.0.1")


def test_cidr_hosts(tmp_path: Path) -> None:
    a = authorizer(tmp_path, acl("t", O.WRITE, host="127.0.0.0/8"), acl("t", O.WRITE, DENY, host="127.0.0.99/32"),
                   acl("v6", O.READ, host="::1/128"), acl("bad", O.READ, host="10.0.0.0/33"))
    assert may(a, O.WRITE, "t", host="127.0.0.1")
    assert not may(a, O.WRITE, "t", host="127.0.0.99")
    assert not may(a, O.WRITE, "t", host="10.1.1.1")
    assert may(a, O.READ, "v6", host="::1") and not may(a, O.READ, "v6", host="127.0.0.1")
    assert not may(a, O.READ, "bad", host="10.0.0.1")  # not a block: matched as written only


def test_deny_wins_over_allow(tmp_path: Path) -> None:
    a = authorizer(tmp_path, acl("t", O.ALL), acl("t", O.WRITE, DENY),
                   acl("secret.", O.READ, DENY, principal="User:*", pattern=P.PREFIXED),
                   acl("secret.x", O.READ))
    assert may(a, O.READ, "t")
    assert not may(a, O.WRITE, "t")
    assert not may(a, O.READ, "secret.x")


def test_implied_operations_come_from_allow_only(tmp_path: Path) -> None:
    """ALLOW READ/WRITE/DELETE/ALTER imply DESCRIBE and ALLOW ALTER_CONFIGS implies
    DESCRIBE_CONFIGS; a DENY implies nothing but denies ALL when it says ALL."""
    for op in (O.READ, O.WRITE, O.DELETE, O.ALTER):
        assert may(authorizer(tmp_path, acl("t", op)), O.DESCRIBE, "t"), op
    assert not may(authorizer(tmp_path, acl("t", O.CREATE)), O.DESCRIBE, "t")
    assert may(authorizer(tmp_path, acl("t", O.ALTER_CONFIGS)), O.DESCRIBE_CONFIGS, "t")
    a = authorizer(tmp_path, acl("t", O.ALL), acl("t", O.READ, DENY))
    assert may(a, O.DESCRIBE, "t") and not may(a, O.READ, "t")
    assert not may(authorizer(tmp_path, acl("t", O.ALL), acl("t", O.ALL, DENY)), O.DESCRIBE, "t")


def test_authorize_by_resource_type(tmp_path: Path) -> None:
    """Some topic may be written: what an idempotent producer without IDEMPOTENT_WRITE needs."""
    assert authorizer(tmp_path, acl("t", O.WRITE)).authorize_by_resource_type("User:alice", HOST, O.WRITE, R.TOPIC)
    assert not authorizer(tmp_path, acl("t", O.READ)).authorize_by_resource_type("User:alice", HOST, O.WRITE, R.TOPIC)
    denied = authorizer(tmp_path, acl("t", O.WRITE), acl("*", O.WRITE, DENY))
    assert not denied.authorize_by_resource_type("User:alice", HOST, O.WRITE, R.TOPIC)
    prefix_denied = authorizer(tmp_path, acl("a.b", O.WRITE), acl("a.", O.WRITE, DENY, pattern=P.PREFIXED))
    assert not prefix_denied.authorize_by_resource_type("User:alice", HOST, O.WRITE, R.TOPIC)
    assert authorizer(tmp_path, allow_everyone=True).authorize_by_resource_type("User:x", HOST, O.WRITE, R.TOPIC)


def test_authorized_operations_bits(tmp_path: Path) -> None:
    a = authorizer(tmp_path, acl("t", O.READ), acl("t", O.ALTER_CONFIGS))
    bits = a.authorized_operations("User:alice", HOST, R.TOPIC, "t")
    assert bits == sum(1 << op for op in (O.READ, O.DESCRIBE, O.DESCRIBE_CONFIGS, O.ALTER_CONFIGS))


def test_filters() -> None:
    orders = acl("orders", O.READ)
    prefixed = acl("ord", O.WRITE, DENY, pattern=P.PREFIXED, principal="User:bob")
    wildcard = acl("*", O.DESCRIBE)

    def f(name: str | None, pattern: PatternType, *, principal: str | None = None,
          operation: AclOperation = O.ANY, permission: AclPermissionType = AclPermissionType.ANY) -> set[str]:
        flt = AclBindingFilter(R.TOPIC, name, pattern, principal, None, operation, permission)
        return {a.resource_name for a in (orders, prefixed, wildcard) if flt.matches(a)}

    assert f("orders", P.LITERAL) == {"orders"}
    assert f("orders", P.ANY) == {"orders"}
    assert f("orders", P.MATCH) == {"orders", "ord", "*"}
    assert f(None, P.MATCH) == {"orders", "ord", "*"}
    assert f(None, P.PREFIXED) == {"ord"}
    assert f(None, P.ANY, principal="User:bob") == {"ord"}
    assert f(None, P.ANY, operation=O.DESCRIBE) == {"*"}
    assert f(None, P.ANY, permission=DENY) == {"ord"}
    assert f(None, P.ANY, operation=O.UNKNOWN) == set()


@pytest.mark.parametrize("binding, message", [
    (acl("my-cluster", O.ALTER, resource=R.CLUSTER), "The only valid name for the CLUSTER resource is kafka-cluster"),
    (acl("", O.READ), "Invalid empty resource name"),
    (acl("t", O.READ, resource=R.UNKNOWN), "Invalid resourceType UNKNOWN"),
    (acl("t", O.READ, pattern=P.UNKNOWN), "Invalid patternType UNKNOWN"),
    (acl("t", O.UNKNOWN), "Invalid operation UNKNOWN"),
    (acl("t", O.READ, AclPermissionType.UNKNOWN), "Invalid permissionType UNKNOWN"),
    (acl("t", O.READ, principal="alice"), "Could not parse principal from `alice`"),
    (acl("t", O.READ, host=""), "Host pattern cannot be null or empty"),
])
def test_invalid_bindings(binding: AclBinding, message: str) -> None:
    with pytest.raises(InvalidAclError, match=message):
        binding.validate()


def test_acls_persist_and_a_broken_file_stops_the_start(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    a = StandardAuthorizer(dirs, "", False)
    a.create([acl("t", O.READ), acl("u", O.WRITE)])
    a.delete([AclBindingFilter(R.TOPIC, "u", P.ANY, None, None, O.ANY, AclPermissionType.ANY)])
    asyncio.run(a.persist(_run_now))
    for d in dirs:
        assert [e["resource_name"] for e in json.loads((d / ACLS_FILE).read_text())] == ["t"]
    assert may(StandardAuthorizer(dirs, "", False), O.READ, "t")
    (dirs[0] / ACLS_FILE).write_text("{not json")
    with pytest.raises(AclFileError, match="does not hold ACLs"):
        StandardAuthorizer(dirs, "", False)


async def _run_now(fn, *args):  # type: ignore[no-untyped-def]
    return fn(*args)
