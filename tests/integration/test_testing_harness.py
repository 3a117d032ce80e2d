"""asyncbroker.testing: sync and async context managers, and the pytest fixture."""

from __future__ import annotations

import pytest
from kio.schema.metadata.v12 import request as meta12

from asyncbroker.testing import BrokerProcess
from raw_client import RawClient

pytestmark = pytest.mark.timeout(60)


def broker_count(bootstrap: str) -> int:
    with RawClient(bootstrap) as c:
        resp = c.request(meta12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                include_topic_authorized_operations=False))
    return len(resp.brokers)


def test_sync_context_manager_cleans_up() -> None:
    with BrokerProcess() as broker:
        assert broker.port > 0
        assert broker_count(broker.bootstrap) == 1
        log_dir = broker.log_dir
        assert log_dir.exists()
    assert broker.returncode == 0
    assert not log_dir.exists()


async def test_async_context_manager() -> None:
    async with BrokerProcess(["num.partitions=3"]) as broker:
        assert broker_count(broker.bootstrap) == 1
    assert broker.returncode == 0


def test_plugin_fixture(asyncbroker_bootstrap: str) -> None:
    host, port = asyncbroker_bootstrap.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    assert broker_count(asyncbroker_bootstrap) == 1
