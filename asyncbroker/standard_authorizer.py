"""StandardAuthorizer: Kafka's ACL rules, and this node's ACLs kept durably.

Turned on by `authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer`.
A request's principal, from its client's address, is allowed an operation on a resource when:
1. the principal is one of `super.users`; else
2. no ACL that applies to the resource (its LITERAL name, the LITERAL wildcard "*", or a
   PREFIXED pattern the name starts with) DENYs it to the principal (or to "User:*") from that
   host (or "*", or a CIDR block holding it) for that operation (or ALL); and
3. one such ACL ALLOWs it, where an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE
   and an ALLOW of ALTER_CONFIGS also allows DESCRIBE_CONFIGS (a DENY implies nothing); or
4. no ACL applies to the resource at all, for any principal, and
   `allow.everyone.if.no.acl.found` is true.

Kafka keeps ACLs in its metadata log (AccessControlEntryRecord). Here they go to
`asyncbroker-acls.json` in every log directory, written atomically on every change, like the
SCRAM credentials; the newest copy wins at startup.
"""
from __future__ import annotations

import functools
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path

import msgspec

from storage.cluster_metadata import first_cluster_metadata

from asyncbroker.acl_binding import (
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    member_of,
)
from asyncbroker.log_dir_file import AsyncLogDirFile

__all__ = ["STANDARD_AUTHORIZER", "ACLS_FILE", "AclFileError", "StandardAuthorizer", "parse_super_users"]

log = logging.getLogger(__name__)
# Kafka logs each decision on kafka.authorizer.logger: denials at INFO, grants at DEBUG.
audit_log = logging.getLogger("kafka.authorizer.logger")

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ACLS_FILE = "asyncbroker-acls.json"

_O = AclOperation
_IMPLIES_DESCRIBE = frozenset((_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER))
_IMPLIES_DESCRIBE_CONFIGS = frozenset((_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS))
_ALLOW, _DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


class AclFileError(RuntimeError):
    """A log directory's ACL file cannot be read: the broker does not start."""


def parse_super_users(value: str) -> frozenset[str]:
    """`super.users`: principals separated by semicolons, blanks around them ignored."""
    return frozenset(p.strip() for p in value.split(";") if p.strip())


@functools.lru_cache(maxsize=1024)
def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    if "/" not in text:
        return None
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _in_range(host: str, acl_host: str) -> bool:
    """Whether an ACL's host, written as a CIDR block ("10.0.0.0/8"), covers the address (Kafka
    4.4 matches such hosts as ranges)."""
    network = _network(acl_host)
    if network is None:
        return False
    try:
        return ipaddress.ip_address(host) in network
    except ValueError:
        return False


def _grants(acl: AclBinding, operation: AclOperation) -> bool:
    """Whether `acl` speaks about `operation` (the ACL's principal, host and resource already match)."""
    if acl.operation is _O.ALL or acl.operation == operation:
        return True
    if acl.permission_type is not _ALLOW:
        return False
    if operation is _O.DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    return operation is _O.DESCRIBE_CONFIGS and acl.operation in _IMPLIES_DESCRIBE_CONFIGS


def _resource_name(resource_type: ResourceType) -> str:
    """As Kafka's audit log names a resource type (Topic, Group, Cluster, TransactionalId)."""
    return "".join(part.title() for part in resource_type.name.split("_"))


class StandardAuthorizer:
    """The ACLs of this node and the decisions made from them.

    ACLs are indexed by (resource type, pattern type, name), so that a decision looks at the
    literal name, the wildcard and each prefix of the name: a few dict lookups, however many
    ACLs there are.
    """

    def __init__(self, log_dirs: Sequence[str | Path], super_users: str, allow_everyone_if_no_acl_found: bool) -> None:
        self.log_dirs = [Path(d) for d in log_dirs]
        self._file = AsyncLogDirFile(self.log_dirs, ACLS_FILE)
        self.super_users = parse_super_users(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._acls: set[AclBinding] = set(self._read())
        self._by_resource: dict[tuple[ResourceType, PatternType, str], list[AclBinding]] = {}
        # The lengths of the PREFIXED names per resource type: a name is checked against each.
        self._prefix_lengths: dict[ResourceType, set[int]] = {}
        self._reindex()

    # -- decisions

    def authorize(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str, *, log_denial: bool = True) -> bool:
        if principal in self.super_users:
            return True
        found_resource_acl = False
        allowed = False
        for acl in self._applicable(resource_type, name):
            found_resource_acl = True
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.host != WILDCARD and acl.host != host and not _in_range(host, acl.host):
                continue
            if not _grants(acl, operation):
                continue
            if acl.permission_type is _DENY:
                self._audit(False, principal, host, operation, resource_type, name, log_denial)
                return False
            allowed = True
        if not found_resource_acl:
            allowed = self.allow_everyone_if_no_acl_found
        self._audit(allowed, principal, host, operation, resource_type, name, log_denial)
        return allowed

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """Whether some resource of the type may be operated on (Kafka's
        authorizeByResourceType, as InitProducerId asks of WRITE on any topic): an ALLOW for
        the principal that no DENY of the same reach cancels."""
        if principal in self.super_users:
            return True
        matching = [a for a in self._acls if a.resource_type == resource_type
                    and a.principal in (principal, WILDCARD_PRINCIPAL)
                    and (a.host in (host, WILDCARD) or _in_range(host, a.host))
                    and (a.operation is _O.ALL or a.operation == operation)]
        if not any(a.resource_type == resource_type for a in self._acls):
            return self.allow_everyone_if_no_acl_found
        denies = [a for a in matching if a.permission_type is _DENY]
        if any(d.pattern_type is PatternType.LITERAL and d.resource_name == WILDCARD for d in denies):
            return False

        def denied(allow: AclBinding) -> bool:
            for d in denies:
                if d.pattern_type is PatternType.PREFIXED and allow.resource_name.startswith(d.resource_name):
                    return True
                if (d.pattern_type is PatternType.LITERAL and allow.pattern_type is PatternType.LITERAL
                        and d.resource_name == allow.resource_name):
                    return True
            return False

        return any(not denied(a) for a in matching if a.permission_type is _ALLOW)

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType, name: str) -> int:
        """The bit field of the operations `principal` may perform on the resource (the
        `*_authorized_operations` fields of Metadata, DescribeGroups and DescribeCluster)."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[resource_type]:
            if self.authorize(principal, host, op, resource_type, name, log_denial=False):
                bits |= 1 << int(op)
        return bits

    def _applicable(self, resource_type: ResourceType, name: str) -> Iterable[AclBinding]:
        by_resource = self._by_resource
        yield from by_resource.get((resource_type, PatternType.LITERAL, name), ())
        if name != WILDCARD:
            yield from by_resource.get((resource_type, PatternType.LITERAL, WILDCARD), ())
        for length in self._prefix_lengths.get(resource_type, ()):
            if length <= len(name):
                yield from by_resource.get((resource_type, PatternType.PREFIXED, name[:length]), ())

    def _audit(self, allowed: bool, principal: str, host: str, operation: AclOperation,
               resource_type: ResourceType, name: str, log_denial: bool) -> None:
        if allowed:
            if audit_log.isEnabledFor(logging.DEBUG):
                audit_log.debug("Principal = %s is Allowed operation = %s from host = %s on resource = %s:%s",
                                principal, operation.name, host, _resource_name(resource_type), name)
        elif log_denial:
            audit_log.info("Principal = %s is Denied operation = %s from host = %s on resource = %s:%s",
                           principal, operation.name, host, _resource_name(resource_type), name)

    # -- the ACLs themselves (CreateAcls, DescribeAcls, DeleteAcls)

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return sorted(a for a in self._acls if acl_filter.matches(a))

    def create(self, bindings: Sequence[AclBinding]) -> None:
        """Add ACLs (one already there is kept once); `persist` makes the change durable."""
        self._acls.update(bindings)
        self._reindex()
        for acl in bindings:
            log.info("Added ACL %s", acl)

    def delete(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove the ACLs each filter matches and return them per filter (an ACL two filters
        match is listed under both, as Kafka does); `persist` makes the change durable."""
        removed = [self.acls(f) for f in filters]
        gone = {a for acls in removed for a in acls}
        if gone:
            self._acls -= gone
            self._reindex()
            for acl in sorted(gone):
                log.info("Removed ACL %s", acl)
        return removed

    async def persist(self, run_blocking: Callable[..., Awaitable[None]]) -> None:
        """Write the ACLs as they are now to every log directory, off the loop."""
        await self._file.persist(lambda: msgspec.json.format(msgspec.json.encode(sorted(self._acls)), indent=1),
                                 run_blocking)

    def _reindex(self) -> None:
        self._by_resource = {}
        self._prefix_lengths = {}
        for acl in self._acls:
            self._by_resource.setdefault((acl.resource_type, acl.pattern_type, acl.resource_name), []).append(acl)
            if acl.pattern_type is PatternType.PREFIXED:
                self._prefix_lengths.setdefault(acl.resource_type, set()).add(len(acl.resource_name))

    def _read(self) -> list[AclBinding]:
        for path, data in self._file.copies():
            try:
                return msgspec.json.decode(data, type=list[AclBinding])
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                # Never start without ACLs that were granted or denied: that could open what they close.
                raise AclFileError(f"{path} does not hold ACLs ({exc}); restore it from another log "
                                   "directory or a backup, or remove it to start with no ACLs") from exc
        # No ACL file: a directory Kafka wrote keeps its ACLs in the metadata log.
        image = first_cluster_metadata(self.log_dirs)
        if image is None:
            return []
        return [AclBinding(member_of(ResourceType, a.resource_type), a.resource_name,
                           member_of(PatternType, a.pattern_type), a.principal, a.host,
                           member_of(AclOperation, a.operation), member_of(AclPermissionType, a.permission_type))
                for a in image.acls.values()]
