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
from types import ModuleType
from typing import Any

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.static.constants import EntityType

_ZERO = datetime.timedelta(0)


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


def build(cls: type, /, **values: Any) -> Any:
    """Instantiate `cls` with the subset of `values` it has fields for."""
    names, conversions = _field_plan(cls)
    kwargs = {}
    for key, value in values.items():
        if key in names:
            kind = conversions.get(key)
            kwargs[key] = _convert(kind, value) if kind else value
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
    return load_payload_module(api_key, version, EntityType.response)
