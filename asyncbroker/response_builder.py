"""Build kio response entities of any version from version-agnostic field values.

kio generates one class per API version, each with only the fields that
version has. Handlers describe a response once, with every field they know,
and `ResponseBuilder` drops the fields a version lacks and converts plain ints
into kio's typed fields (error codes, millisecond durations), so one handler
body serves every advertised version.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import os
from types import ModuleType
from typing import Any, Literal

from kio.schema.errors import ErrorCode as KioErrorCode
from kio.static.constants import EntityType

from wire.messages import response_module

_ZERO = datetime.timedelta(0)

STRICT_ENV = "BROKER_STRICT_RESPONSES"
"""Set to 1 (the test suite does, for itself and the brokers it starts) to refuse field names no
version of an entity has. Off in production: knowing every version's names means importing
every version's schema module, some 50 ms at the first answer of each API. Not ASYNCBROKER_*:
the broker reads every ASYNCBROKER_<KEY> variable as a config key."""
STRICT = os.environ.get(STRICT_ENV) == "1"


@functools.cache
def _field_plan(cls: type) -> tuple[frozenset[str], dict[str, str]]:
    """Names of the fields of `cls`, and the kafka_type of those needing conversion."""
    names = []
    conversions: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        names.append(f.name)
        kafka_type = f.metadata.get("kafka_type")
        if kafka_type in ("error_code", "timedelta_i32", "timedelta_i64", "datetime_i64"):
            conversions[f.name] = kafka_type
    return frozenset(names), conversions


def _convert(kafka_type: str, value: Any) -> Any:
    if kafka_type == "error_code":
        return value if isinstance(value, KioErrorCode) else KioErrorCode(int(value))
    if kafka_type == "datetime_i64":
        # Kafka's -1 ("none", e.g. no log append time) is kio's None.
        if value is None or isinstance(value, datetime.datetime):
            return value
        return None if value < 0 else datetime.datetime.fromtimestamp(value / 1000, tz=datetime.timezone.utc)
    if isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(milliseconds=int(value)) if value else _ZERO


@functools.cache
def _names_in_any_version(cls: type) -> frozenset[str]:
    """The field names of this entity (the same class name) across every version of its API
    kio has: what a version-agnostic description of it may name (STRICT only: kio's index
    of every schema is loaded for it)."""
    from kio.index import load_payload_module
    from kio.schema.index import api_key_map, schema_name_map

    names: set[str] = set(_field_plan(cls)[0])
    api_key = getattr(cls, "__api_key__", None)
    if not isinstance(api_key, int):
        return frozenset(names)
    # Nested entities are typed "nested": their module says whether they belong to a request.
    kind: Literal[EntityType.request, EntityType.response] = (
        EntityType.request if cls.__module__.endswith(".request") else EntityType.response)
    api_name = api_key_map.get(api_key)
    for version, kinds in schema_name_map.get(api_name, {}).items() if api_name else ():
        if kind in kinds:
            other = getattr(load_payload_module(api_key, version, kind), cls.__name__, None)
            if other is not None and dataclasses.is_dataclass(other):
                names.update(f.name for f in dataclasses.fields(other))
    return frozenset(names)


def build(cls: type, /, **values: Any) -> Any:
    """Instantiate `cls` with the subset of `values` it has fields for.

    A name that no version of the entity has is a typo, not a field of another version: under
    STRICT (the test suite) it is refused, so a misspelled field cannot silently vanish from
    every answer."""
    names, conversions = _field_plan(cls)
    kwargs = {}
    for key, value in values.items():
        if key in names:
            kind = conversions.get(key)
            kwargs[key] = _convert(kind, value) if kind else value
        elif STRICT and key not in _names_in_any_version(cls):
            raise TypeError(f"{cls.__module__}.{cls.__name__} has no field {key!r} in any version")
    return cls(**kwargs)


class ResponseBuilder:
    """The response classes of one (api_key, version), looked up by Kafka's schema names."""

    __slots__ = ("module", "version")

    def __init__(self, api_key: int, version: int) -> None:
        self.module: ModuleType = _response_module(api_key, version)
        self.version = version

    def has(self, class_name: str) -> bool:
        return hasattr(self.module, class_name)

    def entity(self, class_name: str, /, **values: Any) -> Any:
        """A nested entity, e.g. entity("MetadataResponseTopic", name=..., ...)."""
        return build(getattr(self.module, class_name), **values)


@functools.cache
def _response_module(api_key: int, version: int) -> ModuleType:
    return response_module(api_key, version)
