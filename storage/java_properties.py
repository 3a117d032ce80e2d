"""java.util.Properties text, as Kafka reads server.properties: shared by the broker (asyncbroker.config)
and the offline tools that take a broker's settings (pipeline.cli's --broker-config)."""

from __future__ import annotations

import re

__all__ = ["parse_properties"]


def parse_properties(text: str) -> dict[str, str]:
    """java.util.Properties text format: `#`/`!` comments, `=`/`:`/space separators,
    backslash line continuation and escapes (\\t, \\n, \\uXXXX, \\=...)."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        # Join continuation lines: an odd number of trailing backslashes continues.
        while _ends_with_continuation(line) and i <= len(lines):
            line = line[:-1] + (lines[i].lstrip() if i < len(lines) else "")
            i += 1
        key_chars: list[str] = []
        j = 0
        while j < len(line):
            c = line[j]
            if c == "\\" and j + 1 < len(line):
                key_chars.append(line[j : j + 2])
                j += 2
                continue
            if c in "=: \t\f":
                break
            key_chars.append(c)
            j += 1
        # Separator: whitespace, then at most one '=' or ':', then whitespace.
        while j < len(line) and line[j] in " \t\f":
            j += 1
        if j < len(line) and line[j] in "=:":
            j += 1
        while j < len(line) and line[j] in " \t\f":
            j += 1
        out[_unescape("".join(key_chars))] = _unescape(line[j:])
    return out


def _ends_with_continuation(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out: list[str] = []
    j = 0
    while j < len(s):
        c = s[j]
        if c != "\\" or j + 1 >= len(s):
            out.append(c)
            j += 1
            continue
        n = s[j + 1]
        if n == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[j + 2 : j + 6] or ""):
            out.append(chr(int(s[j + 2 : j + 6], 16)))
            j += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(n, n))
        j += 2
    return "".join(out)
