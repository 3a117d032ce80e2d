"""A real S3 API server for tests: moto's server in a child process, on 127.0.0.1 and a port
the OS picks.

    from asyncbroker.testing import S3Server

    with S3Server() as s3:
        s3.create_bucket("tiered")
        with BrokerProcess(["remote.log.storage.system.enable=true", ...,
                            *s3.broker_overrides("tiered", prefix="run-1")]) as broker:
            ...

A child process rather than moto's ThreadedMotoServer in the test process, because moto keeps
its buckets and its IAM switch in module globals: two servers in one process share them. A
child of its own gives each server fresh state, lets `require_auth=True` check signatures
without touching any other server, keeps moto's request parsing off the test's GIL, and lets a
test kill it (`kill()`: the port then refuses connections, as a dead store does). The child
exits when its stdin closes, so it never outlives the test process.

Faults: `inject_fault()` makes the server answer S3 requests with an S3 error (503 SlowDown by
default; 403, 507 or any other) until `clear_fault()`, or for the next `count` requests only;
or for some HTTP methods only (uploads failing while reads work); `requests` and
`faulted_requests` count what it saw, for a test to wait on. It is moto's WSGI
app behind a small middleware: the clients and the broker talk to a real socket throughout.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any
from xml.sax.saxutils import escape

__all__ = ["S3Server", "S3ServerStartError"]

# The credentials of a server without auth (any pair is accepted; these are what boto3 users pass).
DEFAULT_ACCESS_KEY_ID = "testing"
DEFAULT_SECRET_ACCESS_KEY = "testing"
REGION = "us-east-1"
CONTROL_PATH = "/_asyncbroker/fault"
_REASONS = {400: "Bad Request", 403: "Forbidden", 404: "Not Found", 500: "Internal Server Error",
            503: "Service Unavailable", 507: "Insufficient Storage"}


class S3ServerStartError(RuntimeError):
    """The S3 server's process exited or did not report its port within the startup timeout."""


class S3Server:
    """A moto S3 server in a child process (see the module docstring)."""

    def __init__(self, *, require_auth: bool = False, startup_timeout: float = 30.0) -> None:
        self.require_auth = require_auth
        self.startup_timeout = startup_timeout
        self.host = "127.0.0.1"
        self.port = 0
        self.region = REGION
        # With require_auth, the keys of an IAM user the server created, allowed s3:*; any other
        # pair is refused (InvalidAccessKeyId / SignatureDoesNotMatch, HTTP 403).
        self.access_key_id = DEFAULT_ACCESS_KEY_ID
        self.secret_access_key = DEFAULT_SECRET_ACCESS_KEY
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- life -----------------------------------------------------------------------------------
    def start(self) -> S3Server:
        env = dict(os.environ)
        env.pop("INITIAL_NO_AUTH_ACTION_COUNT", None)  # moto's auth switch: the child sets it
        args = [sys.executable, "-m", "asyncbroker.testing.s3_server", *(["--require-auth"] if self.require_auth else [])]
        process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.process = process
        assert process.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        line = b""
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([process.stdout], [], [], remaining)[0]:
                self.kill()
                raise S3ServerStartError(f"The S3 server did not start within {self.startup_timeout}s")
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:
                code = process.wait()
                raise S3ServerStartError(f"The S3 server exited with code {code} before listening (see its stderr)")
            line += chunk
        ready = json.loads(line)
        self.port = int(ready["port"])
        self.access_key_id = str(ready["access_key_id"])
        self.secret_access_key = str(ready["secret_access_key"])
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (it closes its socket and exits when its stdin closes)."""
        process = self.process
        if process is None or process.poll() is not None:
            self._close_pipes()
            return
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self._close_pipes()

    def kill(self) -> None:
        """SIGKILL the server: connections to its port are refused from now on."""
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        if self.process is not None:
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe is not None and not pipe.closed:
                    pipe.close()

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # -- clients and settings -------------------------------------------------------------------
    def client(self) -> Any:
        """A boto3 S3 client for this server, with its credentials."""
        import boto3
        from botocore.config import Config

        session = boto3.session.Session(aws_access_key_id=self.access_key_id,
                                        aws_secret_access_key=self.secret_access_key, region_name=self.region)
        return session.client("s3", endpoint_url=self.endpoint_url,
                              config=Config(s3={"addressing_style": "path"}, retries={"mode": "standard"}))

    def create_bucket(self, name: str) -> str:
        client = self.client()
        try:
            client.create_bucket(Bucket=name)
        finally:
            client.close()
        return name

    def delete_bucket(self, name: str) -> None:
        """Delete the bucket and everything in it (moto holds objects in its memory)."""
        client = self.client()
        try:
            for key in self.keys(name):
                client.delete_object(Bucket=name, Key=key)
            client.delete_bucket(Bucket=name)
        finally:
            client.close()

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object key in the bucket under `prefix`, sorted."""
        client = self.client()
        try:
            pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            return sorted(item["Key"] for page in pages for item in page.get("Contents", []))
        finally:
            client.close()

    def rsm_configs(self, bucket: str, prefix: str = "") -> dict[str, str]:
        """S3RemoteStorageManager.from_configs settings for this server (no `rsm.config.`); no
        s3.prefix when it is empty."""
        configs = {"s3.bucket": bucket, "s3.prefix": prefix, "s3.endpoint.url": self.endpoint_url,
                   "s3.region": self.region, "s3.access.key.id": self.access_key_id,
                   "s3.secret.access.key": self.secret_access_key}
        return {key: value for key, value in configs.items() if value}

    def broker_overrides(self, bucket: str, prefix: str = "") -> list[str]:
        """`key=value` overrides for BrokerProcess: the same settings under `rsm.config.`."""
        return [f"rsm.config.{key}={value}" for key, value in self.rsm_configs(bucket, prefix).items()]

    # -- faults -----------------------------------------------------------------------------------
    def inject_fault(self, status: int = 503, code: str = "SlowDown", message: str = "Please reduce your request rate.",
                     *, count: int | None = None, methods: Iterable[str] | None = None) -> None:
        """Answer S3 requests with this error from now on: the next `count` requests only, if
        given; requests of these HTTP methods only, if given (("PUT", "POST"): uploads fail,
        reads work, as in a full store)."""
        fault = {"status": status, "code": code, "message": message, "count": count,
                 "methods": None if methods is None else [m.upper() for m in methods]}
        self._control(json.dumps(fault).encode())

    def clear_fault(self) -> None:
        self._control(b"null")

    @property
    def requests(self) -> int:
        """S3 requests the server received (faulted or not)."""
        return int(self._control(None)["requests"])

    @property
    def faulted_requests(self) -> int:
        """S3 requests answered with the injected fault."""
        return int(self._control(None)["faulted"])

    def _control(self, fault: bytes | None) -> dict[str, Any]:
        """POST a fault (JSON; null clears it), or GET the counters."""
        request = urllib.request.Request(self.endpoint_url + CONTROL_PATH, data=fault,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            answer: dict[str, Any] = json.loads(response.read())
        return answer


# ---------------------------------------------------------------------------------- the child

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _FaultInjector:
    """WSGI middleware in front of moto: the control endpoint, the counters, and the injected
    S3 error answered instead of moto's."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.fault: dict[str, Any] | None = None
        self.requests = 0
        self.faulted = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        if path == CONTROL_PATH:
            return self._control(environ, start_response)
        if path.startswith("/moto-api"):
            return self.app(environ, start_response)
        with self.lock:
            self.requests += 1
            fault = self.fault
            if fault is not None and fault.get("methods") is not None and environ.get("REQUEST_METHOD") not in fault["methods"]:
                fault = None
            if fault is not None:
                self.faulted += 1
                if fault.get("count") is not None:
                    fault["count"] -= 1
                    if fault["count"] <= 0:
                        self.fault = None
        if fault is None:
            return self.app(environ, start_response)
        _drain(environ)  # the client sent its body (upload parts too): read it, then answer
        status = int(fault["status"])
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                f"<Error><Code>{escape(str(fault['code']))}</Code><Message>{escape(str(fault['message']))}</Message>"
                "<RequestId>asyncbroker-injected-fault</RequestId></Error>").encode()
        start_response(f"{status} {_REASONS.get(status, 'Error')}",
                       [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
        return [] if environ.get("REQUEST_METHOD") == "HEAD" else [body]

    def _control(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with self.lock:
            if environ.get("REQUEST_METHOD") == "POST":
                length = int(environ.get("CONTENT_LENGTH") or 0)
                self.fault = json.loads(environ["wsgi.input"].read(length) or b"null")
            body = json.dumps({"fault": self.fault, "requests": self.requests, "faulted": self.faulted}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


def _drain(environ: dict[str, Any]) -> None:
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH")
    remaining = int(length) if length else (1 << 62 if environ.get("wsgi.input_terminated") else 0)
    while remaining > 0:
        chunk = stream.read(min(remaining, 1 << 20))
        if not chunk:
            break
        remaining -= len(chunk)


def _create_iam_user(endpoint_url: str) -> tuple[str, str]:
    """An IAM user allowed s3:* on the server, created before auth is switched on; its keys."""
    import boto3

    iam = boto3.client("iam", endpoint_url=endpoint_url, region_name=REGION, aws_access_key_id=DEFAULT_ACCESS_KEY_ID,
                       aws_secret_access_key=DEFAULT_SECRET_ACCESS_KEY)
    iam.create_user(UserName="asyncbroker")
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
    iam.put_user_policy(UserName="asyncbroker", PolicyName="s3", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="asyncbroker")["AccessKey"]
    # moto's server-mode switch: from now on every request's signature and permissions are checked.
    request = urllib.request.Request(endpoint_url + "/moto-api/reset-auth", data=b"0",
                                     headers={"Content-Type": "application/octet-stream"})
    urllib.request.urlopen(request, timeout=10).close()
    return str(key["AccessKeyId"]), str(key["SecretAccessKey"])


def _serve(require_auth: bool) -> None:
    import logging

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request on stderr
    app = _FaultInjector(DomainDispatcherApplication(create_backend_app))
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, name="moto-s3", daemon=True)
    thread.start()
    endpoint_url = f"http://127.0.0.1:{server.server_port}"
    keys = _create_iam_user(endpoint_url) if require_auth else (DEFAULT_ACCESS_KEY_ID, DEFAULT_SECRET_ACCESS_KEY)
    print(json.dumps({"port": server.server_port, "access_key_id": keys[0], "secret_access_key": keys[1]}), flush=True)
    sys.stdin.buffer.read()  # until the test closes our stdin, or exits
    server.shutdown()
    server.server_close()


def _main(argv: list[str]) -> None:
    _serve("--require-auth" in argv)


if __name__ == "__main__":
    _main(sys.argv[1:])
