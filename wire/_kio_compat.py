"""What asyncbroker takes from kio beyond its public API, in one place, checked.

kio's `kio.serial._introspect` (how a schema field is classified: primitive, entity, tuple
of either, optional, tagged) is private and may change in any minor release. The request
bounds check (wire/request_bounds.py) walks schemas with it, so this module imports it once
and refuses, at import, a kio release outside the range it was verified with: a clear error
at startup instead of a wrong walk at the first request. tests/unit/wire/test_kio_compat.py
walks every schema kio has through these functions.

To move to a newer kio: run that test against it, fix what it finds, widen the range.
"""
from __future__ import annotations

import re

VERIFIED = ((0, 6, 5), (0, 7, 0))
"""kio releases this module was checked against: [first, last) (pyproject pins the same)."""


def _release(version: str) -> tuple[int, int, int]:
    """The numeric release of a version string ("0.6.5", "0.7", "0.7.0rc1" -> (0, 7, 0))."""
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    if match is None:
        raise UnsupportedKioVersionError(f"cannot read kio's version {version!r}")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def _text(release: tuple[int, int, int]) -> str:
    return ".".join(map(str, release))


class UnsupportedKioVersionError(ImportError):
    """The installed kio is outside the range whose private API this module was checked with."""


def check_kio_version(installed: str) -> None:
    low, high = VERIFIED
    if not low <= _release(installed) < high:
        pin = f">={_text(low)},<{_text(high)}"
        raise UnsupportedKioVersionError(
            f"asyncbroker uses kio's private schema introspection, verified with kio {pin}; kio {installed} is "
            f"installed. Install a verified kio (pip install 'kio{pin}') or check wire/_kio_compat.py against "
            "this release.")


def _installed_version() -> str:
    # kio's own attribute: asking importlib.metadata scans every installed distribution,
    # some 30 ms of the broker's startup.
    import kio

    version = getattr(kio, "__version__", None)
    if isinstance(version, str):
        return version
    import importlib.metadata  # a kio without the attribute: the slow way, only then

    return importlib.metadata.version("kio")


check_kio_version(_installed_version())

from kio.serial._introspect import (  # noqa: E402 - only once the version is known to be verified
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

__all__ = [
    "EntityField",
    "EntityTupleField",
    "PrimitiveField",
    "PrimitiveTupleField",
    "UnsupportedKioVersionError",
    "VERIFIED",
    "check_kio_version",
    "classify_field",
    "get_field_tag",
    "get_schema_field_type",
    "is_optional",
]
