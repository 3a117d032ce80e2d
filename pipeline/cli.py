"""`asyncbroker audit` and `asyncbroker export`: entry points the service's CLI dispatches to.

    asyncbroker audit LOGDIR [LOGDIR...] [--master local[*]] [--json FILE] [--html FILE]
    asyncbroker export LOGDIR [LOGDIR...] --out DIR [--format parquet]

Tiered topics (KIP-405) are read whole, their remote tier included, given where it is:

    --remote-storage DIR|URI   the broker's rsm.config.dir, or s3://bucket/prefix?endpoint_override=...
    --broker-config FILE       the broker's server.properties: its remote.log.storage.manager.class.name
                               and rsm.config.* keys say where (and its log.dirs are the LOGDIRs
                               when none are given)
    --local-only               read only the segments on local disk

Without them, a log dir whose `__remote_log_metadata` lists remote segments the read needs
fails with a message saying so, before Spark starts.

Both take the argv after the subcommand name and return a process exit code:
0 on success, 1 when the job failed, 2 for bad arguments (argparse's code).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["audit_main", "export_main"]


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


def _topics(text: str | None) -> list[str] | None:
    return [t for t in text.split(",") if t] if text else None


def _add_log_dir_arguments(p: argparse.ArgumentParser) -> None:
    """LOGDIRs and where a tiered topic's remote tier is: the same flags for audit and export."""
    p.add_argument("log_dirs", nargs="*", metavar="LOGDIR",
                   help="a log directory (log.dirs entry); default: the log.dirs of --broker-config")
    tier = p.add_argument_group("tiered storage (topics with remote.storage.enable)")
    tier.add_argument("--remote-storage", metavar="DIR|URI",
                      help="the remote tier: the local directory backend's directory (the broker's rsm.config.dir), "
                           "or an S3 bucket and prefix, s3://bucket/prefix?endpoint_override=HOST:PORT&scheme=http "
                           "(credentials from the usual AWS environment, or s3://KEY:SECRET@bucket/...)")
    tier.add_argument("--broker-config", metavar="FILE",
                      help="the broker's server.properties: remote.log.storage.manager.class.name and its "
                           "rsm.config.* keys locate the remote tier, as the broker does")
    tier.add_argument("--local-only", action="store_true",
                      help="read only the segments on local disk (not a tiered topic's remote segments)")


def _read_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict[str, str]:
    """The kafka-log options locating the remote tier; fills args.log_dirs from --broker-config's
    log.dirs when no LOGDIR was given. ValueError/OSError for a file or settings that do not work."""
    from pipeline.remote_tier import (
        CLASS_NAME_KEY,
        IMPL_PREFIX_KEY,
        LOCAL_ONLY_OPTION,
        REMOTE_STORAGE_OPTION,
        remote_tier_from_settings,
    )
    from storage.java_properties import parse_properties
    from storage.remote_storage_manager import RSM_CONFIG_PREFIX
    from wire.errors import KafkaError

    options: dict[str, str] = {}
    settings: dict[str, str] = {}
    if args.broker_config:
        with open(args.broker_config, encoding="utf-8") as f:
            settings = parse_properties(f.read())
    if not args.log_dirs:
        dirs = settings.get("log.dirs") or settings.get("log.dir")
        if not dirs:
            parser.error("give a LOGDIR, or --broker-config with log.dirs")
        args.log_dirs = [d.strip() for d in dirs.split(",") if d.strip()]
    if args.remote_storage:
        options[REMOTE_STORAGE_OPTION] = args.remote_storage
    elif settings:
        prefix = settings.get(IMPL_PREFIX_KEY, RSM_CONFIG_PREFIX)
        tiered = {k: v for k, v in settings.items()
                  if k in (CLASS_NAME_KEY, IMPL_PREFIX_KEY) or (prefix and k.startswith(prefix))}
        try:
            remote_tier_from_settings(tiered)  # a setting that cannot work says so now
        except (ValueError, KafkaError) as exc:
            raise ValueError(f"{args.broker_config}: {exc}") from None
        options.update(tiered)
    if args.local_only:
        options[LOCAL_ONLY_OPTION] = "true"
    return options


def _audit_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="asyncbroker audit",
        description="Compaction audit of Kafka log directories (a Spark job over the segment files).",
    )
    _add_log_dir_arguments(p)
    p.add_argument("--master", default="local[*]", help="Spark master URL (default: local[*])")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON")
    p.add_argument("--html", metavar="FILE", help="write the report as an HTML page with charts")
    p.add_argument("--topics", help="comma-separated topics to audit (default: all)")
    p.add_argument("--config", action="append", type=_key_value, default=[], metavar="KEY=VALUE",
                   help="topic-level default (e.g. min.cleanable.dirty.ratio=0.5); topic overrides "
                        "persisted in the log dir still win")
    p.add_argument("--dedupe-buffer-size", type=int, default=134_217_728,
                   help="log.cleaner.dedupe.buffer.size (default 134217728)")
    p.add_argument("--cleaner-threads", type=int, default=1, help="log.cleaner.threads (default 1)")
    p.add_argument("--load-factor", type=float, default=0.9,
                   help="log.cleaner.io.buffer.load.factor (default 0.9)")
    p.add_argument("--now-ms", type=int, default=None, help="audit as of this time (default: now)")
    p.add_argument("--quiet", action="store_true", help="do not print the table")
    return p


def audit_main(argv: Sequence[str] | None = None) -> int:
    """Run the compaction audit; prints a table, optionally writes JSON/HTML."""
    parser = _audit_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    from pipeline.audit_report import to_html, to_json, to_text
    from pipeline.cleaner_position import CleanerSettings
    from pipeline.compaction_audit import run_audit
    from pipeline.session import build_session
    from storage.log_config import LogConfig
    from wire.errors import KafkaError

    try:
        defaults = LogConfig.from_props(dict(args.config), LogConfig()) if args.config else None
        cleaner = CleanerSettings(args.dedupe_buffer_size, args.cleaner_threads, args.load_factor)
        options = _read_options(args, parser)
        _check_log_dirs(args.log_dirs)
        # The session starts only once run_audit's checks before Spark have passed.
        report = run_audit(lambda: build_session(args.master, "asyncbroker-audit"), args.log_dirs,
                           topics=_topics(args.topics), defaults=defaults, cleaner=cleaner, now_ms=args.now_ms,
                           read_options=options)
    except (KafkaError, OSError, ValueError) as exc:
        print(f"audit failed: {exc}", file=sys.stderr)
        return 1
    if args.json:
        Path(args.json).write_bytes(to_json(report))
    if args.html:
        Path(args.html).write_text(to_html(report), encoding="utf-8")
    if not args.quiet:
        sys.stdout.write(to_text(report))
    return 0


def _export_parser() -> argparse.ArgumentParser:
    from pipeline.parquet_export import EXPORT_FORMATS

    p = argparse.ArgumentParser(
        prog="asyncbroker export",
        description="Export the records of Kafka log directories, partitioned by topic and partition.",
    )
    _add_log_dir_arguments(p)
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--format", default="parquet", choices=EXPORT_FORMATS)
    p.add_argument("--master", default="local[*]", help="Spark master URL (default: local[*])")
    p.add_argument("--topics", help="comma-separated topics (default: all)")
    p.add_argument("--overwrite", action="store_true", help="replace DIR if it exists")
    p.add_argument("--include-control", action="store_true", help="also export control records")
    return p


def export_main(argv: Sequence[str] | None = None) -> int:
    """Export records to Parquet (or ORC/JSON); prints how many were written."""
    parser = _export_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    from pipeline.parquet_export import export_records
    from pipeline.session import build_session
    from wire.errors import KafkaError

    try:
        options = _read_options(args, parser)
        _check_log_dirs(args.log_dirs)
        if args.include_control:
            options["includeControl"] = "true"
        count = export_records(lambda: build_session(args.master, "asyncbroker-export"), args.log_dirs, args.out,
                               fmt=args.format, topics=_topics(args.topics),
                               mode="overwrite" if args.overwrite else "errorifexists", read_options=options)
    except (KafkaError, OSError, ValueError) as exc:
        print(f"export failed: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # Spark's AnalysisException (e.g. DIR exists) is not an OSError
        if type(exc).__name__ != "AnalysisException":
            raise
        print(f"export failed: {exc}", file=sys.stderr)
        return 1
    print(f"exported {count} records to {args.out} ({args.format})")
    return 0


if __name__ == "__main__":  # pragma: no cover - `python -m pipeline.cli audit|export ...`
    commands = {"audit": audit_main, "export": export_main}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print("usage: python -m pipeline.cli {audit,export} ...", file=sys.stderr)
        sys.exit(2)
    sys.exit(commands[sys.argv[1]](sys.argv[2:]))


def _check_log_dirs(log_dirs: list[str]) -> None:
    """A local log dir must exist before Spark starts; one given as a URI (s3://...) is
    checked when it is listed."""
    from pipeline.log_dir_fs import remote_log_dir

    for d in log_dirs:
        if remote_log_dir(d) is None and not Path(d).is_dir():
            raise FileNotFoundError(f"log dir {d} does not exist")
