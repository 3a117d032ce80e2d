"""The console's aiohttp application: routes, error pages, and its start and stop.

GET pages only read; every POST checks the CSRF token, acts through asyncbroker.console.actions
and redirects back (303) with the outcome in `?message=`. A refusal (a Kafka error, bad input)
is shown on the page with a 4xx status; the broker carries on. Each response carries its server
time in a Server-Timing header (`render;dur=<ms>`)."""

from __future__ import annotations

import asyncio
import datetime
import functools
import logging
import shutil
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiohttp import web

from wire.errors import GroupIdNotFoundError, KafkaError, UnknownTopicOrPartitionError

from asyncbroker.acl_binding import AclOperation as Op, ResourceType as Res
from asyncbroker.console import actions
from asyncbroker.console.audit import AuditBusy, AuditRunner, AuditState, spark_missing
from asyncbroker.console.auth import REALM, ConsoleAccess, ConsoleAuthenticator, LoginRequired, NotAuthorized
from asyncbroker.console.csrf import CsrfError, CsrfToken
from asyncbroker.console.group_views import group_detail, group_rows
from asyncbroker.console.message_browser import RECORDS_MAX, BrowseError, BrowseQuery, browse
from asyncbroker.console.rates import RateWindow
from asyncbroker.console.templates import Renderer
from asyncbroker.console.topic_views import (TopicDetail, broker_log_dirs, partition_charts, partition_detail,
                                             topic_detail, topic_rows)
from asyncbroker.console.value_format import Encoding

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

log = logging.getLogger("asyncbroker.console")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
BROKER_KEY: web.AppKey[Broker] = web.AppKey("broker")
RENDERER_KEY = web.AppKey("renderer", Renderer)
CSRF_KEY = web.AppKey("csrf", CsrfToken)
AUTH_KEY = web.AppKey("auth", ConsoleAuthenticator)
RATES_KEY = web.AppKey("rates", RateWindow)
AUDIT_KEY = web.AppKey("audit", AuditRunner)
RENDER_POOL_KEY = web.AppKey("render_pool", ThreadPoolExecutor)
ACCESS = web.RequestKey("access", ConsoleAccess)


class InputError(Exception):
    """A query parameter or form field that is not what the page needs."""


def _int(value: str | None, name: str, default: int | None = None) -> int | None:
    if value is None or value.strip() == "":
        return default
    try:
        return int(value.strip())
    except ValueError:
        raise InputError(f"{name} must be a whole number, not {value!r}") from None


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds, or an ISO 8601 date-time (UTC unless it names its offset)."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"{text!r} is neither epoch milliseconds nor an ISO date-time (2024-05-01T12:00:00)") \
            from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return int(when.timestamp() * 1000)


def _access(request: web.Request) -> ConsoleAccess:
    return request[ACCESS]


def _page_context(request: web.Request, context: dict[str, Any]) -> dict[str, Any]:
    access = request.get(ACCESS)
    principal = access.principal if isinstance(access, ConsoleAccess) else ""
    return {"message": request.query.get("message", ""), "principal": principal,
            "login": request.app[AUTH_KEY].login_required,
            "csrf_token": request.app[CSRF_KEY].for_principal(principal), **context}


def _html(html: str, status: int) -> web.Response:
    return web.Response(text=html, content_type="text/html", charset="utf-8", status=status)


async def _page(request: web.Request, name: str, status: int = 200, **context: Any) -> web.Response:
    """A page: its data gathered on the loop by the handler (in memory, immutable snapshots), its
    template rendered off the loop on the console's render thread, so a 1,000-partition page never
    holds the loop for the whole render (Jinja2 renders from a shared Environment thread-safely)."""
    full = _page_context(request, context)
    renderer = request.app[RENDERER_KEY]
    html = await asyncio.get_running_loop().run_in_executor(request.app[RENDER_POOL_KEY],
                                                            functools.partial(renderer.render, name, **full))
    return _html(html, status)


def _error_page(request: web.Request, status: int, text: str) -> web.Response:
    """Small, and rendered in the error middleware itself: on the loop."""
    return _html(request.app[RENDERER_KEY].render(
        "error.html", **_page_context(request, {"error": text, "title": "Error"})), status)


@web.middleware
async def _errors_and_timing(request: web.Request, handler: Handler) -> web.StreamResponse:
    started = time.perf_counter()
    try:
        response = await handler(request)
    except web.HTTPException:
        raise
    except LoginRequired as exc:
        response = _error_page(request, 401, str(exc))
        response.headers["WWW-Authenticate"] = REALM
    except AuditBusy as exc:
        response = _error_page(request, 409, str(exc))
    except (CsrfError, NotAuthorized) as exc:
        response = _error_page(request, 403, str(exc))
    except (UnknownTopicOrPartitionError, GroupIdNotFoundError) as exc:
        response = _error_page(request, 404, str(exc) or type(exc).__name__)
    except (BrowseError, InputError, actions.ActionError) as exc:
        response = _error_page(request, 400, str(exc))
    except KafkaError as exc:
        response = _error_page(request, 409, f"{type(exc).__name__}: {exc}")
    except Exception:  # noqa: BLE001 - a console bug must not take the broker down
        log.exception("[Console] Error serving %s %s", request.method, request.path)
        response = _error_page(request, 500, "The console failed to render this page; the broker log has why.")
    response.headers["Server-Timing"] = f"render;dur={(time.perf_counter() - started) * 1000:.2f}"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                                                           "script-src 'self'; frame-ancestors 'none'")
    return response


@web.middleware
async def _login(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The request's principal (a login when the broker has an authorizer), for every page."""
    principal = await request.app[AUTH_KEY].principal(request.headers.get("Authorization"))
    request[ACCESS] = ConsoleAccess(request.app[BROKER_KEY], principal, request.remote or "")
    return await handler(request)


def _broker(request: web.Request) -> Broker:
    return request.app[BROKER_KEY]


# -- pages -------------------------------------------------------------------------------------

async def overview(request: web.Request) -> web.Response:
    from storage.config_def import BROKER_KEYS, format_value

    broker = _broker(request)
    access = _access(request)
    # DescribeConfigs of the broker and DescribeLogDirs, as Kafka authorizes them.
    changed = [(name, format_value(broker.config.get(name))) for name in sorted(BROKER_KEYS)
               if broker.config.is_explicit(name)] if access.can(Op.DESCRIBE_CONFIGS, Res.CLUSTER) else None
    dirs: list[tuple[str, int, int]] | None = None
    if access.can(Op.DESCRIBE, Res.CLUSTER):
        dirs = []
        for d in broker.config.log_dirs:
            usage = await broker.run_blocking(shutil.disk_usage, d)
            dirs.append((d, usage.total, usage.free))
    uptime_ms = int((time.monotonic() - broker.started_at) * 1000)
    rates = request.app[RATES_KEY].rates() if access.can(Op.DESCRIBE, Res.CLUSTER) else None
    return await _page(request, "overview.html", title="Overview", changed=changed, dirs=dirs, uptime_ms=uptime_ms,
                 rates=rates,
                 node_id=broker.node_id, advertised=sorted(broker.advertised.items()))


async def topics_page(request: web.Request) -> web.Response:
    broker, access = _broker(request), _access(request)
    # Metadata: only the topics the principal may describe.
    names = [m.name for m in broker.topics.all() if access.can_describe_topic(m.name)]
    rates = request.app[RATES_KEY].rates()
    return await _page(request, "topics.html", title="Topics", topics=topic_rows(broker, names),
                 message_rates=rates.messages_per_second, interval_s=rates.interval_s,
                 may_create=access.can_create_some_topic(),
                 may_run_retention=access.can(Op.ALTER, Res.CLUSTER))


async def topic_page(request: web.Request) -> web.Response:
    topic, access = request.match_info["topic"], _access(request)
    access.require(Op.DESCRIBE, Res.TOPIC, topic)
    detail = topic_detail(_broker(request), topic)
    if not access.can(Op.DESCRIBE_CONFIGS, Res.TOPIC, topic):
        detail = TopicDetail(detail.topic, detail.partitions, [])
    may = {op.name: access.can(op, Res.TOPIC, topic) for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER_CONFIGS,
                                                              Op.DESCRIBE_CONFIGS)}
    may["COMPACT"] = access.can(Op.ALTER, Res.CLUSTER)
    return await _page(request, "topic.html", title=f"Topic {detail.topic.name}", detail=detail, may=may)


async def partition_page(request: web.Request) -> web.Response:
    partition = _int(request.match_info["partition"], "partition")
    assert partition is not None
    _access(request).require(Op.DESCRIBE, Res.TOPIC, request.match_info["topic"])
    detail = await partition_detail(_broker(request), request.match_info["topic"], partition)
    return await _page(request, "partition.html", title=f"{detail.topic}-{detail.partition}", detail=detail,
                 charts=partition_charts(detail), log_dirs=broker_log_dirs(_broker(request)))


async def messages_page(request: web.Request) -> web.Response:
    q = request.query
    topic = request.match_info["topic"]
    _access(request).require(Op.READ, Res.TOPIC, topic)  # Fetch
    partition = _int(request.match_info["partition"], "partition")
    assert partition is not None
    try:
        encoding = Encoding(q.get("format", "auto"))
    except ValueError:
        raise InputError(f"format must be one of auto, utf8, json, hex, not {q.get('format')!r}") from None
    timestamp = parse_timestamp(q["timestamp"]) if q.get("timestamp", "").strip() else None
    query = BrowseQuery(topic, partition, _int(q.get("offset"), "offset"), timestamp,
                        _int(q.get("limit"), "limit", 50) or 50, q.get("key", ""), encoding)
    try:
        page = await browse(_broker(request), query)
    except BrowseError as exc:
        status = 404 if _broker(request).topics.get(topic) is None else 400
        return await _page(request, "messages.html", status=status, title=f"Messages of {topic}-{partition}", page=None,
                     query=query, error=str(exc), records_max=RECORDS_MAX, form=dict(q))
    return await _page(request, "messages.html", title=f"Messages of {topic}-{partition}", page=page, query=query,
                 records_max=RECORDS_MAX, form=dict(q))


async def groups_page(request: web.Request) -> web.Response:
    access = _access(request)
    # ListGroups: every group with DESCRIBE on the cluster, else those the principal may describe;
    # the lag only over topics it may describe (OffsetFetch's filter).
    all_groups = access.can(Op.DESCRIBE, Res.CLUSTER)
    rows = await group_rows(_broker(request),
                            lambda g: all_groups or access.can(Op.DESCRIBE, Res.GROUP, g),
                            access.can_describe_topic)
    return await _page(request, "groups.html", title="Consumer groups", groups=rows)


async def group_page(request: web.Request) -> web.Response:
    broker, access = _broker(request), _access(request)
    access.require(Op.DESCRIBE, Res.GROUP, request.match_info["group"])  # DescribeGroups, OffsetFetch
    detail = await group_detail(broker, request.match_info["group"], access.can_describe_topic)
    topics = sorted({o.topic for o in detail.offsets} | {m.name for m in broker.topics.all() if not m.is_internal
                                                         and access.can(Op.READ, Res.TOPIC, m.name)})
    return await _page(request, "group.html", title=f"Group {detail.row.group_id}", detail=detail, topics=topics)


# -- forms -------------------------------------------------------------------------------------

async def _form(request: web.Request) -> dict[str, str]:
    data = await request.post()
    form = {k: v for k, v in data.items() if isinstance(v, str)}
    request.app[CSRF_KEY].check(form.get("csrf_token"), _access(request).principal)
    return form


def _back(to: str, message: str) -> web.HTTPSeeOther:
    log.info("[Console] %s", message)
    return web.HTTPSeeOther(f"{to}?{urllib.parse.urlencode({'message': message})}")


def _quoted(name: str) -> str:
    return urllib.parse.quote(name, safe="")


async def create_topic(request: web.Request) -> web.Response:
    form = await _form(request)
    partitions = _int(form.get("partitions"), "partitions", -1)
    assert partitions is not None
    name = form.get("name", "").strip()
    if not _access(request).can_create_topic(name):  # CreateTopics: CREATE on the cluster or the topic
        raise NotAuthorized(f"Not authorized to access topics: [{name}] ({_access(request).principal} needs CREATE)")
    message = await actions.create_topic(_broker(request), name, partitions,
                                         actions.parse_configs(form.get("configs", "")))
    # CREATE does not imply DESCRIBE (as in Kafka): back to the list when the new topic is not visible.
    raise _back(f"/topics/{_quoted(name)}" if _access(request).can_describe_topic(name) else "/topics", message)


async def delete_topic(request: web.Request) -> web.Response:
    await _form(request)
    _access(request).require(Op.DELETE, Res.TOPIC, request.match_info["topic"])
    raise _back("/topics", await actions.delete_topic(_broker(request), request.match_info["topic"]))


async def alter_topic(request: web.Request) -> web.Response:
    form = await _form(request)
    topic = request.match_info["topic"]
    _access(request).require(Op.ALTER_CONFIGS, Res.TOPIC, topic)  # IncrementalAlterConfigs
    message = await actions.alter_topic(_broker(request), topic, form.get("key", "").strip(),
                                        form.get("value", "").strip())
    raise _back(f"/topics/{_quoted(topic)}", message)


async def produce(request: web.Request) -> web.Response:
    form = await _form(request)
    topic = request.match_info["topic"]
    _access(request).require(Op.WRITE, Res.TOPIC, topic)  # Produce
    partition = _int(form.get("partition"), "partition", 0)
    assert partition is not None
    headers: list[tuple[str, bytes | None]] = []
    for line in form.get("headers", "").splitlines():
        if line.strip():
            k, _, v = line.partition("=")
            headers.append((k.strip(), v.strip().encode()))
    key = form.get("key", "")
    message = await actions.produce(_broker(request), topic, partition, key.encode() if key else None,
                                    form.get("value", "").encode(), headers)
    raise _back(f"/topics/{_quoted(topic)}", message)


async def compact(request: web.Request) -> web.Response:
    form = await _form(request)
    topic = request.match_info["topic"]
    # An operator's lever, as Kafka's broker-wide operations (AlterReplicaLogDirs, ElectLeaders): ALTER
    # on the cluster; and DESCRIBE on the topic, so a refusal never tells whether it exists.
    _access(request).require(Op.DESCRIBE, Res.TOPIC, topic)
    _access(request).require(Op.ALTER, Res.CLUSTER)
    partition = _int(form.get("partition"), "partition")
    message = await actions.compact(_broker(request), topic, partition)
    to = f"/topics/{_quoted(topic)}" + (f"/{partition}" if partition is not None else "")
    raise _back(to, message)


async def run_retention(request: web.Request) -> web.Response:
    form = await _form(request)
    _access(request).require(Op.ALTER, Res.CLUSTER)
    back = form.get("back", "/topics")
    if not back.startswith("/") or back.startswith("//"):
        back = "/topics"
    raise _back(back, await actions.run_retention(_broker(request)))


async def reset_offsets(request: web.Request) -> web.Response:
    form = await _form(request)
    group = request.match_info["group"]
    # An admin client's alterConsumerGroupOffsets: OffsetCommit (READ on the group and the topic)
    # after ListOffsets (DESCRIBE on the topic, implied by READ).
    _access(request).require(Op.READ, Res.GROUP, group)
    _access(request).require(Op.READ, Res.TOPIC, form.get("topic", ""))
    message = await actions.reset_offsets(_broker(request), group, form.get("topic", ""), form.get("to", ""),
                                          form.get("value", ""))
    raise _back(f"/groups/{_quoted(group)}", message)


def _require_audit(request: web.Request) -> str:
    """The audit is an operator's lever, as compact: DESCRIBE on the topic and ALTER on the cluster."""
    topic = request.match_info["topic"]
    _access(request).require(Op.DESCRIBE, Res.TOPIC, topic)
    _access(request).require(Op.ALTER, Res.CLUSTER)
    return topic


async def start_audit(request: web.Request) -> web.Response:
    await _form(request)
    topic = _require_audit(request)
    if _broker(request).topics.get(topic) is None:
        raise UnknownTopicOrPartitionError(f"Unknown topic {topic}")
    missing = spark_missing()
    if missing is not None:
        raise actions.ActionError(missing)
    request.app[AUDIT_KEY].start(topic)
    raise web.HTTPSeeOther(f"/topics/{_quoted(topic)}/audit")


async def audit_page(request: web.Request) -> web.Response:
    topic = _require_audit(request)
    # Views, not the runs: the template renders off the loop while the audit's task moves its
    # run from running to done, and the refresh must agree with the state the page shows.
    found = request.app[AUDIT_KEY].runs.get(topic)
    run = found.view() if found is not None else None
    running = request.app[AUDIT_KEY].running
    return await _page(request, "audit.html", title=f"Audit of {topic}", topic=topic, run=run,
                 busy=running.view() if running is not None and running.topic != topic else None,
                 spark_missing=spark_missing(), refresh=run is not None and run.state is AuditState.RUNNING)


async def audit_report(request: web.Request) -> web.StreamResponse:
    topic = _require_audit(request)
    run = request.app[AUDIT_KEY].runs.get(topic)
    if run is None or run.state is not AuditState.DONE:
        raise actions.ActionError(f"No audit report of {topic} is ready.")
    body = await _broker(request).run_blocking(run.report.read_bytes)
    response = web.Response(body=body, content_type="text/html", charset="utf-8")
    # The report is the audit's own page (its values escaped as it writes them); served apart from
    # the console: sandboxed (no script, no same origin), or as a download.
    response.headers["Content-Security-Policy"] = "sandbox; default-src 'none'; style-src 'unsafe-inline'; " \
                                                  "img-src data:; frame-ancestors 'self'"
    response.headers["X-Frame-Options"] = "SAMEORIGIN"
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in topic)
    disposition = "attachment" if request.query.get("download") else "inline"
    response.headers["Content-Disposition"] = f'{disposition}; filename="audit-{safe}.html"'
    return response


async def index(request: web.Request) -> web.Response:
    raise web.HTTPFound("/overview")


def build_app(broker: Broker, csrf: CsrfToken | None = None) -> web.Application:
    app = web.Application(middlewares=[_errors_and_timing, _login], client_max_size=2 * 1024 * 1024)
    token = csrf or CsrfToken()
    app[BROKER_KEY] = broker
    app[CSRF_KEY] = token
    app[AUTH_KEY] = ConsoleAuthenticator(broker)
    app[RATES_KEY] = RateWindow()
    app[RENDERER_KEY] = Renderer(token.value)
    app[AUDIT_KEY] = AuditRunner(broker)
    # One thread: renders are CPU (the GIL), so more threads would only take turns.
    app[RENDER_POOL_KEY] = ThreadPoolExecutor(max_workers=1, thread_name_prefix="console-render")

    async def _close_audit(app: web.Application) -> None:
        await app[AUDIT_KEY].close()
        app[RENDER_POOL_KEY].shutdown(wait=False, cancel_futures=True)

    app.on_cleanup.append(_close_audit)
    app.router.add_get("/", index)
    app.router.add_get("/overview", overview)
    app.router.add_get("/topics", topics_page)
    app.router.add_post("/topics", create_topic)
    app.router.add_post("/retention", run_retention)
    app.router.add_get("/topics/{topic}", topic_page)
    app.router.add_post("/topics/{topic}/delete", delete_topic)
    app.router.add_post("/topics/{topic}/config", alter_topic)
    app.router.add_post("/topics/{topic}/produce", produce)
    app.router.add_post("/topics/{topic}/compact", compact)
    app.router.add_post("/topics/{topic}/audit", start_audit)
    app.router.add_get("/topics/{topic}/audit", audit_page)
    app.router.add_get("/topics/{topic}/audit/report", audit_report)
    app.router.add_get("/topics/{topic}/{partition}", partition_page)
    app.router.add_get("/topics/{topic}/{partition}/messages", messages_page)
    app.router.add_get("/groups", groups_page)
    app.router.add_get("/groups/{group}", group_page)
    app.router.add_post("/groups/{group}/reset", reset_offsets)
    app.router.add_static("/static", str(Path(__file__).with_name("static")))
    return app


class ConsoleServer:
    """The running console: its aiohttp runner and the address it is bound to."""

    def __init__(self, runner: web.AppRunner, host: str, port: int) -> None:
        self._runner = runner
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    async def close(self) -> None:
        await self._runner.cleanup()


async def start_console(broker: Broker, *, host: str = "127.0.0.1", port: int = 0) -> ConsoleServer:
    runner = web.AppRunner(build_app(broker), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    bound = port
    sockets = getattr(site._server, "sockets", None)  # noqa: SLF001 - the bound port when 0 was asked for
    if sockets:
        bound = int(sockets[0].getsockname()[1])
    console = ConsoleServer(runner, host, bound)
    log.info("[Console] Web console listening on %s", console.url)
    return console
