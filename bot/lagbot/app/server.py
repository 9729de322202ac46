"""The bot's HTTP server: Slack's requests (HTTP mode), `/livez`, `/healthz` and `/metrics`, on one port.

`/livez` answers 200 as long as the process serves HTTP: it never depends on Redis or Kafka, so a Kubernetes
liveness probe on it does not restart every replica in a loop while Redis is down. `/healthz` is readiness: 503
while the bot cannot reach what it needs (Redis).

Slack's requests pass the gate first (lagbot.slack.gate: the signature, then the body's shape; 401 or 400
otherwise, one log line each), then go to the bolt app unchanged. Connections are read by lagbot.app.http_front (a
read timeout, a bounded worker pool), and bodies are capped so a bad client cannot exhaust memory or threads.
Nothing a client sends gets a 500: a request the app fails on is answered 400 with a reference to the log.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlparse

from slack_bolt import App
from slack_bolt.request import BoltRequest
from slack_bolt.request.internals import build_context

from lagbot.app.http_front import BufferedHandler, HTTPFront
from lagbot.slack.gate import check_shape, form_body, verify_signature

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
        signing_secret: str | None = None,
        workers: int = 8,
        read_timeout: float = 10.0,
        clock: Callable[[], float] = time.time,
        health_port: int | None = None,
        max_per_client: int | None = None,
    ) -> None:
        if app is not None and not signing_secret:
            raise ValueError("serving a Slack app needs its signing secret")
        self._server = HTTPFront(
            (host, port), _Handler, owner=self, workers=workers, read_timeout=read_timeout, max_body=MAX_BODY,
            max_per_client=max_per_client,
        )  # fmt: skip
        self._health = (
            None
            if health_port is None
            else HTTPFront(
                (host, health_port),
                _HealthHandler,
                owner=self,
                workers=2,
                read_timeout=read_timeout,
                max_body=0,
                max_per_client=max_per_client,
            )
        )
        """The probes' own listener (`/livez`, `/healthz`, `/metrics`), its own reader and workers: never queued
        behind Slack's requests or whatever holds the main port's connections."""
        self.app = app
        self.signing_secret = signing_secret or ""
        self.health = health
        self.metrics = metrics
        self.clock = clock

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def health_port(self) -> int | None:
        return None if self._health is None else int(self._health.server_address[1])

    def start(self) -> Self:
        self._server.start()
        if self._health is not None:
            self._health.start()
        return self

    def stop(self) -> None:
        self._server.stop()
        if self._health is not None:
            self._health.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


class SlackMeantRequest(BoltRequest):
    """bolt's request of a checked body, with the body read as Slack meant it (lagbot.slack.gate `form_body`): the
    raw text stays for bolt's own checks; what the listeners read is replaced where bolt misreads it. Its copies
    (what a lazy listener gets) are read the same way."""

    def __init__(
        self, body: str, *, query: str | dict[str, Sequence[str]], headers: dict[str, str | Sequence[str]],
        context: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(body=body, query=query, headers=headers, context=context)
        meant = form_body(self.content_type or "", body)
        if meant is not None and meant != self.body:
            self.body = meant
            self.context = build_context(self.context, meant)

    def to_copyable(self) -> BoltRequest:
        headers: dict[str, str | Sequence[str]] = dict(self.headers)
        return SlackMeantRequest(self.raw_body, query=self.query, headers=headers, context=self.context.to_copyable())


class _Handler(BufferedHandler):
    server: HTTPFront  # type: ignore[assignment]

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
        raw = self.rfile.read(length)
        owner: BotHTTPServer = self.server.owner
        headers = {name.lower(): value for name, value in self.headers.items()}
        refusal = verify_signature(headers, raw, owner.signing_secret, now=owner.clock()) or check_shape(
            headers.get("content-type", ""), raw
        )
        if refusal is not None:
            log.warning("slack request refused", extra={"status": refusal.status, "reason": refusal.reason})
            self._send(refusal.status, f"{refusal.reason}\n".encode(), "text/plain")
            return
        bolt_headers: dict[str, str | Sequence[str]] = dict(headers)
        try:
            response = app.dispatch(SlackMeantRequest(raw.decode(), query=url.query, headers=bolt_headers))
        except Exception as exc:  # a shape the gate let through and bolt could not read: the client's error
            reference = uuid.uuid4().hex[:12]
            log.warning("slack request not understood", extra={"error": repr(exc)[:200], "error_id": reference})
            self._send(400, f"request not understood (ref {reference})\n".encode(), "text/plain")
            return
        if response.status >= 500 and response.status != 503:  # 503: the app's own "not now" (Redis unreachable)
            log.warning("slack request failed in the app", extra={"status": response.status})
            self._send(400, b"request not understood\n", "text/plain")
            return
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


class _HealthHandler(_Handler):
    """The probes' listener: GET only."""

    def do_POST(self) -> None:
        self._send(404, b"not found\n", "text/plain")
