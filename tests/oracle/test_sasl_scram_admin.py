"""Differential scenarios: SCRAM credentials through AlterUserScramCredentials and
DescribeUserScramCredentials (Kafka keeps them without any SASL listener), and the SASL
requests sent to a PLAINTEXT listener, where they are out of place."""

from __future__ import annotations

import hashlib

import pytest

from differential import ScenarioRun, entity

pytestmark = pytest.mark.timeout(120)

SASL_HANDSHAKE, SASL_AUTHENTICATE, DESCRIBE_SCRAM, ALTER_SCRAM = 17, 36, 50, 51
SHA256, SHA512 = 1, 2


def upsertion(run: ScenarioRun, user: str, mechanism: int, iterations: int, password: str = "secret") -> object:
    salt = b"0123456789abcdef"
    salted = hashlib.pbkdf2_hmac("sha256" if mechanism == SHA256 else "sha512", password.encode(), salt,
                                 max(1, iterations))
    return entity(ALTER_SCRAM, 0, "ScramCredentialUpsertion", name=run.topic(user), mechanism=mechanism,
                  iterations=iterations, salt=salt, salted_password=salted)


def deletion(run: ScenarioRun, user: str, mechanism: int) -> object:
    return entity(ALTER_SCRAM, 0, "ScramCredentialDeletion", name=run.topic(user), mechanism=mechanism)


def alter(run: ScenarioRun, deletions: tuple[object, ...], upsertions: tuple[object, ...]) -> None:
    run.call(ALTER_SCRAM, 0, deletions=deletions, upsertions=upsertions)


def describe(run: ScenarioRun, users: list[str]) -> None:
    run.call(DESCRIBE_SCRAM, 0, users=tuple(entity(DESCRIBE_SCRAM, 0, "UserName", name=run.topic(u)) for u in users))


def test_scram_credentials_admin(brokers) -> None:  # type: ignore[no-untyped-def]
    """Add, describe, replace, delete; and each per-user failure: too few and too many
    iterations, an unknown mechanism, a user altered twice, deleting what is not there,
    describing an unknown user or one named twice."""
    def scenario(run: ScenarioRun) -> None:
        alter(run, (), (upsertion(run, "alice", SHA256, 4096), upsertion(run, "alice", SHA512, 8192),
                        upsertion(run, "bob", SHA256, 4096)))
        describe(run, ["alice", "bob"])
        alter(run, (), (upsertion(run, "carol", SHA256, 1000), upsertion(run, "dave", SHA256, 20000),
                        upsertion(run, "erin", 0, 4096), upsertion(run, "bob", SHA256, 5000),
                        upsertion(run, "bob", SHA256, 6000)))
        alter(run, (deletion(run, "alice", SHA512), deletion(run, "frank", SHA256)),
              (upsertion(run, "alice", SHA256, 10000), upsertion(run, "gina", SHA512, 4096)))
        # A deletion and an upsertion of one user, in different mechanisms: still twice.
        alter(run, (deletion(run, "gina", SHA512),), (upsertion(run, "gina", SHA256, 4096),))
        describe(run, ["alice", "bob", "carol", "alice"])
        alter(run, (deletion(run, "alice", SHA256), deletion(run, "bob", SHA256)), ())
        describe(run, ["alice", "bob", "gina"])

    brokers.compare(scenario)


@pytest.mark.parametrize("version", range(0, 3))
def test_sasl_requests_on_a_plaintext_listener(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        run.call(SASL_AUTHENTICATE, version, auth_bytes=b"\x00alice\x00secret")
        if version == 1:
            run.call(SASL_HANDSHAKE, 1, mechanism="PLAIN")

    brokers.compare(scenario)
