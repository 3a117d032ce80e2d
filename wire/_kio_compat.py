"""What asyncbroker takes from kio beyond its public API, in one place, checked.

- kio's `kio.serial._introspect` (how a schema field is classified: primitive, entity, tuple
  of either, optional, tagged) is private and may change in any minor release. The request
  bounds check (wire/request_bounds.py) walks schemas with it.
- Where kio keeps each schema (`kio/schema/<api>/v<N>/<request|response>.py`, one payload
  class in each). kio.index finds them through a table of every version of every API, which
  holds 0.6 MB of a broker's memory once imported; `payload_schema` goes to the module.

This module refuses, at import, a kio release outside the range it was verified with: a clear
error at startup instead of a wrong walk at the first request. tests/unit/wire/test_kio_compat.py
walks every schema kio has through these functions, and finds each through kio.index and
`payload_schema` alike.

To move to a newer kio: run that test against it, fix what it finds, widen the range.
"""
from __future__ import annotations

import importlib
import re
from types import ModuleType
from typing import Literal

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



def payload_module(api_name: str, version: int, kind: Literal["request", "response"]) -> ModuleType:
    """kio's schema module of one version of an API's request or response (`api_name` as kio
    spells it: "offset_fetch"); LookupError if kio has none."""
    try:
        return importlib.import_module(f"kio.schema.{api_name}.v{version}.{kind}")
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.startswith("kio.schema."):
            raise LookupError(f"kio has no {api_name} v{version} {kind}") from None
        raise


def payload_schema(api_name: str, version: int, kind: Literal["request", "response"]) -> type:
    """The request or response class of `payload_module`: the one class of the module whose
    entity type is that payload's (the others are its nested entities)."""
    from kio.static.constants import EntityType

    module = payload_module(api_name, version, kind)
    wanted = EntityType.request if kind == "request" else EntityType.response
    for value in vars(module).values():
        if isinstance(value, type) and value.__module__ == module.__name__ \
                and getattr(value, "__type__", None) is wanted:
            return value
    raise LookupError(f"kio's {module.__name__} holds no {kind} class")


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
    "payload_module",
    "payload_schema",
]
