"""Kafka's topic-name rules, checked before a partition directory is created."""
from __future__ import annotations

import re

from wire.errors import InvalidTopicError

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")  # used with fullmatch: "$" would admit a trailing "\n"
# The coordinators' internal topics (named here, below the coordinators, so that the broker can
# tell whether one exists without importing its coordinator).
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_GROUP_STATE_TOPIC = "__share_group_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})


def validate_topic_name(name: str) -> None:
    """Raise InvalidTopicError unless `name` is a legal Kafka topic name."""
    # The messages are Kafka's (its controller's topic-name check), which clients show.
    if not name:
        raise InvalidTopicError("Topic name is invalid: the empty string is not allowed")
    if name in (".", ".."):
        raise InvalidTopicError(f"Topic name is invalid: '{name}' is not allowed")
    # The directory name `<topic>-<partition>` must stay within the file-name limit.
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is invalid: the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
        )
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicError(
            f"Topic name is invalid: '{name}' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' and '-'"
        )


def has_collision_chars(name: str) -> bool:
    """'.' and '_' collide in metric names, so Kafka refuses topics differing only by them."""
    return "." in name or "_" in name


def unify_collision_chars(name: str) -> str:
    return name.replace(".", "_")


def is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS
