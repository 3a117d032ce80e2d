"""How the console shows a record's key, value or header: UTF-8 text, pretty-printed JSON or
hex, never more than a bounded number of bytes per field."""

from __future__ import annotations

import enum
import json

import msgspec

# A field is shown up to this many bytes; the rest is summarised ("… N more bytes").
SHOWN_BYTES_MAX = 4096


class Encoding(enum.Enum):
    AUTO = "auto"
    UTF8 = "utf8"
    JSON = "json"
    HEX = "hex"


class ShownBytes(msgspec.Struct, frozen=True):
    """One field as shown: its text (escaped by the template), how it was decoded, its size,
    and how many bytes were left out."""

    text: str
    encoding: str  # "null", "utf8", "json", "hex"
    size: int
    omitted: int = 0
    note: str = ""


def _hex(data: bytes) -> str:
    return " ".join(data[i:i + 16].hex(" ") for i in range(0, len(data), 16))


def _utf8(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # Control characters other than whitespace make it binary for display purposes.
    if any(ord(c) < 32 and c not in "\t\n\r" for c in text):
        return None
    return text


def show(data: bytes | None, encoding: Encoding = Encoding.AUTO) -> ShownBytes:
    """`data` as the console shows it. AUTO: JSON when it parses as an object or array, else
    UTF-8 text, else hex. A forced encoding that does not fit falls back to hex, with a note."""
    if data is None:
        return ShownBytes("null", "null", -1)
    size = len(data)
    head, omitted = (data, 0) if size <= SHOWN_BYTES_MAX else (data[:SHOWN_BYTES_MAX], size - SHOWN_BYTES_MAX)
    if encoding is Encoding.HEX:
        return ShownBytes(_hex(head), "hex", size, omitted)
    if encoding is Encoding.JSON or (encoding is Encoding.AUTO and data.lstrip()[:1] in (b"{", b"[")):
        if omitted == 0:
            try:
                return ShownBytes(json.dumps(json.loads(data), indent=2, ensure_ascii=False), "json", size)
            except ValueError:
                pass
        if encoding is Encoding.JSON:
            note = "too large to pretty-print" if omitted else "not valid JSON"
            text = _utf8(head)
            if text is not None:
                return ShownBytes(text, "utf8", size, omitted, note)
            return ShownBytes(_hex(head), "hex", size, omitted, note + "; binary: shown as hex")
    text = _utf8(head)
    if text is None and omitted:
        # The cut may fall inside a multi-byte character: try a few bytes shorter.
        for cut in range(1, 4):
            text = _utf8(head[:-cut])
            if text is not None:
                omitted += cut
                break
    if text is not None:
        return ShownBytes(text, "utf8", size, omitted)
    return ShownBytes(_hex(head), "hex", size, omitted, "binary: shown as hex")
