"""What the tests that hold a hand-written codec to kio's share: kio entities built from the
fields a version has, kio's path for a request (the bounds walk, then kio's reader) and damage
to a valid body."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from kio.serial.errors import UnexpectedNull

from wire.messages import _reader, request_class
from wire.request_bounds import check_request_bounds

UNKNOWN_TAG = "kio refuses an unknown tagged field"
"""kio refuses tags the schema does not name; Kafka skips them (its generated readers keep them
as unknown tagged fields), and so do the hand-written decoders (each test's
test_unknown_tagged_fields_are_skipped)."""

NULL = "kio refuses a null"
"""kio's reader met a null where its schema has a non-nullable field."""


def kio_entity_of(cls: type[Any], **fields: Any) -> Any:
    """A kio entity of `cls` from those of `fields` its version has (the others are dropped)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in fields.items() if k in names})


def by_kio(api_key: int, version: int, body: bytes | memoryview) -> Any:
    """kio's entity for `body`; None when the bounds walk or the reader refuses it, else
    UNKNOWN_TAG or NULL for those refusals."""
    cls = request_class(api_key, version)
    try:
        check_request_bounds(cls, body, 0)
        entity, _ = _reader(cls)(body, 0)
    except KeyError as exc:
        return UNKNOWN_TAG if "Unknown tagged field" in str(exc) else None
    except UnexpectedNull:
        return NULL
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
