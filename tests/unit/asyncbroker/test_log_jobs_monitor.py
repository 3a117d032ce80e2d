"""The aiomonitor lever commands, driven over telnet by MonitorClient, on a real LogJobs."""
from __future__ import annotations

import asyncio
import types
from pathlib import Path

import pytest

from storage.log_config import LogConfig

from asyncbroker.monitor import parse_duration_ms, start_monitor
from asyncbroker.monitor_client import MonitorClient, MonitorCommandError
from asyncbroker.testing.broker import free_port_block
from test_log_jobs import DAY_MS, Env


def test_durations() -> None:
    assert parse_duration_ms("7d") == 7 * DAY_MS
    assert parse_duration_ms("36h") == 36 * 3_600_000
    assert parse_duration_ms("90s") == 90_000
    assert parse_duration_ms("250ms") == parse_duration_ms("250") == 250
    with pytest.raises(ValueError):
        parse_duration_ms("soon")


async def test_retention_and_advance_clock_commands_on_a_live_monitor(tmp_path: Path) -> None:
    env = Env(tmp_path, [])
    env.jobs.start()
    log = env.log(LogConfig(segment_bytes=3000, retention_ms=7 * DAY_MS))
    env.fill(log, 10)
    port = free_port_block(3)  # aiomonitor binds port..port+2
    monitor = start_monitor(types.SimpleNamespace(log_jobs=env.jobs, started=True), port=port)
    try:
        def script() -> tuple[list[str], list[str], list[str]]:
            with MonitorClient(port=port, timeout=20) as client:
                nothing = client.command("retention")
                moved = client.command("advance-clock 6d")
                deleted = client.command("retention --advance 25h")
                with pytest.raises(MonitorCommandError, match="duration"):
                    client.command("advance-clock soon")
                return nothing, moved, deleted

        nothing, moved, deleted = await asyncio.to_thread(script)
        assert nothing[-1].startswith("OK retention: 0 segment(s)")
        assert moved[-1].startswith(f"OK clock: advanced {6 * DAY_MS} ms")
        assert deleted[0].startswith("deleted t-0: segments [0, ")
        assert deleted[-1].startswith("OK retention: ") and f"advancing the clock {25 * 3_600_000} ms" in deleted[-1]
        assert log.num_segments == 1 and log.log_start_offset == log.log_end_offset == 100
        assert env.clock.offset_ms == 6 * DAY_MS + 25 * 3_600_000
    finally:
        monitor.close()
        await env.jobs.stop()
        env.log_manager.shutdown()


async def test_retention_json_output_decodes_into_a_retention_run(tmp_path: Path) -> None:
    import msgspec

    from asyncbroker.log_jobs import RetentionRun

    env = Env(tmp_path, [])
    env.jobs.start()
    log = env.log(LogConfig(segment_bytes=3000, retention_bytes=5000))
    env.fill(log, 30)
    port = free_port_block(3)  # aiomonitor binds port..port+2
    monitor = start_monitor(types.SimpleNamespace(log_jobs=env.jobs, started=True), port=port)
    try:
        def script() -> list[str]:
            with MonitorClient(port=port, timeout=20) as client:
                return client.command("retention --json")

        (line,) = await asyncio.to_thread(script)
        assert line.startswith("OK retention {")
        run = msgspec.json.decode(line[len("OK retention "):], type=RetentionRun)
        assert run.segments_deleted > 0 and run.deletions[0].topic == "t"
    finally:
        monitor.close()
        await env.jobs.stop()
        env.log_manager.shutdown()
