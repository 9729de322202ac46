"""The bot's HTTP server: Slack's requests (HTTP mode), `/livez`, `/healthz` and `/metrics`, on one port.

`/livez` answers 200 as long as the process serves HTTP: it never depends on Redis or Kafka, so a Kubernetes
liveness probe on it does not restart every replica in a loop while Redis is down. `/healthz` is readiness: 503
while the bot cannot reach what it needs (Redis).

Slack's requests go to the bolt app unchanged (it verifies the signature and the timestamp and answers
401 otherwise); the server only moves bytes. Bodies are capped so a bad client cannot exhaust memory.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlparse

from slack_bolt import App
from slack_bolt.request import BoltRequest

log = logging.getLogger(__name__)

MAX_BODY = 1_000_000
SLACK_PATH = "/slack/events"
LIVENESS_PATH = "/livez"
READINESS_PATH = "/healthz"
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Health = Callable[[], tuple[bool, dict[str, Any]]]
"""() -> (healthy, details as JSON)."""


class BotHTTPServer:
    """Serves POST /slack/events (when an app is given), GET /livez, GET /healthz and GET /metrics."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        app: App | None,
        health: Health,
        metrics: Callable[[], bytes],
    ) -> None:
        self._server = _Server((host, port), _Handler)
        self._server.owner = self
        self._server.daemon_threads = True
        self.app = app
        self.health = health
        self.metrics = metrics
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._server.serve_forever, name="http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    owner: BotHTTPServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http %s", format % args)

    def do_GET(self) -> None:
        path = urlparse(self.path).path
        owner = self.server.owner
        if path == LIVENESS_PATH:
            self._send(200, b'{"live": true}', "application/json")
        elif path == READINESS_PATH:
            healthy, details = owner.health()
            self._send(200 if healthy else 503, json.dumps(details).encode(), "application/json")
        elif path == "/metrics":
            self._send(200, owner.metrics(), METRICS_CONTENT_TYPE)
        else:
            self._send(404, b"not found\n", "text/plain")

    def do_POST(self) -> None:
        url = urlparse(self.path)
        app = self.server.owner.app
        if url.path != SLACK_PATH or app is None:
            self._send(404, b"not found\n", "text/plain")
            return
        declared = self.headers.get("Content-Length") or ""
        if not declared.isdigit():
            self._send(411 if not declared else 400, b"a Content-Length is required\n", "text/plain")
            return
        length = int(declared)
        if length > MAX_BODY:
            self._send(413, b"request too large\n", "text/plain")
            return
        body = self.rfile.read(length).decode("utf-8", errors="replace")
        headers: dict[str, str | Sequence[str]] = {name.lower(): value for name, value in self.headers.items()}
        response = app.dispatch(BoltRequest(body=body, query=url.query, headers=headers))
        extra = {k: v[0] if isinstance(v, list | tuple) else v for k, v in response.headers.items()}
        content_type = extra.pop("content-type", "text/plain;charset=utf-8")
        self._send(response.status, str(response.body).encode(), str(content_type), extra)

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, Any] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            if name.lower() != "content-length":
                self.send_header(name, str(value))
        self.end_headers()
        self.wfile.write(body)
