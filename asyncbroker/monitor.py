"""The aiomonitor console (`asyncbroker serve --monitor`) with broker commands.

Connect with `nc 127.0.0.1 20101` (or `python -m aiomonitor.cli`). Besides
aiomonitor's own commands (ps, where, cancel, console, ...) it offers:

    topics            topics with id, partitions and config overrides
    logs [TOPIC]      per partition: log start / end offset, HW, segments, size
    metrics           the Prometheus counters as text
    config [PREFIX]   the effective broker configuration
    retention [--advance DURATION]
                      run a retention pass now (after moving the clock)
    advance-clock DURATION
                      move the broker's clock forward (e.g. 7d, 36h, 90s)
    clean TOPIC [PARTITION] [--no-wait] [--json]
                      compact a topic now (roll, clean, swap), whatever its dirty ratio

The console runs in aiomonitor's own thread; the inspection commands only
read broker state (dict lookups and attribute reads), never mutate it. The
two retention commands are the test/CI lever on a live broker: they run on
the broker's event loop (through LogJobs, like the scheduled jobs) and end
with one line starting `OK ` or `ERROR `, so scripts
(asyncbroker.monitor_client) can drive them. The python console (`console`)
exposes `broker` and `server` as locals.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import re
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

import click
import msgspec
from aiomonitor import Monitor
from aiomonitor.termui.commands import (
    auto_async_command_done,
    auto_command_done,
    custom_help_option,
    monitor_cli,
)

from storage.config_def import BROKER_KEYS, format_value

from asyncbroker.metrics import METRICS

if TYPE_CHECKING:
    from asyncbroker.broker import Broker
    from asyncbroker.log_jobs import LogJobs

DEFAULT_MONITOR_PORT = 20101

log = logging.getLogger(__name__)


class MonitorStartError(OSError):
    """The console could not start (one of its ports taken): the broker does not start either."""


class BrokerMonitor(Monitor):
    """aiomonitor's Monitor that knows the broker it inspects.

    Monitor.start() waits, on the broker's event loop, for its UI thread to be up, and that
    thread only says so once it listens. A failure before then (a port already taken) left
    start() waiting forever: a broker that listened but answered nothing and ignored SIGTERM.
    Here the UI thread's failure releases start() and is kept for start_monitor to raise.
    (aiomonitor's private `_ui_main`, `_ui_started`, `_monitored_loop` and
    `_original_task_factory`, as of 0.7: the only ones used, all here, checked at import.)
    """

    broker: Broker | None = None
    start_error: BaseException | None = None

    def _ui_main(self) -> None:
        try:
            super()._ui_main()
        except Exception as exc:  # noqa: BLE001 - reported by start_monitor, or logged below
            if self._ui_started.is_set():
                log.error("The aiomonitor console stopped: %s", exc)
                return
            self.start_error = exc
            self._ui_started.set()

    def abandon(self) -> None:
        """After a failed start: the broker's tasks are made by its own factory again (close()
        would wait on the UI loop, which is gone)."""
        self._monitored_loop.set_task_factory(self._original_task_factory)
        self._closed = True


if not hasattr(Monitor, "_ui_main"):  # (the other three are set in Monitor.__init__ and start())
    raise ImportError("this aiomonitor's Monitor has no _ui_main, which asyncbroker.monitor.BrokerMonitor "
                      "relies on (written against aiomonitor 0.7)")


def _attached(ctx: click.Context) -> Broker | None:
    """The broker of the console running this command (ctx.obj is our BrokerMonitor)."""
    monitor: BrokerMonitor = ctx.obj
    return monitor.broker


def _broker(ctx: click.Context) -> Broker:
    broker = _attached(ctx)
    if broker is None:
        raise click.ClickException("no broker attached to this monitor")
    return broker


@monitor_cli.command(name="topics")
@custom_help_option
@auto_command_done
def do_topics(ctx: click.Context) -> None:
    """List topics: id, partitions, config overrides"""
    broker = _broker(ctx)
    rows = sorted(broker.topics.all(), key=lambda m: m.name)
    for meta in rows:
        overrides = ",".join(f"{k}={v}" for k, v in sorted(meta.configs.items())) or "-"
        click.echo(f"{meta.name}\tid={meta.topic_id}\tpartitions={meta.partitions}\tconfigs={overrides}")
    click.echo(f"{len(rows)} topic(s)")


@monitor_cli.command(name="logs")
@click.argument("topic", required=False)
@custom_help_option
@auto_command_done
def do_logs(ctx: click.Context, topic: str | None) -> None:
    """Per-partition offsets and sizes (optionally of one topic)"""
    broker = _broker(ctx)
    logs = sorted(broker.log_manager.all_logs(), key=lambda lg: (lg.topic_partition.topic, lg.topic_partition.partition))
    for lg in logs:
        tp = lg.topic_partition
        if topic is not None and tp.topic != topic:
            continue
        click.echo(
            f"{tp.topic}-{tp.partition}\tstart={lg.log_start_offset}\tend={lg.log_end_offset}"
            f"\thw={lg.high_watermark}\tsegments={len(lg.segments)}\tbytes={lg.size_in_bytes}"
        )


@monitor_cli.command(name="metrics")
@custom_help_option
@auto_command_done
def do_metrics(ctx: click.Context) -> None:
    """The Prometheus metrics, as served on --metrics-port"""
    text = METRICS.render().decode()
    click.echo("\n".join(line for line in text.splitlines() if not line.startswith("#")))


@monitor_cli.command(name="config")
@click.argument("prefix", required=False, default="")
@custom_help_option
@auto_command_done
def do_config(ctx: click.Context, prefix: str) -> None:
    """The broker configuration (keys starting with PREFIX)"""
    broker = _broker(ctx)
    for name in sorted(BROKER_KEYS):
        if name.startswith(prefix):
            marker = "*" if broker.config.is_explicit(name) else " "
            click.echo(f"{marker} {name}={format_value(broker.config.get(name))}")


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_UNIT_MS = {"ms": 1, None: 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str) -> int:
    """'7d', '36h', '90m', '45s', '250ms' or plain milliseconds -> milliseconds."""
    m = _DURATION.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a duration (examples: 7d, 36h, 90m, 45s, 250ms, 1000)")
    return int(m.group(1)) * _UNIT_MS[m.group(2)]


def _log_jobs(broker: Broker | None) -> LogJobs:
    if broker is None or not broker.started:
        raise RuntimeError("no broker with LogJobs (asyncbroker.log_jobs) is attached to this monitor")
    return broker.log_jobs


def _on_broker_loop(ctx: click.Context, work: Callable[[], Coroutine[Any, Any, Any]],
                    render: Callable[[Any], Iterable[str]]) -> None:
    """Run `work` on the broker's loop, then print `render(result)`, or one ERROR line."""
    monitor = ctx.obj

    @auto_async_command_done
    async def run(ctx: click.Context) -> None:
        try:
            future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(work(), monitor._monitored_loop)
            result = await asyncio.wrap_future(future)
        except Exception as exc:  # noqa: BLE001 - reported to the console user
            click.echo(f"ERROR {type(exc).__name__}: {exc}")
            return
        for line in render(result):
            click.echo(line)

    task = monitor._ui_loop.create_task(run(ctx))
    monitor._termui_tasks.add(task)


def render_retention(result: tuple[int | None, Any]) -> list[str]:
    """Lines for a retention pass: one per partition that lost segments, then the OK line."""
    advanced, run = result
    lines = [
        f"deleted {d.topic}-{d.partition}: segments {d.base_offsets} ({d.bytes} bytes), "
        f"log start offset {d.log_start_offset_before} -> {d.log_start_offset_after}"
        for d in run.deletions
    ]
    clock = f" after advancing the clock {advanced} ms" if advanced else ""
    lines.append(
        f"OK retention: {run.segments_deleted} segment(s), {run.bytes_deleted} bytes deleted from "
        f"{len(run.deletions)} partition(s) of {run.logs_checked} checked in {run.duration_ms:.1f} ms{clock}"
    )
    return lines


def render_retention_json(result: tuple[int | None, Any]) -> list[str]:
    """The machine-readable form (asyncbroker.testing decodes it into a RetentionRun)."""
    return [f"OK retention {msgspec.json.encode(result[1]).decode()}"]


@monitor_cli.command(name="retention")
@click.option("--advance", "advance", default=None, metavar="DURATION",
              help="first move the broker's clock forward this much (7d, 36h, 90s, ms)")
@click.option("--json", "as_json", is_flag=True, help="print the result as one `OK retention {json}` line")
@custom_help_option
def do_retention(ctx: click.Context, advance: str | None, as_json: bool) -> None:
    """Run a retention pass now (test/CI lever)"""
    broker = _attached(ctx)

    async def work() -> tuple[int | None, Any]:
        jobs = _log_jobs(broker)
        advance_ms = parse_duration_ms(advance) if advance is not None else None
        if advance_ms:
            await jobs.advance_clock(advance_ms)
        return advance_ms, await jobs.run_retention_now()

    _on_broker_loop(ctx, work, render_retention_json if as_json else render_retention)


@monitor_cli.command(name="tier")
@click.option("--json", "as_json", is_flag=True, help="print the result as one `OK tier {json}` line")
@custom_help_option
def do_tier(ctx: click.Context, as_json: bool) -> None:
    """Run tiered storage's copy and expiration round now (test/CI lever)"""
    broker = _attached(ctx)

    async def work() -> Any:
        rlm = getattr(broker, "remote_log_manager", None)
        if rlm is None:
            raise RuntimeError("tiered storage is off (remote.log.storage.system.enable=false)")
        await rlm.run_once()
        return rlm.stats

    def render(stats: Any) -> list[str]:
        if as_json:
            return [f"OK tier {msgspec.json.encode(stats).decode()}"]
        return [f"OK tier: {stats.copied_segments} segment(s) copied ({stats.copied_bytes} bytes), "
                f"{stats.deleted_segments} deleted, {stats.failed_copies} failed copies since start"]

    _on_broker_loop(ctx, work, render)


@monitor_cli.command(name="advance-clock")
@click.argument("duration")
@custom_help_option
def do_advance_clock(ctx: click.Context, duration: str) -> None:
    """Move the broker's clock forward (test/CI lever)"""
    broker = _attached(ctx)

    async def work() -> list[str]:
        jobs = _log_jobs(broker)
        ms = parse_duration_ms(duration)
        now = await jobs.advance_clock(ms)
        ahead = getattr(jobs.clock, "offset_ms", 0)
        return [f"OK clock: advanced {ms} ms, now {now} ({ahead} ms ahead of the system clock)"]

    _on_broker_loop(ctx, work, lambda lines: lines)


def render_clean(result: tuple[str, dict[int, Any] | None]) -> list[str]:
    """Lines for a clean: one per partition (Kafka's summary numbers), then the OK line."""
    topic, per_partition = result
    if per_partition is None:
        return [f"OK clean {topic}: started in the background"]
    lines = []
    for partition, stats in sorted(per_partition.items()):
        if stats is None:
            lines.append(f"{topic}-{partition}: nothing to clean")
        else:
            lines.append(
                f"{topic}-{partition}: read {stats.messages_read} messages ({stats.bytes_read} bytes), "
                f"wrote {stats.messages_written} ({stats.bytes_written} bytes) in {stats.elapsed_secs:.3f} s")
    cleaned = sum(1 for stats in per_partition.values() if stats is not None)
    lines.append(f"OK clean {topic}: {cleaned} of {len(per_partition)} partition(s) cleaned")
    return lines


def render_clean_json(result: tuple[str, dict[int, Any] | None]) -> list[str]:
    """The machine-readable form: `OK clean {"<partition>": CleanerStats | null}`."""
    return [f"OK clean {msgspec.json.encode(result[1]).decode()}"]


@monitor_cli.command(name="clean")
@click.argument("topic")
@click.argument("partition", required=False, type=int)
@click.option("--no-wait", "no_wait", is_flag=True, help="start the clean and return at once")
@click.option("--json", "as_json", is_flag=True, help="print the result as one `OK clean {json}` line")
@custom_help_option
def do_clean(ctx: click.Context, topic: str, partition: int | None, no_wait: bool, as_json: bool) -> None:
    """Compact TOPIC (or one partition) now and wait for it (test/CI lever)"""
    broker = _attached(ctx)

    async def work() -> tuple[str, dict[int, Any] | None]:
        if broker is None or not broker.started:
            raise RuntimeError("no broker with a log cleaner is attached to this monitor")
        if no_wait:
            await broker.cleaner_ready()  # fail now (cleaner disabled), not in the background
            if broker.topics.get(topic) is None:
                raise RuntimeError(f"unknown topic {topic}")
            task = asyncio.create_task(broker.clean_now(topic, partition), name=f"clean-{topic}")
            _background_cleans.add(task)
            task.add_done_callback(_clean_finished)
            return topic, None
        return topic, await broker.clean_now(topic, partition)

    _on_broker_loop(ctx, work, render_clean_json if as_json else render_clean)


_background_cleans: set[asyncio.Task[Any]] = set()
"""`clean --no-wait` tasks (referenced so they are not garbage-collected mid-run)."""


def _clean_finished(task: asyncio.Task[Any]) -> None:
    _background_cleans.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logging.getLogger(__name__).error("Background clean %s failed", task.get_name(), exc_info=task.exception())


def start_monitor(
    broker: Broker,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_MONITOR_PORT,
    extra_locals: dict[str, Any] | None = None,
) -> BrokerMonitor:
    """Start the console on `port` (web UI on port+1, python console on port+2)."""
    monitor = BrokerMonitor(
        asyncio.get_running_loop(),
        host=host,
        termui_port=port,
        webui_port=port + 1,
        console_port=port + 2,
        locals={"broker": broker, **(extra_locals or {})},
    )
    monitor.broker = broker
    monitor.start()
    if monitor.start_error is not None:
        monitor.abandon()
        raise MonitorStartError(f"The aiomonitor console could not start on {host}:{port}-{port + 2}: "
                                f"{monitor.start_error}") from monitor.start_error
    return monitor
