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

if _started_as_broker() and "msgspec" not in _sys.modules and "typing_extensions" not in _sys.modules:
    # msgspec resolves annotations with typing_extensions' get_type_hints when that is
    # installed (aiohttp and kio need it), else with typing's, which on Python 3.11 reads our
    # Structs alike. typing_extensions alone is 0.4 MB of an idle broker's 28: msgspec is
    # imported without it, and whatever imports it later (the console, kio) still can.
    _sys.modules["typing_extensions"] = None  # type: ignore[assignment]
    try:
        import msgspec as _msgspec  # noqa: F401
    finally:
        del _sys.modules["typing_extensions"]
