"""Incremental fetch sessions (KIP-227) on a running broker, over raw sockets: the cache's room
(max.incremental.fetch.session.cache.slots), eviction after 120 s on the broker's clock, the
FetchSessionCache metrics, and a long poll inside a session.

What clients see of sessions is compared with Kafka 4.4 in tests/oracle/test_fetch.py."""
from __future__ import annotations

import datetime
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from kio.schema.fetch.v12 import request as fetch12

from asyncbroker.testing import BrokerProcess
from metrics_endpoint import MetricsBroker, scrape
from raw_client import RawClient
from test_long_poll import create_topic, produce_request

pytestmark = pytest.mark.timeout(120)

FETCH_SESSION_ID_NOT_FOUND = 70


def fetch(topic: str, partitions: dict[int, int], *, session_id: int = 0, epoch: int = 0,
          max_wait_ms: int = 0) -> fetch12.FetchRequest:
    return fetch12.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=max_wait_ms), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        session_id=session_id, session_epoch=epoch,
        topics=(fetch12.FetchTopic(topic=topic, partitions=tuple(
            fetch12.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
            for p, o in partitions.items())),) if partitions else (),
        forgotten_topics_data=(), rack_id="")


def answered(response: Any) -> list[int]:
    return [p.partition_index for t in response.responses for p in t.partitions]


def session_gauges(port: int) -> tuple[float, float, float]:
    samples = scrape(port)
    return (samples["asyncbroker_incremental_fetch_sessions"],
            samples["asyncbroker_incremental_fetch_partitions_cached"],
            samples["asyncbroker_incremental_fetch_session_evictions_total"])


def test_a_full_cache_opens_no_session_until_one_goes_unused_for_120_s(tmp_path: Path) -> None:
    """8 slots: one per cache shard. The ninth full fetch gets session id 0 (the client goes
    on with full fetches); once the broker's clock is 120 s on, a newcomer evicts the session
    of its shard, whose next incremental fetch is FETCH_SESSION_ID_NOT_FOUND."""
    with MetricsBroker(["max.incremental.fetch.session.cache.slots=8", "num.partitions=2"], log_dir=tmp_path,
                       monitor=True) as b:
        create_topic(b.bootstrap, "s")
        with RawClient(b.bootstrap) as c:
            sessions = [c.request(fetch("s", {0: 0, 1: 0})).session_id for _ in range(8)]
            assert 0 not in sessions and len(set(sessions)) == 8
            assert c.request(fetch("s", {0: 0, 1: 0})).session_id == 0
            assert session_gauges(b.metrics_port) == (8, 16, 0)

            b.advance_clock(121_000)
            # The tenth full fetch takes shard 1's turn (the ninth had shard 0's).
            assert c.request(fetch("s", {0: 0})).session_id not in (0, *sessions)
            assert session_gauges(b.metrics_port) == (8, 15, 1)
            evicted = c.request(fetch("s", {}, session_id=sessions[1], epoch=1))
            assert (evicted.error_code, evicted.session_id) == (FETCH_SESSION_ID_NOT_FOUND, 0)
            kept = c.request(fetch("s", {}, session_id=sessions[2], epoch=1))
            assert (kept.error_code, kept.session_id, answered(kept)) == (0, sessions[2], [])  # no news


def test_an_incremental_long_poll_wakes_on_a_produce_with_only_that_partition(tmp_path: Path) -> None:
    with BrokerProcess(["num.partitions=3"], log_dir=tmp_path) as b:
        create_topic(b.bootstrap, "w")
        with RawClient(b.bootstrap) as c, RawClient(b.bootstrap) as producer:
            opened = c.request(fetch("w", {0: 0, 1: 0, 2: 0}))
            assert opened.session_id != 0 and answered(opened) == [0, 1, 2]
            woke: list[Any] = []
            poll = threading.Thread(target=lambda: woke.append(
                c.request(fetch("w", {}, session_id=opened.session_id, epoch=1, max_wait_ms=20_000))))
            started = time.monotonic()
            poll.start()
            producer.request(produce_request("w", b"wake"))  # partition 0 (produce_request's)
            poll.join(30)
            assert woke and time.monotonic() - started < 15
            assert answered(woke[0]) == [0] and b"wake" in woke[0].responses[0].partitions[0].records


def test_a_long_poll_over_idle_partitions_parks_until_one_grows(tmp_path: Path) -> None:
    """A session whose partitions are all idle (the fetch skips reading them): its fetch parks
    all the same, and a produce to one of them wakes it with that partition's record."""
    with BrokerProcess(["num.partitions=3"], log_dir=tmp_path) as b:
        create_topic(b.bootstrap, "idle")
        with RawClient(b.bootstrap) as c, RawClient(b.bootstrap) as producer:
            opened = c.request(fetch("idle", {0: 0, 1: 0, 2: 0}))
            assert opened.session_id != 0 and answered(opened) == [0, 1, 2]
            assert answered(c.request(fetch("idle", {}, session_id=opened.session_id, epoch=1))) == []
            correlation = c.send_request(fetch("idle", {}, session_id=opened.session_id, epoch=2, max_wait_ms=20_000))
            # Still parked: nothing arrives while every partition is idle.
            c.sock.settimeout(0.3)
            with pytest.raises(TimeoutError):
                c.sock.recv(1, 2)  # MSG_PEEK
            c.sock.settimeout(20)
            producer.request(produce_request("idle", b"grown"))  # partition 0 (produce_request's)
            produced_at = time.monotonic()
            woke = c.recv_response(1, 12, correlation)
            # Woken by the produce, not by max_wait's end (20 s).
            assert time.monotonic() - produced_at < 10
            assert woke.error_code == 0 and answered(woke) == [0]
            assert b"grown" in woke.responses[0].partitions[0].records


def test_a_long_poll_over_idle_partitions_answers_no_news_after_max_wait(tmp_path: Path) -> None:
    with BrokerProcess(["num.partitions=3"], log_dir=tmp_path) as b:
        create_topic(b.bootstrap, "idle")
        with RawClient(b.bootstrap) as c:
            opened = c.request(fetch("idle", {0: 0, 1: 0, 2: 0}))
            started = time.monotonic()
            answer = c.request(fetch("idle", {}, session_id=opened.session_id, epoch=1, max_wait_ms=300))
            waited = time.monotonic() - started
            assert (answer.error_code, answer.session_id, answered(answer)) == (0, opened.session_id, [])
            assert waited >= 0.29, f"answered after {waited * 1000:.0f} ms, before max_wait (300 ms)"


def open_files_of(pid: int, needle: str) -> list[str]:
    """The files a process holds open whose path contains `needle`."""
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue  # closed meanwhile
        if needle in target:
            found.append(target)
    return found


def test_a_session_left_on_a_deleted_topic_holds_none_of_its_files(tmp_path: Path) -> None:
    """A session that found a topic's partitions idle, then never fetched again: once the topic
    is deleted (and log.segment.delete.delay.ms passed), the broker holds none of its files open."""
    with BrokerProcess(["num.partitions=2", "log.segment.delete.delay.ms=0"], log_dir=tmp_path) as b:
        create_topic(b.bootstrap, "doomed")
        assert b.process is not None
        with RawClient(b.bootstrap) as c:
            opened = c.request(fetch("doomed", {0: 0, 1: 0}))
            assert opened.session_id != 0
            assert answered(c.request(fetch("doomed", {}, session_id=opened.session_id, epoch=1))) == []
            assert open_files_of(b.process.pid, "doomed-")  # the segments, while the topic lives
            admin = AdminClient({"bootstrap.servers": b.bootstrap})
            admin.delete_topics(["doomed"], operation_timeout=10)["doomed"].result(20)
            deadline = time.monotonic() + 30
            while open_files_of(b.process.pid, "doomed-"):
                assert time.monotonic() < deadline, open_files_of(b.process.pid, "doomed-")
                time.sleep(0.05)  # polled with a deadline: deletion runs in the background
