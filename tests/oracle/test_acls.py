"""Differential scenarios: the ACL APIs on a broker without an authorizer (Kafka's default,
`authorizer.class.name` empty): listed in ApiVersions, answering SECURITY_DISABLED."""

from __future__ import annotations

import pytest

from differential import ScenarioRun, entity

pytestmark = pytest.mark.timeout(120)

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
# ResourceType TOPIC, PatternType LITERAL / ANY, AclOperation READ / ANY, AclPermissionType ALLOW / ANY
TOPIC, LITERAL, ANY_PATTERN, READ, ANY_OPERATION, ALLOW, ANY_PERMISSION = 2, 3, 1, 3, 1, 3, 1


@pytest.mark.parametrize("version", range(1, 4))
def test_acl_apis_without_an_authorizer(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """Describe with a match-anything filter, create two bindings, delete by two filters."""
    def scenario(run: ScenarioRun) -> None:
        run.call(DESCRIBE_ACLS, version, resource_type_filter=TOPIC, resource_name_filter=None,
                 pattern_type_filter=ANY_PATTERN, principal_filter=None, host_filter=None,
                 operation=ANY_OPERATION, permission_type=ANY_PERMISSION)
        creations = tuple(
            entity(CREATE_ACLS, version, "AclCreation", resource_type=TOPIC, resource_name=name,
                   resource_pattern_type=LITERAL, principal="User:alice", host="*", operation=READ,
                   permission_type=ALLOW)
            for name in ("orders", "payments"))
        run.call(CREATE_ACLS, version, creations=creations)
        filters = tuple(
            entity(DELETE_ACLS, version, "DeleteAclsFilter", resource_type_filter=TOPIC, resource_name_filter=name,
                   pattern_type_filter=ANY_PATTERN, principal_filter=None, host_filter=None,
                   operation=ANY_OPERATION, permission_type=ANY_PERMISSION)
            for name in ("orders", None))
        run.call(DELETE_ACLS, version, filters=filters)

    brokers.compare(scenario)
