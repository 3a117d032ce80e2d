"""What the tests that hold a hand-written codec to kio's share: kio entities built from the
fields a version has, kio's path for a request (the bounds walk, then kio's reader), damage
to a valid body, and the conversions between kio's entities and a codec's structs (which
carry kio's field names)."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import io
from collections.abc import Callable
from typing import Any

import msgspec
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_writer
from kio.serial.errors import UnexpectedNull
from kio.static.primitive import i32Timedelta, i64Timedelta

from wire._kio_compat import EntityField, EntityTupleField, classify_field
from wire.messages import _reader, request_class
from wire.request_bounds import check_request_bounds

UNKNOWN_TAG = "kio refuses an unknown tagged field"
"""kio refuses tags the schema does not name; Kafka skips them (its generated readers keep them
as unknown tagged fields), and so do the hand-written decoders (each test's
test_unknown_tagged_fields_are_skipped)."""

NULL = "kio refuses a null"
"""kio's reader met a null where its schema has a non-nullable field."""

BOOLEAN = "kio refuses a boolean byte other than 0 and 1"
"""Kafka reads any byte but 0 as true (`readByte() != 0`), and so do the hand-written decoders;
kio refuses the others."""

OVERFLOW = "kio cannot hold the duration"
"""kio reads an int64 duration as a timedelta, which holds about +-2.9e17 ms: a larger one (which
kio's writer wrote, and Kafka reads as the number it is) fails kio's reader, and says nothing
about a codec that reads the number."""


def kio_entity_of(cls: type[Any], **fields: Any) -> Any:
    """A kio entity of `cls` from those of `fields` its version has (the others are dropped)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in fields.items() if k in names})


def by_kio(api_key: int, version: int, body: bytes | memoryview) -> Any:
    """kio's entity for `body`; None when the bounds walk or the reader refuses it, else
    UNKNOWN_TAG, NULL, BOOLEAN or OVERFLOW for those refusals."""
    cls = request_class(api_key, version)
    try:
        check_request_bounds(cls, body, 0)
        entity, _ = _reader(cls)(body, 0)
    except KeyError as exc:
        return UNKNOWN_TAG if "Unknown tagged field" in str(exc) else None
    except UnexpectedNull:
        return NULL
    except ValueError as exc:
        if "timedelta milliseconds overflow" in str(exc):
            return OVERFLOW
        if "Invalid boolean value" in str(exc):
            return BOOLEAN
        return None
    except Exception:  # noqa: BLE001 - any refusal closes the connection
        return None
    return entity


def damaged(body: bytes, data: st.DataObject) -> bytes:
    """`body` with one to three changes drawn from `data`: cut short, a byte set, bytes inserted."""
    out = bytearray(body)
    for _ in range(data.draw(st.integers(1, 3))):
        kind = data.draw(st.sampled_from(["cut", "set", "insert"]))
        if kind == "cut" or not out:
            out = out[: data.draw(st.integers(0, len(out)))]
        elif kind == "set":
            out[data.draw(st.integers(0, len(out) - 1))] = data.draw(st.integers(0, 255))
        else:
            at = data.draw(st.integers(0, len(out)))
            out[at:at] = data.draw(st.binary(min_size=1, max_size=4))
    return bytes(out)


def assert_decodes_as_kio(by_kio: Callable[[int, bytes | memoryview], Any],
                          by_hand: Callable[[int, bytes | memoryview], Any], version: int, body: bytes) -> None:
    """A valid body: kio's path reads it, and the hand-written decoder reads the same from the
    bytes and from a memoryview (a large frame arrives as one)."""
    expected = by_kio(version, body)
    assert expected is not None
    assert by_hand(version, body) == expected
    assert by_hand(version, memoryview(body)) == expected


_MS = datetime.timedelta(milliseconds=1)


def plain(value: Any) -> Any:
    """A kio entity, or a value in one, as plain values: an entity as a dict by field name, a
    duration as its milliseconds, an error code as its int, bytes as bytes."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime.timedelta):
        return value // _MS
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def ours_from_kio(entity: Any, cls: type[Any]) -> Any:
    """The codec's struct `cls` with a kio entity's values (the fields its version lacks at the
    struct's defaults, which are Kafka's)."""
    return msgspec.convert(plain(entity), cls)


def kio_from_ours(struct: Any, kio_cls: type[Any]) -> Any:
    """kio's entity `kio_cls` (one version's) with the values of the codec's struct, for the
    fields that version has."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(kio_cls):
        value = getattr(struct, f.name)
        kind = classify_field(f)
        kafka_type = f.metadata.get("kafka_type")
        if isinstance(kind, EntityTupleField):
            value = tuple(kio_from_ours(v, kind.type_) for v in value)
        elif isinstance(kind, EntityField):
            value = None if value is None else kio_from_ours(value, kind.type_)
        elif value is None:
            pass
        elif kafka_type == "timedelta_i32":
            value = i32Timedelta.parse(value * _MS)
        elif kafka_type == "timedelta_i64":
            value = i64Timedelta.parse(value * _MS)
        elif kafka_type == "error_code":
            value = KioErrorCode(value)
        elif isinstance(value, (bytearray, memoryview)):
            value = bytes(value)
        values[f.name] = value
    return kio_cls(**values)


def kio_bytes(entity: Any) -> bytes:
    """What kio's writer writes for an entity."""
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()
