"""Start a real asyncbroker from tests and applications.

    from asyncbroker.testing import BrokerProcess

    with BrokerProcess() as broker:          # or: async with BrokerProcess() as broker
        client = Producer({"bootstrap.servers": broker.bootstrap})

pytest users get the `asyncbroker_bootstrap` fixture (a session-wide broker)
from the plugin this distribution registers.
"""

from asyncbroker.testing.broker import BrokerProcess, BrokerStartError

__all__ = ["BrokerProcess", "BrokerStartError"]
