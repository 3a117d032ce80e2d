"""Full disks: log dirs on small tmpfs mounts fill up under acks=-1 producers.

Expected (the seed's LogDirFailureChannel): the producer whose append hits ENOSPC gets
KAFKA_STORAGE_ERROR, the dir goes offline (its partitions answer KAFKA_STORAGE_ERROR) while
the other dir keeps serving; when the last dir fails the broker halts. After a restart with
space, every acknowledged record is there, intact, at its offset.

Mounting tmpfs needs root (CAP_SYS_ADMIN); otherwise the test is skipped with the reason.
"""
from __future__ import annotations

import datetime
import os
import subprocess
import time
from pathlib import Path

import pytest
from kio.schema.create_topics.v5 import request as ct5
from kio.schema.fetch.v12 import request as fetch12
from kio.schema.produce.v9 import request as produce9

from asyncbroker.testing import BrokerProcess
from raw_client import RawClient
from wire.errors import ErrorCode
from wire.records import Record, build_batch, decode_records, iter_batch_headers, validate_batch

pytestmark = pytest.mark.timeout(180)

STORAGE_ERROR = ErrorCode.KAFKA_STORAGE_ERROR


def _mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True,
                   capture_output=True)


@pytest.fixture
def small_dirs(tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CAP_SYS_ADMIN)")
    dirs = [tmp_path / "small1", tmp_path / "small2"]
    mounted: list[Path] = []
    try:
        for d in dirs:
            try:
                _mount_tmpfs(d, "3m")
            except (subprocess.CalledProcessError, FileNotFoundError) as exc:
                pytest.skip(f"cannot mount tmpfs here: {getattr(exc, 'stderr', b'').decode(errors='replace') or exc}")
            mounted.append(d)
        yield dirs
    finally:
        for d in mounted:
            subprocess.run(["umount", "-l", str(d)], capture_output=True)


def _produce(c: RawClient, topic: str, value: bytes) -> tuple[int, int]:
    batch = build_batch([Record(offset=0, timestamp=int(time.time() * 1000), key=None, value=value, headers=[])])
    resp = c.request(produce9.ProduceRequest(
        transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=10),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
            produce9.PartitionProduceData(index=0, records=batch),)),)))
    p = resp.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def _fetch_all(c: RawClient, topic: str) -> tuple[int, dict[int, bytes]]:
    """(error code, {offset: value}) of the whole partition."""
    out: dict[int, bytes] = {}
    offset = 0
    while True:
        resp = c.request(fetch12.FetchRequest(
            cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=8 << 20,
            isolation_level=0, session_id=0, session_epoch=-1,
            topics=(fetch12.FetchTopic(topic=topic, partitions=(fetch12.FetchPartition(
                partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                log_start_offset=-1, partition_max_bytes=4 << 20),)),),
            forgotten_topics_data=(), rack_id=""))
        p = resp.responses[0].partitions[0]
        if p.error_code:
            return p.error_code, out
        data = p.records or b""
        for bp in iter_batch_headers(data):
            if bp.position + bp.header.size_in_bytes > len(data):
                break
            h = validate_batch(data, bp.position)
            for r in decode_records(data, bp.position):
                out[r.offset] = r.value  # type: ignore[assignment]
            offset = h.next_offset
        if offset >= p.high_watermark:
            return 0, out


def _create(c: RawClient, name: str) -> None:
    resp = c.request(ct5.CreateTopicsRequest(topics=(ct5.CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=(), configs=()),),
        timeout=datetime.timedelta(seconds=10), validate_only=False))
    assert resp.topics[0].error_code == 0


def _fill(c: RawClient, topic: str, acked: dict[int, bytes], limit: int = 400) -> int:
    """Produce 32 KiB records until an error; returns that error code."""
    for i in range(limit):
        value = os.urandom(16) + bytes([i % 251]) * (32 * 1024)
        err, base = _produce(c, topic, value)
        if err:
            return err
        acked[base] = value
    raise AssertionError(f"{topic}: {limit} x 32 KiB fit in a 3 MiB dir?")


def _wait(predicate, timeout: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.parametrize("flush", [["log.flush.interval.messages=1"], []], ids=["fsync-each", "page-cache"])
def test_full_dir_goes_offline_others_serve_last_one_halts(small_dirs: list[Path], flush: list[str]) -> None:
    d1, d2 = small_dirs
    broker = BrokerProcess([f"log.dirs={d1},{d2}", *flush], log_dir=d1)
    acked_a: dict[int, bytes] = {}
    acked_b: dict[int, bytes] = {}
    with broker:
        with RawClient(broker.bootstrap) as c:
            _create(c, "fill-a")
            _create(c, "fill-b")
            assert (d1 / "fill-a-0").is_dir() and (d2 / "fill-b-0").is_dir(), "placement: one topic per dir"
            _produce(c, "fill-b", b"before")  # something already written in the other dir
            err = _fill(c, "fill-a", acked_a)
            assert err == STORAGE_ERROR, ErrorCode(err).name
        with RawClient(broker.bootstrap) as c:
            # The dir is offline: its partition answers KAFKA_STORAGE_ERROR, the other dir serves.
            _wait(lambda: _fetch_all(c, "fill-a")[0] == STORAGE_ERROR, what="fill-a offline")
            assert _produce(c, "fill-a", b"more")[0] == STORAGE_ERROR
            err, base = _produce(c, "fill-b", b"after")
            assert err == 0
            assert _fetch_all(c, "fill-b") == (0, {0: b"before", 1: b"after"})
            acked_b.update({0: b"before", 1: b"after"})
            assert broker.returncode is None, "one offline dir must not stop the broker"
            # Fill the last live dir: the broker halts.
            try:
                _fill(c, "fill-b", acked_b)
            except (ConnectionError, OSError):
                pass
        _wait(lambda: broker.returncode is not None, what="the broker to halt with no live log dir")
        assert broker.returncode not in (0, None)
        assert "all log dirs" in broker.output()
        # Space again: every acknowledged record is back, intact, at its offset.
        for d in (d1, d2):
            subprocess.run(["mount", "-o", "remount,size=64m", str(d)], check=True)
        broker.start()
        with RawClient(broker.bootstrap) as c:
            err, got_a = _fetch_all(c, "fill-a")
            assert err == 0
            assert {o: got_a.get(o) for o in acked_a} == acked_a
            err, got_b = _fetch_all(c, "fill-b")
            assert err == 0
            assert {o: got_b.get(o) for o in acked_b} == acked_b
            assert _produce(c, "fill-a", b"resumed")[0] == 0
        print(f"\ndisk full: {len(acked_a)} + {len(acked_b)} acked records (32 KiB) survived two full dirs, "
              f"KAFKA_STORAGE_ERROR on the failing dir, halt on the last one")
