"""Start a real asyncbroker from tests and applications.

    from asyncbroker.testing import BrokerProcess

    with BrokerProcess() as broker:          # or: async with BrokerProcess() as broker
        client = Producer({"bootstrap.servers": broker.bootstrap})

pytest users get the `asyncbroker_bootstrap` fixture (a session-wide broker)
from the plugin this distribution registers.
"""

from asyncbroker.testing.broker import BrokerProcess, BrokerStartError

__all__ = ["BrokerProcess", "BrokerStartError", "TlsFiles"]


def __getattr__(name: str) -> object:
    # TlsFiles needs `cryptography`; imported on first use, so plain tests never load it.
    if name == "TlsFiles":
        from asyncbroker.testing.tls import TlsFiles

        return TlsFiles
    raise AttributeError(name)
