"""The CLI's argument parsing and the metrics module it serves (--metrics-port)."""
from __future__ import annotations

import asyncio

import pytest

from asyncbroker.cli import build_parser, main
from asyncbroker.metrics import BrokerMetrics, api_name, start_metrics_server


def test_parser_serve_arguments() -> None:
    args = build_parser().parse_args(
        ["serve", "server.properties", "--override", "a=1", "--override", "b=2", "--metrics-port", "9404", "--monitor"]
    )
    assert args.config == "server.properties"
    assert args.override == ["a=1", "b=2"]
    assert args.metrics_port == 9404 and args.monitor and args.monitor_port == 20101
    assert build_parser().parse_args(["serve"]).config is None


def test_help_is_wrapped_to_columns_as_argparse_wraps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The help formatter finds the width without shutil, and wraps as argparse's own does."""
    import argparse

    def serve_help(columns: int, formatter: type[argparse.HelpFormatter] | None = None) -> str:
        monkeypatch.setenv("COLUMNS", str(columns))
        serve = build_parser()._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
        if formatter is not None:
            serve.formatter_class = formatter
        return str(serve.format_help())

    narrow, wide = serve_help(40), serve_help(120)
    assert len(narrow.splitlines()) > len(wide.splitlines())
    # argparse's own formatter reads COLUMNS through shutil.get_terminal_size.
    assert narrow == serve_help(40, argparse.HelpFormatter) and wide == serve_help(120, argparse.HelpFormatter)


def test_main_rejects_bad_config_before_starting(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: object) -> None:
    for key in [k for k in __import__("os").environ if k.startswith("ASYNCBROKER_")]:
        monkeypatch.delenv(key)
    assert main(["serve", "--override", "num.partitions=-3"]) == 1
    err = capsys.readouterr().err
    assert "num.partitions" in err and "--override" in err


def test_api_names_are_kafkas() -> None:
    assert api_name(0) == "Produce"
    assert api_name(19) == "CreateTopics"
    assert api_name(44) == "IncrementalAlterConfigs"
    assert api_name("Fetch") == "Fetch"


def test_counters() -> None:
    m = BrokerMetrics()
    m.request(0)
    m.request(0)
    m.request("Fetch")
    m.request_error(0)
    m.bytes_in(100)
    m.bytes_out(40)
    m.messages_in("t", 3)
    m.connection_opened()
    m.connection_opened()
    m.connection_closed()
    assert m.value("asyncbroker_requests_total", {"api": "Produce"}) == 2
    assert m.value("asyncbroker_requests_total", {"api": "Fetch"}) == 1
    assert m.value("asyncbroker_request_errors_total", {"api": "Produce"}) == 1
    assert m.value("asyncbroker_bytes_in_total") == 100
    assert m.value("asyncbroker_bytes_out_total") == 40
    assert m.value("asyncbroker_messages_in_total", {"topic": "t"}) == 3
    assert m.value("asyncbroker_connections") == 1
    # no broker bound: the log gauges report zero partitions
    assert m.value("asyncbroker_partitions") == 0


async def test_http_endpoint() -> None:
    from asyncbroker.metrics import METRICS

    METRICS.request(3)
    server = await start_metrics_server("127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        assert b'asyncbroker_requests_total{api="Metadata"}' in body
        assert b"_created" not in body
    finally:
        server.close()
        await server.wait_closed()
