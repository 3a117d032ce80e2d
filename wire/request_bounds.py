"""Declared sizes in a request body, checked against the bytes that carry them, before kio.

kio's native reader reserves memory for a collection from its declared length before it
reads one element, so a 40-byte Produce request declaring 2^31 topics made it ask for
hundreds of GB and abort the whole broker (found by the atheris harness). Kafka's generated
readers refuse such a request instead ("Tried to allocate a collection of size N, but there
are only M bytes remaining"). `check_request_bounds` walks a body with its entity's schema,
in the order kio reads it, and checks every array, string and bytes length against the bytes
left in the frame (or in the tagged field that holds it). It builds nothing: each step only
moves a position, so the walk costs a few microseconds for the requests clients send.
"""
from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from typing import Any

from wire._kio_compat import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from wire.errors import CorruptRecordError, RequestDecodeError
from wire.records import read_uvarint

__all__ = ["check_request_bounds"]

Buffer = bytes | bytearray | memoryview
Step = Callable[[Buffer, int, int], int]
"""(buffer, position, end of the enclosing region) -> position after the value."""

_FIXED_SIZES = {
    "int8": 1, "uint8": 1, "bool": 1,
    "int16": 2, "uint16": 2, "error_code": 2,
    "int32": 4, "uint32": 4, "timedelta_i32": 4,
    "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8, "datetime_i64": 8,
    "uuid": 16,
}
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I8 = struct.Struct(">b")


def check_request_bounds(cls: type[Any], buf: Buffer, offset: int) -> None:
    """Raise RequestDecodeError if a size declared in the `cls` body at `offset` exceeds
    what is left of `buf` (or of its tagged field)."""
    _entity_step(cls)(buf, offset, len(buf))


def _truncated(what: str) -> RequestDecodeError:
    return RequestDecodeError(f"request body ends inside {what}")


def _too_large(kind: str, size: int, remaining: int) -> RequestDecodeError:
    return RequestDecodeError(
        f"Tried to allocate a {kind} of size {size}, but there are only {remaining} bytes remaining."
    )


def _uvarint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    try:
        return read_uvarint(buf, pos, end, 5)
    except CorruptRecordError as exc:
        raise RequestDecodeError(f"bad unsigned varint in request: {exc}") from None


def _fixed(size: int) -> Step:
    def step(buf: Buffer, pos: int, end: int) -> int:
        pos += size
        if pos > end:
            raise _truncated(f"a {size}-byte field")
        return pos

    step.fixed_size = size  # type: ignore[attr-defined]
    return step


def _length(buf: Buffer, pos: int, end: int, flexible: bool, legacy: struct.Struct) -> tuple[int, int]:
    """A length prefix: compact (uvarint of length + 1, 0 = null) or legacy (int16/int32, -1 = null)."""
    if flexible:
        n, pos = _uvarint(buf, pos, end)
        return n - 1, pos
    if pos + legacy.size > end:
        raise _truncated("a length")
    return legacy.unpack_from(buf, pos)[0], pos + legacy.size


def _sized(flexible: bool, legacy: struct.Struct, kind: str) -> Step:
    def step(buf: Buffer, pos: int, end: int) -> int:
        n, pos = _length(buf, pos, end, flexible, legacy)
        if n < -1:
            raise RequestDecodeError(f"negative {kind} length {n}")
        if n > end - pos:
            raise _too_large(kind, n, end - pos)
        return pos + max(n, 0)

    return step


def _array(flexible: bool, element: Step) -> Step:
    element_size: int | None = getattr(element, "fixed_size", None)

    def step(buf: Buffer, pos: int, end: int) -> int:
        n, pos = _length(buf, pos, end, flexible, _I32)
        if n < -1:
            raise RequestDecodeError(f"negative array length {n}")
        # Every element takes at least one byte: Kafka's own bound.
        if n > end - pos:
            raise _too_large("collection", n, end - pos)
        if element_size is not None:
            pos += max(n, 0) * element_size  # a null array (-1) holds nothing
            if pos > end:
                raise _truncated("an array")
            return pos
        for _ in range(n):
            pos = element(buf, pos, end)
        return pos

    return step


def _nullable_entity(inner: Step) -> Step:
    def step(buf: Buffer, pos: int, end: int) -> int:
        if pos + 1 > end:
            raise _truncated("a struct marker")
        if _I8.unpack_from(buf, pos)[0] < 0:
            return pos + 1
        return inner(buf, pos + 1, end)

    return step


def _primitive_step(kafka_type: str, flexible: bool) -> Step:
    if kafka_type in _FIXED_SIZES:
        return _fixed(_FIXED_SIZES[kafka_type])
    if kafka_type == "string":
        return _sized(flexible, _I16, "string")
    if kafka_type in ("bytes", "records"):
        return _sized(flexible, _I32, "bytes")
    raise RequestDecodeError(f"unknown field type {kafka_type!r}")


def _field_step(field: dataclasses.Field[Any], flexible: bool, is_tag: bool) -> Step:
    kind = classify_field(field)
    if isinstance(kind, PrimitiveField):
        return _primitive_step(get_schema_field_type(field), flexible)
    if isinstance(kind, PrimitiveTupleField):
        return _array(flexible, _primitive_step(get_schema_field_type(field), flexible))
    if isinstance(kind, EntityTupleField):
        return _array(flexible, _entity_step(kind.type_))
    assert isinstance(kind, EntityField)
    inner = _entity_step(kind.type_)
    # Tagged fields are optional by their presence, not by a null marker (as kio reads them).
    return _nullable_entity(inner) if is_optional(field) and not is_tag else inner


_STEPS: dict[type, Step] = {}
"""The walk built for each schema class, once (there are a few thousand)."""


def _entity_step(cls: type) -> Step:
    step = _STEPS.get(cls)
    if step is None:
        step = _STEPS[cls] = _build_entity_step(cls)
    return step


def _merge_fixed(steps: list[Step]) -> list[Step]:
    """Consecutive fixed-size steps as one: a partition of a Fetch is six fields, one step."""
    merged: list[Step] = []
    for s in steps:
        size: int | None = getattr(s, "fixed_size", None)
        last: int | None = getattr(merged[-1], "fixed_size", None) if merged else None
        if size is not None and last is not None:
            merged[-1] = _fixed(last + size)
        else:
            merged.append(s)
    return merged


def _build_entity_step(cls: type) -> Step:
    flexible = bool(getattr(cls, "__flexible__"))  # every kio schema class says whether it is flexible
    fields: list[Step] = []
    tagged: dict[int, Step] = {}
    for field in dataclasses.fields(cls):
        tag = get_field_tag(field)
        if tag is None:
            fields.append(_field_step(field, flexible, is_tag=False))
        else:
            tagged[int(tag)] = _field_step(field, flexible, is_tag=True)
    steps = _merge_fixed(fields)
    if not flexible:
        if len(steps) == 1 and hasattr(steps[0], "fixed_size"):
            return steps[0]  # wholly fixed, no tagged section: an array of it is one multiplication
        return _sequence(steps)
    return _flexible_entity(steps, tagged)


def _sequence(steps: list[Step]) -> Step:
    def step(buf: Buffer, pos: int, end: int) -> int:
        for s in steps:
            pos = s(buf, pos, end)
        return pos

    return step


def _flexible_entity(steps: list[Step], tagged: dict[int, Step]) -> Step:
    def step(buf: Buffer, pos: int, end: int) -> int:
        for s in steps:
            pos = s(buf, pos, end)
        # Most entities carry no tagged field: a single zero count byte ends them.
        if pos < end and buf[pos] == 0:
            return pos + 1
        count, pos = _uvarint(buf, pos, end)
        if count > end - pos:
            raise _too_large("tagged field section", count, end - pos)
        for _ in range(count):
            tag, pos = _uvarint(buf, pos, end)
            size, pos = _uvarint(buf, pos, end)
            if size > end - pos:
                raise _too_large("tagged field", size, end - pos)
            known = tagged.get(tag)
            if known is not None:
                known(buf, pos, pos + size)  # sizes inside are bounded by the field's own size
            pos += size
        return pos

    return step
