"""asyncbroker: a single-node, Kafka-compatible broker on asyncio (uvloop)."""

import sys as _sys
from pathlib import Path as _Path


def _started_as_broker() -> bool:
    """True in the broker process itself (`python -m asyncbroker[.server]`, the console script).

    While `-m` locates its module, sys.argv[0] is "-m"; only then is this
    package imported that early.
    """
    argv0 = _sys.argv[0] if _sys.argv else ""
    return argv0 == "-m" or _Path(argv0).name == "asyncbroker"


if _started_as_broker() and "hypothesis" not in _sys.modules:
    # kio imports hypothesis (a test dependency) when it is installed, only to
    # register test strategies: ~200 ms and ~10 MB the broker never uses.
    _sys.modules["hypothesis"] = None  # type: ignore[assignment]
