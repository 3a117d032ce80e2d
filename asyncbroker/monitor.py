"""The aiomonitor console (`asyncbroker serve --monitor`) with broker commands.

Connect with `nc 127.0.0.1 20101` (or `python -m aiomonitor.cli`). Besides
aiomonitor's own commands (ps, where, cancel, console, ...) it offers:

    topics            topics with id, partitions and config overrides
    logs [TOPIC]      per partition: log start / end offset, HW, segments, size
    metrics           the Prometheus counters as text
    config [PREFIX]   the effective broker configuration

The console runs in aiomonitor's own thread; commands only read broker
state (dict lookups and attribute reads), never mutate it. The python
console (`console`) exposes `broker` and `server` as locals.
"""
from __future__ import annotations

import asyncio
from typing import Any

import click
from aiomonitor import Monitor
from aiomonitor.termui.commands import auto_command_done, custom_help_option, monitor_cli

from asyncbroker.config import BROKER_CONFIG_KEYS, format_value
from asyncbroker.metrics import METRICS

DEFAULT_MONITOR_PORT = 20101


class BrokerMonitor(Monitor):
    """aiomonitor's Monitor that knows the broker it inspects."""

    broker: Any = None


def _broker(ctx: click.Context) -> Any:
    monitor = ctx.obj
    broker = getattr(monitor, "broker", None)
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
    for name in sorted(BROKER_CONFIG_KEYS):
        if name.startswith(prefix):
            marker = "*" if broker.config.is_explicit(name) else " "
            click.echo(f"{marker} {name}={format_value(broker.config.get(name))}")


def start_monitor(
    broker: Any,
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
    return monitor
