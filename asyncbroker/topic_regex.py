"""Subscription regexes of consumer-protocol groups, in the syntax Kafka compiles them with.

Kafka's group coordinator compiles a member's SubscribedTopicRegex with RE2J
(`com.google.re2j.Pattern`) and subscribes the member to every non-internal topic whose
whole name matches. RE2J is a port of RE2, so the C++ RE2 behind `google-re2` accepts the
same patterns, with three differences this module closes:
- RE2 takes `\\C` (any byte); RE2J refuses it as an invalid escape sequence;
- RE2 takes two capture groups of one name; RE2J refuses a duplicate name;
- the error texts differ ("missing )" against RE2J's "missing closing )"). Kafka quotes
  RE2J's description in INVALID_REGULAR_EXPRESSION, so the same words are given here.

`google-re2` is imported with the first regex: most brokers never see one, and it costs
2.7 MB of RSS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from wire.errors import InvalidRegularExpressionError

if TYPE_CHECKING:
    from collections.abc import Iterable


class _Compiled(Protocol):
    def fullmatch(self, text: str) -> object: ...


# RE2's error code texts (re2.h ErrorCode) and RE2J's descriptions of the same errors.
# RE2J 1.8 reports an unmatched ')' as an internal error ("stack underflow"); Kafka's
# message shows that, so it is kept.
_RE2J_DESCRIPTIONS: tuple[tuple[str, str], ...] = (
    ("missing )", "missing closing )"),
    ("unexpected )", "regexp/syntax: internal error"),
    ("invalid perl operator", "invalid or unsupported Perl syntax"),
    ("bad repetition operator", "invalid nested repetition operator"),
    ("invalid repetition size", "invalid repeat count"),
    ("missing ]", "missing closing ]"),
    ("trailing \\", "trailing backslash at end of expression"),
    ("no argument for repetition operator", "missing argument to repetition operator"),
    ("invalid named capture group", "invalid named capture"),
)


def _re2j_description(re2_message: str) -> str:
    for re2_text, re2j_text in _RE2J_DESCRIPTIONS:
        if re2_message.startswith(re2_text):
            return re2j_text
    return re2_message.split(": ", 1)[0]  # the code text; the same words in both libraries


def _refused_by_re2j_only(regex: str) -> str | None:
    """RE2J's description for what RE2 accepts and RE2J does not (`\\C`, a repeated group
    name), or None. Scans escapes and group openings; `\\Q...\\E` is literal text."""
    names: set[str] = set()
    i, n = 0, len(regex)
    while i < n:
        c = regex[i]
        if c == "\\" and i + 1 < n:
            nxt = regex[i + 1]
            if nxt == "C":
                return "invalid escape sequence"
            if nxt == "Q":
                end = regex.find("\\E", i + 2)
                i = n if end < 0 else end + 2
                continue
            i += 2
            continue
        if c == "[":  # a class: '(' inside it is a literal; ']' first in it is too
            i += 2 if regex.startswith("[^]", i) or regex.startswith("[]", i) else 1
            while i < n and regex[i] != "]":
                i += 2 if regex[i] == "\\" else 1
            i += 1
            continue
        for opening in ("(?P<", "(?<"):
            if regex.startswith(opening, i):
                end = regex.find(">", i)
                if end > 0:
                    name = regex[i + len(opening):end]
                    if name in names:
                        return "duplicate capture group name"
                    names.add(name)
        i += 1
    return None


class TopicRegex:
    """One compiled subscription regex: `matches(topic)` is RE2J's `matcher(topic).matches()`."""

    __slots__ = ("pattern", "_compiled")

    def __init__(self, pattern: str, compiled: _Compiled) -> None:
        self.pattern = pattern
        self._compiled = compiled

    def matches(self, topic: str) -> bool:
        return self._compiled.fullmatch(topic) is not None

    def matching(self, topics: Iterable[str]) -> frozenset[str]:
        return frozenset(t for t in topics if self._compiled.fullmatch(t) is not None)


def compile_topic_regex(regex: str) -> TopicRegex:
    """The compiled regex, or InvalidRegularExpressionError with Kafka 4.4's message."""
    import re2  # noqa: PLC0415 - with the first regex only (see the module docstring)

    description = _refused_by_re2j_only(regex)
    if description is None:
        options = re2.Options()
        options.log_errors = False  # a bad pattern is the client's error, answered, not logged
        try:
            return TopicRegex(regex, re2.compile(regex, options))
        except re2.error as exc:
            raw = exc.args[0] if exc.args else b""
            description = _re2j_description(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw))
    raise InvalidRegularExpressionError(
        f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}.")
