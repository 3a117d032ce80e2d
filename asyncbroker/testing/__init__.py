"""Start a real asyncbroker from tests and applications.

    from asyncbroker.testing import BrokerProcess

    with BrokerProcess() as broker:          # or: async with BrokerProcess() as broker
        client = Producer({"bootstrap.servers": broker.bootstrap})

pytest users get the `asyncbroker_bootstrap` fixture (a session-wide broker)
from the plugin this distribution registers. `S3Server` (moto's S3 API in a child
process, for tiered storage) needs the [test] extra's moto.
"""

from asyncbroker.testing.broker import BrokerProcess, BrokerStartError

__all__ = ["BrokerProcess", "BrokerStartError", "S3Server", "TlsFiles"]


def __getattr__(name: str) -> object:
    # TlsFiles needs `cryptography`; imported on first use, so plain tests never load it.
    if name == "TlsFiles":
        from asyncbroker.testing.tls import TlsFiles

        return TlsFiles
    if name == "S3Server":
        from asyncbroker.testing.s3_server import S3Server

        return S3Server
    raise AttributeError(name)
