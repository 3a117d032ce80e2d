"""The web console over a real in-process Broker with SASL users and ACLs (authorizer.class.name):
a login checked against the broker's PLAIN users and SCRAM credentials, and pages and forms
that show and change only what the principal's ACLs allow, as Kafka's APIs would."""

from __future__ import annotations

import base64
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient

from asyncbroker.acl_binding import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from asyncbroker.broker import Broker
from asyncbroker.console import actions
from asyncbroker.scram_credentials import ScramCredential
from console_testlib import started_broker

pytestmark = pytest.mark.timeout(60)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_alice="alice-secret";')


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with started_broker(
            tmp_path, "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:admin",
            "group.initial.rebalance.delay.ms=0") as b:
        await b.run_blocking(b.scram_credentials.apply,
                             {("bob", "SCRAM-SHA-256"): ScramCredential.from_password("sha256", "bob-secret")}, set())
        yield b


def basic(user: str, password: str | None = None) -> dict[str, str]:
    creds = f"{user}:{password or user + '-secret'}".encode()
    return {"Authorization": "Basic " + base64.b64encode(creds).decode()}


def allow(resource: ResourceType, name: str, operation: AclOperation, user: str = "alice",
          pattern: PatternType = PatternType.LITERAL) -> AclBinding:
    return AclBinding(resource, name, pattern, f"User:{user}", "*", operation, AclPermissionType.ALLOW)


async def token(client: TestClient[object, object], headers: dict[str, str], path: str) -> str:
    html = await (await client.get(path, headers=headers)).text()
    m = re.search(r'<meta name="csrf-token" content="([^"]+)">', html)
    assert m is not None, html
    return m.group(1)


async def test_login_with_plain_and_scram_users(client: TestClient[object, object]) -> None:
    r = await client.get("/overview")
    assert r.status == 401 and r.headers["WWW-Authenticate"].startswith("Basic realm=")
    r = await client.get("/overview", headers=basic("alice", "wrong"))
    assert r.status == 401 and "Invalid username or password" in await r.text()
    r = await client.get("/overview", headers=basic("mallory"))
    assert r.status == 401
    r = await client.get("/overview", headers=basic("admin"))  # PLAIN
    assert r.status == 200 and 'id="principal"' in (html := await r.text()) and "User:admin" in html
    assert 'id="broker-config"' in html and 'id="dirs"' in html
    r = await client.get("/overview", headers=basic("bob"))  # SCRAM-SHA-256, through the broker's exchange
    assert r.status == 200 and "User:bob" in (html := await r.text())
    assert 'id="config-denied"' in html and 'id="dirs-denied"' in html  # no cluster ACLs


async def test_a_principal_sees_and_changes_only_what_it_may(broker: Broker,
                                                              client: TestClient[object, object]) -> None:
    for name in ("public-a", "public-b", "secret"):
        await actions.create_topic(broker, name, 1, {})
        await actions.produce(broker, name, 0, b"k", b"v-" + name.encode(), [])
    assert broker.authorizer is not None
    broker.authorizer.create([allow(ResourceType.TOPIC, "public-", AclOperation.DESCRIBE, pattern=PatternType.PREFIXED),
                              allow(ResourceType.TOPIC, "public-a", AclOperation.READ),
                              allow(ResourceType.GROUP, "alice-g", AclOperation.READ)])
    alice, admin = basic("alice"), basic("admin")
    html = await (await client.get("/topics", headers=alice)).text()
    assert "/topics/public-a" in html and "/topics/public-b" in html and "secret" not in html
    assert 'id="create-topic"' not in html and 'id="run-retention"' not in html
    html = await (await client.get("/topics", headers=admin)).text()
    assert "/topics/secret" in html and 'id="create-topic"' in html

    # Without DESCRIBE, a topic answers as Kafka's TOPIC_AUTHORIZATION_FAILED, existing or not.
    for path in ("/topics/secret", "/topics/nope", "/topics/secret/0", "/topics/secret/0/messages"):
        r = await client.get(path, headers=alice)
        assert r.status == 403 and "Not authorized to access topics" in await r.text(), path
    # DESCRIBE without READ: the topic and partition show, its records do not.
    html = await (await client.get("/topics/public-b", headers=alice)).text()
    assert 'id="partitions"' in html and "/messages" not in html and 'id="produce"' not in html
    assert 'id="configs"' not in html and 'id="delete-topic"' not in html and 'id="alter-topic"' not in html
    assert (await client.get("/topics/public-b/0", headers=alice)).status == 200
    assert (await client.get("/topics/public-b/0/messages", headers=alice)).status == 403
    r = await client.get("/topics/public-a/0/messages", headers=alice)
    assert r.status == 200 and "v-public-a" in await r.text()

    # Forms: every change asks the operation of its Kafka API; a refusal changes nothing.
    t = await token(client, alice, "/topics/public-a")
    assert t != await token(client, admin, "/topics/public-a")  # one user's token is not another's
    r = await client.post("/topics/public-a/produce", data={"value": "x", "csrf_token": t}, headers=alice)
    assert r.status == 403 and "needs WRITE" in await r.text()
    r = await client.post("/topics", data={"name": "alice-new", "partitions": "1", "csrf_token": t}, headers=alice)
    assert r.status == 403 and broker.topics.get("alice-new") is None
    r = await client.post("/topics/public-a/delete", data={"csrf_token": t}, headers=alice)
    assert r.status == 403 and broker.topics.get("public-a") is not None
    r = await client.post("/topics/public-a/config", data={"key": "retention.ms", "value": "1", "csrf_token": t},
                          headers=alice)
    assert r.status == 403
    r = await client.post("/retention", data={"csrf_token": t}, headers=alice)
    assert r.status == 403 and "Cluster authorization failed" in await r.text()
    r = await client.post("/topics/public-a/produce", data={"value": "x", "csrf_token": await token(
        client, admin, "/topics/public-a")}, headers=alice)
    assert r.status == 403 and "CSRF" in await r.text()

    broker.authorizer.create([allow(ResourceType.TOPIC, "public-a", AclOperation.WRITE),
                              allow(ResourceType.TOPIC, "alice-", AclOperation.CREATE, pattern=PatternType.PREFIXED)])
    r = await client.post("/topics/public-a/produce", data={"value": "from-alice", "csrf_token": t}, headers=alice)
    assert r.status == 200 and "Produced 1 record to public-a-0 at offset 1" in await r.text()
    r = await client.post("/topics", data={"name": "alice-new", "partitions": "1", "csrf_token": t}, headers=alice)
    assert r.status == 200 and broker.topics.get("alice-new") is not None

    # Groups: only those alice may describe, lag over the topics she may describe; reset needs READ.
    await actions.reset_offsets(broker, "alice-g", "public-a", "earliest", "")
    await actions.reset_offsets(broker, "alice-g", "secret", "earliest", "")
    await actions.reset_offsets(broker, "other-g", "public-a", "earliest", "")
    html = await (await client.get("/groups", headers=alice)).text()
    assert "/groups/alice-g" in html and "other-g" not in html
    assert (await client.get("/groups/other-g", headers=alice)).status == 403
    html = await (await client.get("/groups/alice-g", headers=alice)).text()
    assert '<b id="total-lag">2</b>' in html and "<td>secret</td>" not in html
    html = await (await client.get("/groups/alice-g", headers=admin)).text()
    assert '<b id="total-lag">3</b>' in html and "<td>secret</td>" in html
    r = await client.post("/groups/alice-g/reset", data={"topic": "secret", "to": "latest", "csrf_token": t},
                          headers=alice)
    assert r.status == 403
    r = await client.post("/groups/alice-g/reset", data={"topic": "public-a", "to": "latest", "csrf_token": t},
                          headers=alice)
    assert r.status == 200 and '<b id="total-lag">0</b>' in await r.text()
