"""The console's Jinja2 environment: templates from this package, autoescape on for every
template (whatever its name), so every value, a record's bytes first, is escaped."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import jinja2

_TEMPLATES = Path(__file__).with_name("templates")


def _timestamp(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "–"
    try:
        return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] \
            + " UTC"
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _duration(ms: int) -> str:
    if ms < 0:
        return "never"
    seconds = ms // 1000
    if seconds < 120:
        return f"{ms / 1000:g} s"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds} s"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["timestamp"] = _timestamp
    env.filters["size"] = _size
    env.filters["duration"] = _duration
    return env


class Renderer:
    def __init__(self, csrf_token: str) -> None:
        self.env = environment()
        self.csrf_token = csrf_token

    def render(self, name: str, **context: Any) -> str:
        context.setdefault("message", "")
        context.setdefault("error", "")
        context.setdefault("csrf_token", self.csrf_token)
        return self.env.get_template(name).render(**context)
