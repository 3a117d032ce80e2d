"""pytest plugin (registered through the `pytest11` entry point).

Fixtures:
    asyncbroker            a BrokerProcess shared by the session (started lazily)
    asyncbroker_bootstrap  its "host:port" bootstrap address

The broker starts only when a test asks for one of these fixtures, so
installing asyncbroker costs other test suites nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from asyncbroker.testing.broker import BrokerProcess


@pytest.fixture(scope="session")
def asyncbroker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as broker:
        yield broker


@pytest.fixture(scope="session")
def asyncbroker_bootstrap(asyncbroker: BrokerProcess) -> str:
    return asyncbroker.bootstrap
