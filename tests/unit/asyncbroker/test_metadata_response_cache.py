"""MetadataResponseCache: answers live for one topics generation, bounded in entries and bytes."""

from __future__ import annotations

from asyncbroker.metadata_response_cache import MetadataResponseCache


class Topics:
    generation = 0


def test_an_answer_is_served_until_the_topics_change() -> None:
    topics = Topics()
    cache = MetadataResponseCache(lambda: topics.generation)
    assert cache.get("k") is None
    cache.put("k", cache.generation(), b"answer")
    assert cache.get("k") == b"answer"
    topics.generation += 1  # a topic created, deleted, grown or reconfigured
    assert cache.get("k") is None and len(cache) == 0


def test_an_answer_built_across_a_change_is_not_kept() -> None:
    topics = Topics()
    cache = MetadataResponseCache(lambda: topics.generation)
    started = cache.generation()
    topics.generation += 1  # e.g. an auto-creation while the handler awaited
    cache.put("k", started, b"stale")
    assert cache.get("k") is None


def test_the_least_recently_used_answer_goes_first() -> None:
    topics = Topics()
    cache = MetadataResponseCache(lambda: topics.generation, max_entries=2)
    cache.put("a", 0, b"A")
    cache.put("b", 0, b"B")
    assert cache.get("a") == b"A"  # now the most recently used
    cache.put("c", 0, b"C")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (b"A", None, b"C")


def test_the_byte_bound_evicts_and_refuses_an_answer_over_it() -> None:
    topics = Topics()
    cache = MetadataResponseCache(lambda: topics.generation, max_bytes=10)
    cache.put("a", 0, b"x" * 6)
    cache.put("b", 0, b"y" * 6)  # 12 bytes in all: the older one goes
    assert (cache.get("a"), cache.get("b")) == (None, b"y" * 6)
    cache.put("huge", 0, b"z" * 11)
    assert cache.get("huge") is None and cache.get("b") == b"y" * 6
