"""The `asyncbroker` command.

    asyncbroker serve [server.properties] [--override key=value]...
                      [--metrics-port N] [--monitor] [--monitor-port N]
                      [--console-port N] [--console-host HOST]
                      [--add-scram 'SCRAM-SHA-256=[name=U,password=P]']...
    asyncbroker audit LOGDIR... [--master local[*]] [--json FILE] [--html FILE]
    asyncbroker export LOGDIR... --out DIR [--format parquet]
        (both: [--remote-storage DIR|URI | --broker-config server.properties] [--local-only]
         for tiered topics' remote segments)
    asyncbroker migrate LOGDIR... --to-kafka [--dry-run] [--properties-out FILE]

Configuration comes from the properties file, then `ASYNCBROKER_<KEY>`
environment variables, then `--override` (see asyncbroker.config). A bad key
or value stops startup with exit code 1 and a message naming the key, before
any log directory is touched.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from storage.config_def import BROKER_KEYS, ConfigException

from asyncbroker.config import KafkaConfig

log = logging.getLogger("asyncbroker.cli")

EXIT_CONFIG_ERROR = 1
EXIT_STARTUP_ERROR = 1
EXIT_MIGRATION_ERROR = 1


class HelpFormatter(argparse.HelpFormatter):
    """argparse's own, given the terminal's width. Left to find it, argparse imports shutil for
    get_terminal_size at every add_argument, and shutil brings bz2 and lzma: 0.4 MB of an idle
    broker's memory, for a width read once."""

    def __init__(self, prog: str) -> None:
        columns = os.environ.get("COLUMNS", "")  # as shutil.get_terminal_size reads it first
        if columns.isdigit() and int(columns) > 0:
            width = int(columns)
        else:
            try:
                width = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
            except (AttributeError, ValueError, OSError):  # not a terminal, or no stdout at all
                width = 80  # shutil's fallback
        super().__init__(prog, width=width - 2)  # argparse keeps 2 columns free, as with shutil's width


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="asyncbroker", description="A Kafka-compatible single-node broker.",
                                     formatter_class=HelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = sub.add_parser("serve", help="run the broker", description="Run the broker until SIGTERM/SIGINT.",
                           formatter_class=HelpFormatter)
    serve.add_argument("config", nargs="?", help="server.properties file (Kafka key names)")
    serve.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                       help="set a broker key; wins over the file and ASYNCBROKER_* variables (repeatable)")
    serve.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                       help="serve Prometheus metrics over HTTP on this port")
    serve.add_argument("--metrics-host", default=None, metavar="HOST",
                       help="address for the metrics endpoint (default: the listener's host)")
    serve.add_argument("--monitor", action="store_true", help="start the aiomonitor console")
    serve.add_argument("--monitor-host", default="127.0.0.1", metavar="HOST")
    serve.add_argument("--monitor-port", type=int, default=20101, metavar="PORT",
                       help="aiomonitor terminal port (web UI on PORT+1, python console on PORT+2)")
    serve.add_argument("--console-port", type=int, default=None, metavar="PORT",
                       help="serve the web console over HTTP on this port (off unless given; 0: any free port)")
    serve.add_argument("--console-host", default="127.0.0.1", metavar="HOST",
                       help="address for the web console (default: 127.0.0.1)")
    serve.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    serve.add_argument("--add-scram", action="append", default=[], metavar="MECHANISM=[name=U,password=P]",
                       help="add or replace a SCRAM user before serving, in kafka-storage.sh format's syntax: "
                            "'SCRAM-SHA-256=[name=alice,password=alice-secret]' (repeatable)")
    migrate = sub.add_parser(
        "migrate", help="hand a stopped broker's log directories to Apache Kafka 4.4",
        description="Write the KRaft metadata a Kafka 4.4 node needs to serve these log directories as its "
                    "own (topics with their ids, partitions, configs). Give every log.dirs entry of the "
                    "stopped broker, the first one taking Kafka's metadata log.",
        formatter_class=HelpFormatter)
    migrate.add_argument("log_dirs", nargs="+", metavar="LOGDIR")
    migrate.add_argument("--to-kafka", action="store_true", required=True,
                         help="the direction (required: a directory Kafka wrote opens in asyncbroker as it is)")
    migrate.add_argument("--dry-run", action="store_true", help="check and report, change nothing")
    migrate.add_argument("--properties-out", metavar="FILE",
                         help="also write the server.properties Kafka needs to FILE (listeners on 9092 and 9093)")
    # Listed for --help; main() hands their arguments to pipeline.cli (needs the [spark] extra).
    sub.add_parser("audit", help="compaction audit of log directories (Spark)", add_help=False,
                   formatter_class=HelpFormatter)
    sub.add_parser("export", help="export log directories to Parquet (Spark)", add_help=False,
                   formatter_class=HelpFormatter)
    return parser


def load_config(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> KafkaConfig:
    return KafkaConfig.load(args.config, args.override, os.environ if environ is None else environ)


def _load_console() -> Callable[..., Awaitable[Any]]:
    from asyncbroker.console.server import start_console

    return start_console


async def _serve(config: KafkaConfig, args: argparse.Namespace) -> int:
    from asyncbroker.metrics import METRICS, start_metrics_server
    from asyncbroker.server import KafkaServer

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = KafkaServer(config, scram_users=args.scram_users, owns_process=True)
    metrics_server: asyncio.Server | None = None
    monitor: Any = None
    console: Any = None
    try:
        broker = await server.start()
        METRICS.bind(broker)
        if args.metrics_port is not None:
            host = args.metrics_host or config.listener_host_port()[0]
            metrics_server = await start_metrics_server(host, args.metrics_port)
        if args.monitor:
            from asyncbroker.monitor import start_monitor

            monitor = start_monitor(broker, host=args.monitor_host, port=args.monitor_port,
                                    extra_locals={"server": server})
            log.info("aiomonitor console on %s:%d", args.monitor_host, args.monitor_port)
        if args.console_port is not None:
            # Loaded only here, so a broker without the console never loads aiohttp or Jinja2, and
            # in a worker thread: the listener is already serving, and loading them on the loop
            # would hold a client's first answers back by the ~0.3 s the imports take.
            start_console = await asyncio.to_thread(_load_console)
            console = await start_console(broker, host=args.console_host, port=args.console_port)
    except Exception as exc:  # noqa: BLE001 - any startup failure ends the process with a message
        log.error("Fatal error during startup: %s", exc, exc_info=not isinstance(exc, OSError))
        if metrics_server is not None:
            metrics_server.close()
        if server.broker is not None:
            try:
                await server.broker.shutdown()
            except Exception:  # noqa: BLE001 - already failing; the first error is the one reported
                log.exception("Error while shutting down after a failed start")
        return EXIT_STARTUP_ERROR
    await stop.wait()
    if console is not None:
        await console.close()
    if monitor is not None:
        monitor.close()
    if metrics_server is not None:
        metrics_server.close()
    await server.stop()
    METRICS.unbind(broker)
    return 0


def serve(args: argparse.Namespace) -> int:
    try:
        config = load_config(args)
    except ConfigException as exc:
        print(f"asyncbroker: invalid configuration: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    from asyncbroker.server import configure_logging

    args.scram_users = []
    if args.add_scram:  # SCRAM (hashlib, json) loads only for a broker that uses it
        from asyncbroker.scram_credentials import parse_add_scram

        try:
            args.scram_users = [parse_add_scram(text) for text in args.add_scram]
        except ValueError as exc:
            print(f"asyncbroker: invalid --add-scram: {exc}", file=sys.stderr)
            return EXIT_CONFIG_ERROR

    configure_logging(args.log_level)
    for name in sorted(config.originals):
        if BROKER_KEYS[name].inert:
            log.info("%s is accepted for compatibility with Kafka's server.properties; it has no effect here", name)
    import uvloop

    return uvloop.run(_serve(config, args))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("audit", "export"):
        # The Spark jobs own their arguments (and --help); imported only here so
        # the broker itself never loads PySpark.
        from pipeline.cli import audit_main, export_main

        return {"audit": audit_main, "export": export_main}[argv[0]](argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "migrate":
        return migrate(args)
    return 2


def migrate(args: argparse.Namespace) -> int:
    from asyncbroker.kafka_migration import KAFKA_RELEASE, MigrationError, migrate_to_kafka, plan_migration

    try:
        plan = plan_migration(args.log_dirs) if args.dry_run else migrate_to_kafka(args.log_dirs)
    except MigrationError as exc:
        print(f"asyncbroker migrate: {exc}. Nothing was changed.", file=sys.stderr)
        return EXIT_MIGRATION_ERROR
    verb = "Would hand" if args.dry_run else "Handed"
    partitions = sum(len(t.partitions) for t in plan.topics)
    print(f"{verb} {len(plan.topics)} topic(s), {partitions} partition(s) of cluster {plan.cluster_id} to Apache "
          f"Kafka {KAFKA_RELEASE} as node {plan.node_id}.")
    properties = plan.server_properties()
    if args.properties_out and not args.dry_run:
        with open(args.properties_out, "w", encoding="utf-8") as out:
            out.write(properties)
        print(f"Wrote {args.properties_out}. ", end="")
    print("Start Kafka on these directories without formatting them; its server.properties needs "
          "(ports as you like):\n")
    print(properties, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
