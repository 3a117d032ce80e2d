"""The share coordinator's state of share partitions (`__share_group_state`), driven directly on
a real in-process Broker (real log directory in tmp, real internal topic and IO threads)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path

import pytest

from asyncbroker.broker import Broker
from asyncbroker.config import KafkaConfig

pytestmark = pytest.mark.timeout(60)


async def test_a_summary_waits_for_the_snapshot_being_appended(tmp_path: Path) -> None:
    """A leaving member's records are written in the background; a summary asked while that
    snapshot is being appended answers with it, not with the state before it (the oracle
    scenario test_alter_delete_and_fetch saw start offset 3 for Kafka's 5 when the append was
    slow)."""
    broker = Broker(KafkaConfig.load(None, [f"log.dirs={tmp_path}", "listeners=PLAINTEXT://127.0.0.1:0"], {}))
    await broker.startup()
    gate = threading.Event()
    try:
        coordinator = broker.share_partitions.coordinator
        topic_id = uuid.uuid4()
        await coordinator.write("g", topic_id, 0, 3, [], 0)  # the topic exists; start offset 3
        assert (await coordinator.summary("g", topic_id, 0)).start_offset == 3
        # Every IO thread held: the next append waits in the executor's queue until the gate opens.
        loop = asyncio.get_running_loop()
        held = [loop.run_in_executor(broker.io_executor, gate.wait, 30)
                for _ in range(broker.io_executor._max_workers)]
        writing = asyncio.ensure_future(coordinator.write("g", topic_id, 0, 5, [], 0))
        await asyncio.sleep(0)  # one turn: the write has queued its append
        summary = asyncio.ensure_future(coordinator.summary("g", topic_id, 0))
        await asyncio.sleep(0)
        assert not summary.done()
        gate.set()
        await asyncio.gather(writing, *held)
        assert (await summary).start_offset == 5
    finally:
        gate.set()
        await broker.shutdown()
