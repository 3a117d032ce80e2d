"""AclBinding and AclBindingFilter: one ACL, and the filter that DescribeAcls and DeleteAcls
match ACLs with, as Kafka's org.apache.kafka.common.acl defines them.

An ACL says that a principal ("User:alice", or "User:*" for everyone) from a host (an address,
or "*") is ALLOWed or DENYed one operation on the resources a pattern names: LITERAL (that name,
or "*" for every resource of the type) or PREFIXED (every name that starts with it). The ids of
the enums are the protocol's; the names are those kafka-acls.sh prints.
"""
from __future__ import annotations

import enum
from typing import TypeVar

import msgspec

__all__ = [
    "UNKNOWN", "WILDCARD", "WILDCARD_PRINCIPAL", "CLUSTER_NAME", "ResourceType", "PatternType", "AclOperation",
    "AclPermissionType", "AclBinding", "AclBindingFilter", "SUPPORTED_OPERATIONS", "EVERY_OPERATION",
    "AUTHORIZED_OPERATIONS_OMITTED", "InvalidAclError", "binding_of",
    "filter_of", "member_of",
]

_E = TypeVar("_E", bound=enum.IntEnum)

# The code of every enum's UNKNOWN: a request carrying it cannot be parsed by Kafka.
UNKNOWN = 0
# A LITERAL resource name that matches every resource of its type, and a host that matches any host.
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
# The one cluster resource's name.
CLUSTER_NAME = "kafka-cluster"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only: LITERAL and PREFIXED ACLs whose name equals the filter's
    MATCH = 2  # filters only: every ACL that would apply to the named resource
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_O = AclOperation
# The operations each resource type supports (Kafka's ResourceType/AclEntry.supportedOperations):
# an ACL for another operation is refused, and an authorized-operations bit field lists these.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS,
                         _O.ALTER_CONFIGS),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE,
                           _O.ALTER, _O.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE, _O.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}
EVERY_OPERATION: dict[ResourceType, int] = {
    rt: sum(1 << op for op in ops) for rt, ops in SUPPORTED_OPERATIONS.items()}
"""The authorized-operations bit field when every operation is allowed (no authorizer)."""
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
"""An authorized-operations field the request did not ask for (Java's Integer.MIN_VALUE)."""


class InvalidAclError(ValueError):
    """A binding CreateAcls must refuse (INVALID_REQUEST), with Kafka's reason."""


class AclBinding(msgspec.Struct, frozen=True, order=True):
    """One ACL. Ordered so that listings come out in a stable order."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def validate(self) -> None:
        """Kafka's checks of a new ACL: the broker's (AclApis) first, then the controller's
        (AclControlManager), each with its message. A code Kafka does not know reads as UNKNOWN."""
        if self.resource_type is ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise InvalidAclError("The only valid name for the CLUSTER resource is " + CLUSTER_NAME)
        if not self.resource_name:
            raise InvalidAclError("Invalid empty resource name")
        if self.resource_type is ResourceType.UNKNOWN:
            raise InvalidAclError("Invalid resourceType UNKNOWN")
        if self.pattern_type is PatternType.UNKNOWN:
            raise InvalidAclError("Invalid patternType UNKNOWN")
        if self.operation is AclOperation.UNKNOWN:
            raise InvalidAclError("Invalid operation UNKNOWN")
        if self.permission_type is AclPermissionType.UNKNOWN:
            raise InvalidAclError("Invalid permissionType UNKNOWN")
        if ":" not in self.principal:
            raise InvalidAclError(f"Could not parse principal from `{self.principal}` (no colon is present "
                                  "separating the principal type from the principal name)")
        if not self.host:
            raise InvalidAclError("Host pattern cannot be null or empty")

    def is_unspecific(self) -> bool:
        """Whether it holds a value only filters may hold (ANY, MATCH): Kafka cannot even
        build such a binding, and fails the whole CreateAcls request (UNKNOWN_SERVER_ERROR)."""
        return (self.resource_type is ResourceType.ANY or self.pattern_type in (PatternType.ANY, PatternType.MATCH)
                or self.operation is AclOperation.ANY or self.permission_type is AclPermissionType.ANY)


class AclBindingFilter(msgspec.Struct, frozen=True):
    """What DescribeAcls and DeleteAcls select: None (a null string on the wire) matches any
    name, principal or host; the ANY enum values match any value."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if not self._matches_pattern(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission_type is AclPermissionType.ANY or self.permission_type == acl.permission_type

    def _matches_pattern(self, acl: AclBinding) -> bool:
        if self.pattern_type is PatternType.MATCH:
            # Every ACL that applies to the named resource: its literal name, the wildcard, and
            # each prefix of it (Kafka's ResourcePatternFilter with MATCH).
            if self.resource_name is None:
                return True
            if acl.pattern_type is PatternType.LITERAL:
                return acl.resource_name in (self.resource_name, WILDCARD)
            return acl.pattern_type is PatternType.PREFIXED and self.resource_name.startswith(acl.resource_name)
        if self.pattern_type is not PatternType.ANY and self.pattern_type != acl.pattern_type:
            return False
        return self.resource_name is None or self.resource_name == acl.resource_name

    def unknown_part(self) -> str | None:
        """Why the controller refuses this DeleteAcls filter (AclControlManager.validateFilter),
        in its words; None when it takes it."""
        if self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation is AclOperation.UNKNOWN or self.permission_type is AclPermissionType.UNKNOWN:
            return "Unknown entryFilter."
        return None


def member_of(enum_type: type[_E], code: int) -> _E:
    """An enum member from its wire code; a code Kafka does not know reads as UNKNOWN (0), as
    Kafka's fromCode does."""
    try:
        return enum_type(int(code))
    except ValueError:
        return enum_type(0)


def binding_of(resource_type: int, resource_name: str, pattern_type: int, principal: str, host: str,
               operation: int, permission_type: int) -> AclBinding:
    """An ACL from the fields of a CreateAcls creation."""
    return AclBinding(member_of(ResourceType, resource_type), resource_name, member_of(PatternType, pattern_type),
                      principal, host, member_of(AclOperation, operation), member_of(AclPermissionType, permission_type))


def filter_of(resource_type: int, resource_name: str | None, pattern_type: int, principal: str | None,
              host: str | None, operation: int, permission_type: int) -> AclBindingFilter:
    """A filter from the fields of a DescribeAcls request or a DeleteAcls filter."""
    return AclBindingFilter(member_of(ResourceType, resource_type), resource_name, member_of(PatternType, pattern_type),
                            principal, host, member_of(AclOperation, operation),
                            member_of(AclPermissionType, permission_type))
