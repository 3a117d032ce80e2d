"""The console tests' broker: a real Broker started in-process on a temp log dir."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from asyncbroker.broker import Broker
from asyncbroker.config import KafkaConfig


@contextlib.asynccontextmanager
async def started_broker(tmp_path: Path, *overrides: str) -> AsyncIterator[Broker]:
    """A started Broker logging to `tmp_path`, on an ephemeral PLAINTEXT port unless `overrides`
    name the listeners; shut down on exit."""
    config = KafkaConfig.load(None, [f"log.dirs={tmp_path}", "listeners=PLAINTEXT://127.0.0.1:0",
                                     "offsets.topic.num.partitions=1", *overrides], {})
    broker = Broker(config)
    await broker.startup()
    try:
        yield broker
    finally:
        await broker.shutdown()
