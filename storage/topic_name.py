"""Kafka's topic-name rules, checked before a partition directory is created."""
from __future__ import annotations

import re

from wire.errors import InvalidTopicError

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")  # used with fullmatch: "$" would admit a trailing "\n"
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def validate_topic_name(name: str) -> None:
    """Raise InvalidTopicError unless `name` is a legal Kafka topic name."""
    if not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError("Topic name cannot be \".\" or \"..\"")
    # The directory name `<topic>-<partition>` must stay within the file-name limit.
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, topic name: {name}"
        )
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicError(
            f"Topic name {name} is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        )


def has_collision_chars(name: str) -> bool:
    """'.' and '_' collide in metric names, so Kafka refuses topics differing only by them."""
    return "." in name or "_" in name


def unify_collision_chars(name: str) -> str:
    return name.replace(".", "_")


def is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS
