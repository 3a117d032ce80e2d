"""One asyncio.Protocol per client connection: frames in, responses out, in order.

Kafka serves one request per connection at a time and answers pipelined
requests in the order they arrived; clients rely on that (they match
responses to requests by order as well as by correlation id). So each
connection has one worker task draining a queue of frames, and reading is
paused while too many frames are queued (backpressure instead of unbounded
memory), or while the broker-wide budget of received frames
(queued.max.request.bytes, asyncbroker.memory_pool) refuses the next one.
When a worker starts is the request channel's call
(asyncbroker.request_channel): across connections, in arrival order.
Anything the connection cannot parse ends the connection, as it does in
Kafka, and never affects other connections.
"""

from __future__ import annotations

import asyncio
import collections
import datetime
import logging
import os
import select
import struct
import time
import types
from collections.abc import Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

from wire.framing import FrameReader, FramingError
from wire.headers import parse_request_header, response_header_version, response_prefix
from wire.api_versions import unsupported_api_versions_response
from wire.messages import ApiKey, decode_request, encode_response

from asyncbroker.client_quota_manager import NANOS_TO_PERCENTAGE
from asyncbroker.encoded_response import EncodedResponse, FileRegion, with_throttle_time
from asyncbroker.metrics import METRICS
from asyncbroker.request_channel import RequestChannel
from asyncbroker.request_context import ANONYMOUS, RequestContext, Session

if TYPE_CHECKING:
    from asyncbroker.broker import Broker
    from asyncbroker.handlers import HandlerRegistry

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")

# Pause reading from a client that has this many unanswered frames queued,
MAX_QUEUED_FRAMES = 32
# or this many bytes of them. Reading ahead hides a round trip for small requests; a producer
# that pipelines 1 MB batches gains nothing from a deeper queue (the connection serves one
# request at a time), and its buffers, bounded here, fit in what malloc keeps for reuse
# (KafkaServer(owns_process=True)). A larger frame is still read whole.
READ_AHEAD_BYTES = 4 * 1024 * 1024
# Below this size a file region is read into memory rather than sendfile'd:
# one syscall either way, and a write() keeps the transport's buffering simple.
SENDFILE_MIN_BYTES = 64 * 1024


# The requests a SASL connection may send before it has authenticated.
_BEFORE_AUTHENTICATION = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


class _InlineWorker:
    """Stands for a worker running inside KafkaConnection._start_worker: nothing to cancel,
    since no other callback runs until it returns or becomes a task."""

    def cancel(self) -> None:
        pass


_INLINE = _InlineWorker()


@types.coroutine
def _finish(worker: Coroutine[Any, Any, None], waiting_on: Any) -> Generator[Any, Any, None]:
    """Drive a coroutine that started outside any task and stopped at its first wait: the
    task running this yields what the coroutine waits on (as the coroutine would have) and
    passes results, and a cancellation, back into it."""
    while True:
        try:
            sent = yield waiting_on
        except BaseException as exc:  # noqa: BLE001 - thrown in by the task (a cancellation): the worker's to handle
            try:
                waiting_on = worker.throw(exc)
            except StopIteration:
                return
        else:
            try:
                waiting_on = worker.send(sent)
            except StopIteration:
                return


class CloseConnection(Exception):
    """Raised by a handler to drop the connection instead of answering.

    Kafka does this for an acks=0 produce that failed: there is no response to
    carry the error, so closing makes the client refresh its metadata.
    """


class KafkaConnection(asyncio.BufferedProtocol):
    """Serves the Kafka protocol on one accepted socket.

    A BufferedProtocol: the transport receives straight into wire's
    FrameReader buffers (get_buffer/buffer_updated), so large Produce frames
    are never copied on their way in.
    """

    def __init__(self, broker: "Broker", registry: "HandlerRegistry", connections: set["KafkaConnection"], *,
                 request_channel: RequestChannel, listener_name: str = "",
                 on_close: Callable[[], None] | None = None) -> None:
        self._broker = broker
        self._channel = request_channel  # decides when this connection's worker starts
        self._on_close = on_close  # frees the connection's slot in ConnectionQuotas, once
        self._listener_name = listener_name
        self._tls = False
        self._registry = registry
        self._connections = connections
        self._loop = asyncio.get_running_loop()
        self._frames = FrameReader(broker.socket_request_max_bytes)
        # queued.max.request.bytes (asyncbroker.memory_pool): None when unbounded. Each frame this
        # connection has taken from the pool counts in _pool_bytes until it is answered; what is
        # left when the connection closes goes back then.
        self._pool = broker.memory_pool
        self._pool_bytes = 0
        self._memory_muted = False  # reading stopped: the pool refused the next frame
        if self._pool is not None:
            self._frames.reserve = self._reserve
        self._queue: collections.deque[Any] = collections.deque()
        # Bytes of complete frames waiting in _queue. Reading pauses at READ_AHEAD_BYTES (or one
        # maximal request, socket.request.max.bytes, if smaller), so a connection holds that
        # and at most two frames more (the one in service and one being received), whatever a
        # client pipelines (Kafka holds one: it mutes a channel per request).
        self._queued_bytes = 0
        self._max_queued_bytes = max(1, min(broker.socket_request_max_bytes, READ_AHEAD_BYTES))
        # The connection's worker: None when idle, _INLINE while it serves inside _start_worker,
        # the task that finishes its requests once one of them had to wait.
        self._worker: asyncio.Task[None] | _InlineWorker | None = None
        self._worker_due = False  # waiting in the request channel for its turn to start
        self._transport: asyncio.Transport | None = None
        self._peer = "?"
        self._ctx = RequestContext(broker)
        self._reading_paused = False
        self._write_ready: asyncio.Future[None] | None = None
        self._mute_ends: asyncio.Future[None] | None = None  # set while a throttle mutes the connection
        self._closing = False  # graceful: answer what is queued, then close
        self._closed = False
        self.last_active = self._loop.time()  # for connections.max.idle.ms

    # -- asyncio.Protocol -------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's TCPTransport
        peer = transport.get_extra_info("peername")
        self._peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        ssl_object = transport.get_extra_info("ssl_object")
        principal = ANONYMOUS
        self._tls = ssl_object is not None
        if ssl_object is not None:
            from asyncbroker.ssl_factory import principal_of  # only TLS connections need it

            principal = principal_of(ssl_object)
        session = Session(principal)
        if self._broker.config.security_protocol(self._listener_name) in ("SASL_PLAINTEXT", "SASL_SSL"):
            from asyncbroker.sasl_authenticator import SaslServerAuthenticator  # SASL listeners only

            session.authenticated = False
            session.sasl = SaslServerAuthenticator(self._broker, self._listener_name)
            # Until it has authenticated, a client's frames are bounded by sasl.server.max.receive.size.
            self._frames.max_size = self._broker.config.sasl_server_max_receive_size
        local = transport.get_extra_info("sockname")
        connection_id = (f"{local[0]}:{local[1]}-{peer[0]}:{peer[1]}-0"
                         if isinstance(local, tuple) and isinstance(peer, tuple) else "")
        self._ctx = RequestContext(self._broker, f"/{peer[0]}" if isinstance(peer, tuple) else "",
                                   self._listener_name, session, connection_id)
        self._connections.add(self)
        METRICS.connection_opened()
        log.debug("Accepted connection from %s", self._peer)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._frames.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        if self._closing or self._closed:
            return
        METRICS.bytes_in(nbytes)
        self.last_active = self._loop.time()
        self._take_frames(nbytes)

    def _take_frames(self, nbytes: int) -> None:
        try:
            frames = self._frames.buffer_updated(nbytes)
        except FramingError as exc:
            log.warning("Closing socket connection to %s due to invalid frame: %s", self._peer, exc)
            self._abort()
            return
        if frames:
            self._queue.extend(frames)
            self._queued_bytes += len(frames[0]) if len(frames) == 1 else sum(len(f) for f in frames)
            if self._worker is None and not self._worker_due:
                self._worker_due = True
                self._channel.submit(self._start_worker)
        if (self._memory_muted or len(self._queue) >= MAX_QUEUED_FRAMES
                or self._queued_bytes >= self._max_queued_bytes) and not self._reading_paused:
            self._reading_paused = True
            self._transport.pause_reading()  # type: ignore[union-attr]

    def _reserve(self, size: int) -> bool:
        """FrameReader.reserve: take the next frame's bytes from the pool, or stop reading."""
        assert self._pool is not None
        # Holding bytes already (a request queued or in service): this one is read ahead.
        if self._pool.try_allocate(size, read_ahead=self._pool_bytes > 0):
            self._pool_bytes += size
            return True
        if not self._memory_muted:
            self._memory_muted = True
            self._pool.wait(self._memory_available)
        return False

    def _memory_available(self) -> None:
        """The pool has memory again: take the frame it refused, and read on."""
        if not self._memory_muted or self._closing or self._closed:
            return
        self._memory_muted = False
        self._take_frames(0)  # may be refused again (the pool is shared): then muted again
        if self._reading_paused:
            self._resume_reading_if_room(1)

    def _resume_reading_if_room(self, fraction: int) -> None:
        """Read again unless the pool refused the next frame or the queue holds 1/fraction of
        its bounds (half, from the worker: reading resumes with room for a burst)."""
        if self._memory_muted or self._closing or self._closed or len(self._queue) >= MAX_QUEUED_FRAMES // fraction \
                or self._queued_bytes >= self._max_queued_bytes // fraction:
            return
        self._reading_paused = False
        self._transport.resume_reading()  # type: ignore[union-attr]

    def eof_received(self) -> bool | None:
        # The client half-closed: finish answering what it sent, then close.
        self._closing = True
        if self._worker is None and not self._worker_due:
            return None  # let the transport close now
        return True  # keep the transport open for the queued answers

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._pool is not None:
            self._pool.cancel_wait(self._memory_available)
            if self._pool_bytes:  # frames read and never answered
                self._pool.release(self._pool_bytes)
                self._pool_bytes = 0
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            on_close()
        if self in self._connections:
            self._connections.discard(self)
            METRICS.connection_closed()
            self._broker.connection_closed(self._ctx.connection_id)
        if self._write_ready is not None and not self._write_ready.done():
            self._write_ready.set_result(None)
        if self._worker is not None and not self._closing:
            # Nobody will read the answers: stop a parked fetch or a pending append wait.
            self._worker.cancel()
        log.debug("Connection from %s closed%s", self._peer, f": {exc}" if exc else "")

    def pause_writing(self) -> None:
        if self._write_ready is None or self._write_ready.done():
            self._write_ready = self._loop.create_future()

    def resume_writing(self) -> None:
        if self._write_ready is not None and not self._write_ready.done():
            self._write_ready.set_result(None)

    # -- lifecycle --------------------------------------------------------

    async def close_gracefully(self) -> None:
        """Stop reading, answer every request already received, then close."""
        self._closing = True
        if self._transport is None or self._closed:
            return
        if not self._reading_paused:
            self._reading_paused = True
            self._transport.pause_reading()
        if self._mute_ends is not None:
            # Its answer is sent and nothing more will be read: a closing connection does not sit
            # out a throttle (Kafka's shutdown closes muted channels too).
            _set_done(self._mute_ends)
        if self._worker_due:
            self._start_worker()  # closing: its requests are answered now, not in their turn
        worker = self._worker
        if isinstance(worker, asyncio.Task):  # (never _INLINE here: that one has returned already)
            try:
                await asyncio.shield(worker)
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - closing anyway
                pass
        if not self._closed:
            self._transport.close()

    def close_if_idle(self, now: float, max_idle_s: float) -> bool:
        """connections.max.idle.ms: drop a connection with nothing in flight for that long."""
        if self._worker is not None or self._worker_due or self._closed or now - self.last_active < max_idle_s:
            return False
        log.info("Closing idle connection %s (idle for %.0f s)", self._peer, now - self.last_active)
        self._closed = True
        if self._transport is not None:
            self._transport.close()
        return True

    def _abort(self) -> None:
        self._closed = True
        self._queue.clear()
        self._queued_bytes = 0
        if self._transport is not None:
            self._transport.abort()

    # -- request processing -----------------------------------------------

    def _start_worker(self) -> None:
        """The request channel's turn for this connection (or its close): serve what is queued.

        The worker runs at once, inside this call, until a request has to wait (an executor
        append, a parked fetch, a coordinator's write); only then does it become a task. Most
        requests never wait, and a task of their own was a tenth of their CPU."""
        if not self._worker_due:
            return  # started already (a graceful close does not wait for its turn)
        self._worker_due = False
        if self._worker is None and self._queue and not self._closed:
            worker = self._serve_queue()
            self._worker = _INLINE  # buffer_updated must not queue a second worker meanwhile
            try:
                waiting_on = worker.send(None)
            except StopIteration:
                return  # every queued request answered (its finally reset _worker)
            finally:
                if self._worker is _INLINE:
                    self._worker = None
            self._worker = self._loop.create_task(_finish(worker, waiting_on))

    async def _serve_queue(self) -> None:
        try:
            while self._queue and not self._closed:
                frame = self._queue.popleft()
                self._queued_bytes -= len(frame)
                if self._reading_paused:
                    self._resume_reading_if_room(2)
                try:
                    await self._serve_one(frame)
                finally:
                    if self._pool is not None and not self._closed:  # (closed: connection_lost returned them all)
                        self._pool_bytes -= len(frame)
                        self._pool.release(len(frame))
                if self._write_ready is not None and not self._write_ready.done():
                    await self._write_ready  # the client reads slower than we answer
        except asyncio.CancelledError:
            pass
        except Exception:  # noqa: BLE001 - one connection's bug must not reach the loop
            log.exception("Closing socket connection to %s after an unexpected error", self._peer)
            self._abort()
        finally:
            self._worker = None
            self.last_active = self._loop.time()
            if self._closing and not self._closed and self._transport is not None:
                self._transport.close()

    async def _serve_one(self, frame: Any) -> None:
        session = self._ctx.session
        if session.sasl is not None and session.sasl.raw_tokens and not session.authenticated:
            if not self._raw_sasl_token(bytes(frame)):
                await self._failed_authentication_delay()
                self._abort()
            return
        try:
            header, body_offset = parse_request_header(frame)
        except FramingError as exc:
            log.warning("Closing socket connection to %s due to an unparsable request header: %s", self._peer, exc)
            self._abort()
            return
        expires_at = self._ctx.session.expires_at
        if expires_at is not None and header.api_key not in _BEFORE_AUTHENTICATION and time.monotonic() > expires_at:
            log.info("Closing socket connection to %s: its SASL session expired (connections.max.reauth.ms) "
                     "and it did not re-authenticate", self._peer)
            self._abort()
            return
        if not self._ctx.session.authenticated and header.api_key not in _BEFORE_AUTHENTICATION:
            log.info("Closing socket connection to %s: unexpected Kafka request of type %s during SASL handshake",
                     self._peer, header.api_key)
            self._abort()
            return
        spec = self._registry.get(header.api_key)
        if spec is None:
            log.warning(
                "Closing socket connection to %s: unknown API key %s (client %r)",
                self._peer, header.api_key, header.client_id,
            )
            self._abort()
            return
        if not spec.min_version <= header.api_version <= spec.max_version:
            if header.api_key == ApiKey.API_VERSIONS:
                # KIP-511: answer with v0 and ApiVersions' own range (all Kafka lists) so the
                # client can retry with a version we serve.
                own: dict[int, tuple[int, int]] = {ApiKey.API_VERSIONS: (spec.min_version, spec.max_version)}
                body = unsupported_api_versions_response(own)
                self._write_frame(response_prefix(header.correlation_id, 0, len(body)), [body], len(body))
                return
            log.warning(
                "Closing socket connection to %s: unsupported version %s of %s (client %r)",
                self._peer, header.api_version, spec.name, header.client_id,
            )
            self._abort()
            return
        try:
            request = decode_request(header, frame, body_offset)
        except Exception as exc:  # noqa: BLE001 - any decode failure is the client's malformed request
            log.warning(
                "Closing socket connection to %s due to an invalid %s v%s request: %s",
                self._peer, spec.name, header.api_version, exc,
            )
            self._abort()
            return
        METRICS.request(header.api_key)
        quotas = self._broker.quota_managers
        session.request_size, session.throttle_ms, session.parked_ns = len(frame), 0, 0
        started_ns = time.perf_counter_ns()
        try:
            result = await spec.handle(self._ctx, header, request)
        except CloseConnection as exc:
            METRICS.request_error(header.api_key)
            log.info("Closing socket connection to %s: %s", self._peer, exc)
            self._abort()
            return
        except Exception:
            METRICS.request_error(header.api_key)
            raise
        handled_ns = time.perf_counter_ns()
        try:
            throttle_ms = session.throttle_ms
            if quotas.quotas and header.api_key not in _BEFORE_AUTHENTICATION:
                # The request quota: this request's time on the loop (not the time a fetch parked).
                used_ns = handled_ns - started_ns - session.parked_ns
                throttle_ms = max(throttle_ms, quotas.request.record_and_get_throttle_time_ms(
                    session.quota_user, header.client_id or "", used_ns * NANOS_TO_PERCENTAGE, time.monotonic() * 1000))
                if throttle_ms and result is not None:
                    result = _with_throttle_time(result, header.api_key, header.api_version, throttle_ms)
            if result is None:
                if throttle_ms > 0:
                    await self._throttle(throttle_ms)
                return  # acks=0 produce: Kafka sends nothing back
            if self._closed:
                _release_files(result)
                return
            if session.close_after_response:
                await self._failed_authentication_delay()
            header_version = response_header_version(header.api_key, header.api_version)
            if isinstance(result, EncodedResponse):
                prefix = response_prefix(header.correlation_id, header_version, result.size)
                if result.has_file_regions:
                    await self._write_with_files(prefix, result)
                else:
                    self._write_frame(prefix, result.parts, result.size)
            else:
                body = encode_response(result)
                self._write_frame(response_prefix(header.correlation_id, header_version, len(body)), [body], len(body))
            if self._ctx.session.authenticated and self._frames.max_size != self._broker.socket_request_max_bytes:
                self._frames.max_size = self._broker.socket_request_max_bytes  # authenticated: the usual bound
            if self._ctx.session.close_after_response and self._transport is not None:
                self._closed = True
                self._transport.close()  # after the answer already written: a failed authentication
            if throttle_ms > 0:
                await self._throttle(throttle_ms)
        finally:
            # Recorded once the answer is written: the client has it a little sooner.
            METRICS.request_time(header.api_key, handled_ns - started_ns)

    async def _throttle(self, throttle_ms: int) -> None:
        """A client over its quota: the answer is already sent (with throttle_time_ms, KIP-219);
        the connection reads and serves nothing more for that long, as Kafka mutes the channel."""
        if throttle_ms <= 0 or self._closed or self._closing or self._transport is None:
            return  # a closing connection reads nothing more: there is nothing to mute
        if not self._reading_paused:
            self._transport.pause_reading()
        mute_ends = self._mute_ends = self._loop.create_future()
        timer = self._loop.call_later(throttle_ms / 1000, _set_done, mute_ends)
        try:
            await mute_ends  # the throttle time, or until a graceful close ends it
        finally:
            timer.cancel()
            self._mute_ends = None
        if not self._reading_paused and not self._closed and not self._closing:
            self._transport.resume_reading()

    def _raw_sasl_token(self, token: bytes) -> bool:
        """A SASL token after a SaslHandshake v0: answered with the bare next token. False for a
        failed authentication, which the caller closes (there is no answer to carry an error)."""
        from asyncbroker.sasl_authenticator import AuthenticationFailed

        session = self._ctx.session
        try:
            answer, principal = session.sasl.authenticate(token)
        except AuthenticationFailed as exc:
            log.info("Failed authentication with %s (%s)", self._peer, exc)
            return False
        if principal is not None:
            session.principal, session.authenticated = principal, True
            self._frames.max_size = self._broker.socket_request_max_bytes
        if self._transport is not None and not self._closed:
            self._transport.write(_SIZE.pack(len(answer)) + answer)
        return True

    async def _failed_authentication_delay(self) -> None:
        """connection.failed.authentication.delay.ms: as Kafka does, a failed authentication is
        answered and its connection closed only after this delay, and nothing more is read
        meanwhile, which slows a client that guesses credentials."""
        delay_ms = self._broker.config.connection_failed_authentication_delay_ms
        if delay_ms <= 0 or self._transport is None or self._closed or self._closing:
            return  # (a broker shutting down closes at once, as Kafka's does)
        if not self._reading_paused:
            self._reading_paused = True
            self._transport.pause_reading()
        # The whole delay, never less: the loop's timers keep whole milliseconds, and one set for
        # 100 ms fired after 99.6.
        deadline = time.monotonic() + delay_ms / 1000
        while (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(left)

    def _write_frame(self, prefix: bytes, parts: list[Any], size: int) -> None:
        """Write one answer: `prefix` (its frame size and response header), then its body's
        `size` bytes in `parts`."""
        transport = self._transport
        if transport is None or self._closed:
            return
        if len(parts) == 1 and size < 16384:
            transport.write(prefix + parts[0])
        else:
            transport.writelines([prefix, *parts])
        METRICS.bytes_out(len(prefix) + size)  # (after the write: the answer leaves first)

    async def _write_with_files(self, prefix: bytes, result: EncodedResponse) -> None:
        """Write a body whose record bytes are still in segment files.

        Small regions are read in the executor (never on the loop) and written;
        large ones go through sendfile on a dup of the socket from an executor
        thread once the transport's own buffer is empty, so the kernel moves
        page-cache bytes straight to the socket and ordering is preserved
        (this connection writes nothing else meanwhile).
        """
        transport = self._transport
        assert transport is not None
        try:
            transport.write(prefix)
            METRICS.bytes_out(len(prefix) + result.size)
            pending: list[Any] = []
            for part in result.parts:
                if not isinstance(part, FileRegion):
                    pending.append(part)
                    continue
                # A TLS connection's bytes must pass through its SSL object: never sendfile there.
                if part.size < SENDFILE_MIN_BYTES or not self._broker.use_sendfile or self._tls:
                    pending.append(await self._broker.run_blocking(part.read))
                    continue
                if pending:
                    transport.writelines(pending)
                    pending = []
                await self._sendfile(part)
                if self._closed:
                    return
            if pending and not self._closed:
                transport.writelines(pending)
        finally:
            _release_files(result)

    async def _sendfile(self, region: FileRegion) -> None:
        transport = self._transport
        assert transport is not None
        sock = transport.get_extra_info("socket")
        if sock is None:
            transport.write(await self._broker.run_blocking(region.read))
            return
        # Our earlier bytes must reach the socket before the file's bytes do; the
        # transport signals nothing when its buffer empties below the low-water
        # mark, so check on short timers (rare: only when the client reads slowly).
        while transport.get_write_buffer_size() > 0 and not self._closed:
            await asyncio.sleep(0.0005)
        if self._closed:
            return
        # Duplicated here, on the loop: once the thread runs, the transport may have closed the
        # socket and its number may name another connection's socket or a segment file.
        sock_fd = os.dup(sock.fileno())
        try:
            fut = self._loop.run_in_executor(self._broker.io_executor, _sendfile_blocking, sock_fd, region)
        except BaseException:
            os.close(sock_fd)
            raise
        try:
            sent = await asyncio.shield(fut)
        except asyncio.CancelledError:
            # The thread still uses the region's descriptor: close it only when done.
            owned = FileRegion(region.file, region.position, region.size)
            region.file = -1

            def done(f: asyncio.Future[int]) -> None:
                owned.close()
                if f.cancelled():
                    os.close(sock_fd)  # never ran (the pool shut down): the dup is still ours
                else:
                    f.exception()  # retrieved: a send that failed once the client had gone is no error
            fut.add_done_callback(done)
            raise
        if sent < region.size and not self._closed:
            rest = FileRegion(region.file, region.position + sent, region.size - sent)
            transport.write(await self._broker.run_blocking(rest.read))


def _release_files(result: Any) -> None:
    """Close the file descriptors a response's regions own (sent or not)."""
    if isinstance(result, EncodedResponse):
        result.close_files()


def _sendfile_blocking(fd: int, region: FileRegion, timeout_ms: int = 30_000) -> int:
    """sendfile() the region to `fd`, a dup of the socket this closes; returns the bytes sent.

    Runs in an executor thread. The dup keeps the descriptor valid even if
    the loop closes the transport meanwhile (then we get EPIPE and stop).
    """
    sent = 0
    try:
        file_fd = region.file if isinstance(region.file, int) else region.file.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        while sent < region.size:
            try:
                n = os.sendfile(fd, file_fd, region.position + sent, region.size - sent)
            except BlockingIOError:
                if not poller.poll(timeout_ms):
                    break
                continue
            except OSError:
                break
            if n == 0:
                break  # the file ended early: the caller reads the rest (and fails loudly)
            sent += n
    finally:
        os.close(fd)
    return sent


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _with_throttle_time(result: Any, api_key: int, version: int, throttle_ms: int) -> Any:
    """An answer with its throttle_time_ms set: kio entities have the field by that name."""
    if isinstance(result, EncodedResponse):
        return with_throttle_time(result, api_key, version, throttle_ms)
    if hasattr(result, "throttle_time"):
        import dataclasses  # (here: only kio's answers, dataclasses themselves, come this way)

        return dataclasses.replace(result, throttle_time=datetime.timedelta(milliseconds=throttle_ms))
    return result
