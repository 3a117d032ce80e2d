"""MetadataResponseCache: encoded Metadata answers, reused until a topic changes.

Clients ask for Metadata over and over (on connect, on every refresh interval, after
every retriable error), and on one node the answer depends only on the request and on
the topics. Encoding it is the costly part: a 1,000-partition topic is 1,000 kio
entities written field by field, tens of milliseconds of event-loop time that every
other connection waits behind. So each answer is kept encoded, keyed by what in the
request shapes it, and served as bytes while the TopicManager's generation (bumped by
every topic created, deleted, grown or reconfigured) is the one it was built from.

Only answers in which every topic was found are kept: an error entry may turn into a
topic without the generation moving (auto-creation by another request, a dynamic
auto.create.topics.enable), and errors are rare once clients are running. The cache is
bounded in entries and in bytes, oldest answer evicted first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

__all__ = ["MetadataResponseCache"]


class MetadataResponseCache:
    """Encoded answers by request key, valid for one topics generation."""

    def __init__(self, generation: Callable[[], int], *, max_entries: int = 64,
                 max_bytes: int = 4 * 1024 * 1024) -> None:
        self._generation = generation
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._built_for = -1  # the generation every kept answer was built from
        self._answers: dict[Hashable, bytes] = {}
        self._bytes = 0

    def generation(self) -> int:
        """The topics' generation now: pass it to `put` with an answer built from here on."""
        return self._generation()

    def get(self, key: Hashable) -> bytes | None:
        if self._built_for != self._generation():
            self._clear()
            return None
        body = self._answers.pop(key, None)
        if body is not None:
            self._answers[key] = body  # most recently used last: eviction takes the front
        return body

    def put(self, key: Hashable, generation: int, body: bytes) -> None:
        """Keep `body`, built while the topics were at `generation`, unless they moved on
        meanwhile (the handler awaited) or it alone is over the byte bound."""
        current = self._generation()
        if generation != current or len(body) > self.max_bytes:
            return
        if self._built_for != current:
            self._clear()
            self._built_for = current
        old = self._answers.pop(key, None)
        if old is not None:
            self._bytes -= len(old)
        self._answers[key] = body
        self._bytes += len(body)
        while len(self._answers) > self.max_entries or self._bytes > self.max_bytes:
            evicted = self._answers.pop(next(iter(self._answers)))
            self._bytes -= len(evicted)

    def __len__(self) -> int:
        return len(self._answers)

    def _clear(self) -> None:
        self._answers.clear()
        self._bytes = 0
