"""Differential scenarios: SCRAM credentials through AlterUserScramCredentials and
DescribeUserScramCredentials (Kafka keeps them without any SASL listener), and the SASL
requests sent to a PLAINTEXT listener, where they are out of place."""

from __future__ import annotations

import hashlib
from typing import Any

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


class Credentials:
    """AlterUserScramCredentials and DescribeUserScramCredentials, and the credentials each user
    should have after the alterations answered so far.

    Kafka answers an alteration once its controller has committed it, but describes credentials
    from the broker's metadata image, which can lag behind: under load it once described a user
    it had just added as not existing. So before a recorded Describe, the run on Kafka waits until
    an unrecorded one shows every alteration answered so far. asyncbroker is not waited for: it
    shows them at once, and a difference there is the transcripts' to show.
    """

    def __init__(self, run: ScenarioRun) -> None:
        self.run = run
        self.expected: dict[str, dict[int, int]] = {}  # user -> mechanism -> iterations

    def alter(self, deletions: tuple[Any, ...], upsertions: tuple[Any, ...]) -> None:
        answer = self.run.call(ALTER_SCRAM, 0, deletions=deletions, upsertions=upsertions)
        done = {r.user for r in answer.results if r.error_code.value == 0}
        for d in deletions:
            if d.name in done:
                self.expected.setdefault(d.name, {}).pop(d.mechanism, None)
        for u in upsertions:
            if u.name in done:
                self.expected.setdefault(u.name, {})[u.mechanism] = u.iterations

    def describe(self, users: list[str]) -> None:
        if self.run.broker == "kafka" and self.expected:
            self.run.wait_until(self._shown, "the broker's metadata image shows every alteration answered")
        self.run.call(DESCRIBE_SCRAM, 0, users=tuple(entity(DESCRIBE_SCRAM, 0, "UserName", name=self.run.topic(u))
                                                     for u in users))

    def _shown(self) -> bool:
        answer = self.run.call(DESCRIBE_SCRAM, 0, _record=False, users=tuple(
            entity(DESCRIBE_SCRAM, 0, "UserName", name=name) for name in self.expected))
        shown = {r.user: {c.mechanism: c.iterations for c in r.credential_infos} for r in answer.results}
        return all(shown.get(name) == credentials for name, credentials in self.expected.items())


def test_scram_credentials_admin(brokers) -> None:  # type: ignore[no-untyped-def]
    """Add, describe, replace, delete; and each per-user failure: too few and too many
    iterations, an unknown mechanism, a user altered twice, deleting what is not there,
    describing an unknown user or one named twice."""
    def scenario(run: ScenarioRun) -> None:
        scram = Credentials(run)
        scram.alter((), (upsertion(run, "alice", SHA256, 4096), upsertion(run, "alice", SHA512, 8192),
                         upsertion(run, "bob", SHA256, 4096)))
        scram.describe(["alice", "bob"])
        scram.alter((), (upsertion(run, "carol", SHA256, 1000), upsertion(run, "dave", SHA256, 20000),
                         upsertion(run, "erin", 0, 4096), upsertion(run, "bob", SHA256, 5000),
                         upsertion(run, "bob", SHA256, 6000)))
        scram.alter((deletion(run, "alice", SHA512), deletion(run, "frank", SHA256)),
                    (upsertion(run, "alice", SHA256, 10000), upsertion(run, "gina", SHA512, 4096)))
        # A deletion and an upsertion of one user, in different mechanisms: still twice.
        scram.alter((deletion(run, "gina", SHA512),), (upsertion(run, "gina", SHA256, 4096),))
        scram.describe(["alice", "bob", "carol", "alice"])
        scram.alter((deletion(run, "alice", SHA256), deletion(run, "bob", SHA256)), ())
        scram.describe(["alice", "bob", "gina"])

    brokers.compare(scenario)


@pytest.mark.parametrize("version", range(0, 3))
def test_sasl_requests_on_a_plaintext_listener(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        run.call(SASL_AUTHENTICATE, version, auth_bytes=b"\x00alice\x00secret")
        if version == 1:
            run.call(SASL_HANDSHAKE, 1, mechanism="PLAIN")

    brokers.compare(scenario)
