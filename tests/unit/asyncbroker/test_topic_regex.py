"""Subscription regexes in RE2J's syntax and words: what Kafka 4.4's group coordinator
accepts, refuses and says (the descriptions were read from RE2J 1.8, the version Kafka 4.4
ships, and from Kafka's INVALID_REGULAR_EXPRESSION answers)."""

from __future__ import annotations

import pytest

from asyncbroker.topic_regex import compile_topic_regex
from wire.errors import InvalidRegularExpressionError


@pytest.mark.parametrize(("regex", "description"), [
    ("(", "missing closing )"),
    ("a)", "regexp/syntax: internal error"),
    (")", "regexp/syntax: internal error"),
    ("(?=x)", "invalid or unsupported Perl syntax"),
    ("(?i", "invalid or unsupported Perl syntax"),
    ("a**", "invalid nested repetition operator"),
    ("x{2}{3}", "invalid nested repetition operator"),
    ("x{1001}", "invalid repeat count"),
    ("a{2,1}", "invalid repeat count"),
    ("[a", "missing closing ]"),
    ("[z-a]", "invalid character class range"),
    ("\\", "trailing backslash at end of expression"),
    ("\\q", "invalid escape sequence"),
    ("\\8", "invalid escape sequence"),
    ("a\\C", "invalid escape sequence"),
    ("*", "missing argument to repetition operator"),
    ("(?P<>a)", "invalid named capture"),
    ("(?P<n>a)(?P<n>b)", "duplicate capture group name"),
    ("\\p{Foo}", "invalid character class range"),
])
def test_refused_with_re2js_description(regex: str, description: str) -> None:
    with pytest.raises(InvalidRegularExpressionError) as refused:
        compile_topic_regex(regex)
    assert str(refused.value) == f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}."


@pytest.mark.parametrize(("regex", "topic", "matches"), [
    ("orders-.*", "orders-eu", True),
    ("orders-.*", "xorders-eu", False),  # the whole name, as RE2J's matches()
    ("orders", "orders-eu", False),
    ("(?i)ORDERS", "orders", True),
    ("[[:alpha:]]+", "orders", True),
    ("\\Q(a)\\E", "(a)", True),
    ("[(]a", "(a", True),  # a '(' in a class is a literal
    ("(?P<n>a)(?P<m>b)", "ab", True),
    ("__consumer_offsets|t1", "__consumer_offsets", True),  # internal topics match as any other
])
def test_matches_whole_topic_names(regex: str, topic: str, matches: bool) -> None:
    assert compile_topic_regex(regex).matches(topic) is matches


def test_matching_picks_the_names_of_a_list() -> None:
    assert compile_topic_regex("t[0-9]").matching(["t1", "t2", "t10", "x1"]) == frozenset({"t1", "t2"})
