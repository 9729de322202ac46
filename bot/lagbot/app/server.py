"""The bot's HTTP server: Slack's requests (HTTP mode), `/livez`, `/healthz` and `/metrics`, on one port.

`/livez` answers 200 as long as the process serves HTTP: it never depends on Redis or Kafka, so a Kubernetes
liveness probe on it does not restart every replica in a loop while Redis is down. `/healthz` is readiness: 503
while the bot cannot reach what it needs (Redis). The probes can have a listener of their own (`health_port`):
its own waitress server, loop and threads, so they never queue behind Slack's traffic.

Connections are served by waitress (lagbot.app.edge: one loop reads every connection, only complete requests reach a
bounded pool of threads; a connection idle past `read_timeout` is closed, headers and bodies are capped), and a
client over its share of requests in flight or of its rate gets 429 (lagbot.app.client_limits), except Slack's own
requests: a correctly signed one is never refused per client (behind an ingress every Slack request comes from the
ingress's address, and a 429 to Slack is an error shown to the person who clicked). Slack's requests pass the gate
first (lagbot.slack.gate: the signature with slack_sdk's SignatureVerifier, then the body's shape; 401 or 400
otherwise, one log line each), then go to the bolt app. Nothing a client sends gets a 500: a request the app
fails on is answered 400 with a reference to the log.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from types import TracebackType
from typing import Any, Self

from slack_bolt import App
from slack_bolt.request import BoltRequest
from slack_bolt.request.internals import build_context

from lagbot.app.client_limits import ClientLimits, Environ, StartResponse, WSGIApp
from lagbot.app.edge import Listener
from lagbot.slack.gate import check_shape, form_body, verify_signature

log = logging.getLogger(__name__)

MAX_BODY = 1_000_000
MAX_HEADER = 64 * 1024
CONNECTION_LIMIT = 4_096
"""Open connections one listener holds (idle and slow ones included) before it stops accepting; per-client
connection caps live at the ingress (docs/security.md)."""
SLACK_PATH = "/slack/events"
LIVENESS_PATH = "/livez"
READINESS_PATH = "/healthz"
METRICS_PATH = "/metrics"
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
REQUEST_KEY = "lagbot.request"
"""The WSGI environ key under which the main port keeps the request it read (its body can be read only once)."""

Health = Callable[[], tuple[bool, dict[str, Any]]]
"""() -> (healthy, details as JSON)."""


@dataclass(frozen=True)
class Request:
    """What the handlers read of a request: header names lower-case."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    content_type: str = "text/plain"
    headers: dict[str, str] = field(default_factory=dict)


NOT_FOUND = Answer(404, b"not found\n")


class BotHTTPServer:
    """Serves POST /slack/events (when an app is given), GET /livez, GET /healthz and GET /metrics; the probes' three
    also on `health_port` when one is given."""

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
        rate_per_client: float | None = None,
        connection_limit: int = CONNECTION_LIMIT,
    ) -> None:
        if app is not None and not signing_secret:
            raise ValueError("serving a Slack app needs its signing secret")
        self.app = app
        self.signing_secret = signing_secret or ""
        self.health = health
        self.metrics = metrics
        self.clock = clock
        self.limits = ClientLimits(
            self._serve,
            max_in_flight=in_flight_limit(max_per_client, workers),
            rate=rate_per_client,
            exempt=self._signed_by_slack,
        )
        """Per client address: requests being answered at once (`max_per_client`, and never every thread) and a rate
        (`rate_per_client` a second); Slack's signed requests are not counted."""

        def listener(serve: WSGIApp, port: int, threads: int, max_header: int, max_body: int, name: str) -> Listener:
            return Listener(
                serve, host=host, port=port, threads=threads, channel_timeout=read_timeout,
                connection_limit=connection_limit, max_header=max_header, max_body=max_body, name=name,
            )  # fmt: skip

        self._server = listener(self._serve_main, port, workers, MAX_HEADER, MAX_BODY, "http")
        # The probes' own listener (`/livez`, `/healthz`, `/metrics`): its own loop and threads, never queued behind
        # Slack's requests or whatever holds the main port's connections.
        try:
            self._health = (
                None if health_port is None else listener(self._serve_probe, health_port, 2, 8_192, 0, "probes")
            )
        except OSError:  # the probes' port is taken: let go of the main one too
            self._server.stop()
            raise

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def health_port(self) -> int | None:
        return None if self._health is None else self._health.server_address[1]

    def connections(self) -> int:
        """Connections open on the main port (idle, slow or being answered)."""
        return self._server.connections()

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

    # -- WSGI ---------------------------------------------------------------------------------------------------

    def _serve_main(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        """The main port: the request read once, then the per-client limits, then the answer."""
        environ[REQUEST_KEY] = read_request(environ)
        return self.limits(environ, start_response)

    def _serve(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        return _respond(self.answer(environ[REQUEST_KEY]), start_response)

    def _signed_by_slack(self, environ: Environ) -> bool:
        """Whether the request is Slack's own: a POST to the events path whose signature holds (nothing else is
        checked here; the gate checks it all again before the app)."""
        request: Request = environ[REQUEST_KEY]
        if self.app is None or request.method != "POST" or request.path != SLACK_PATH:
            return False
        return verify_signature(request.headers, request.body, self.signing_secret, now=self.clock()) is None

    def _serve_probe(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        request = read_request(environ)
        answer = self.probe(request) if request.method in ("GET", "HEAD") else NOT_FOUND
        return _respond(answer, start_response)

    def answer(self, request: Request) -> Answer:
        """The answer to a request on the main port."""
        if request.method in ("GET", "HEAD"):
            return self.probe(request)
        if request.method == "POST":
            return self.slack(request)
        return Answer(405, b"method not allowed\n", headers={"Allow": "GET, POST"})

    def probe(self, request: Request) -> Answer:
        if request.path == LIVENESS_PATH:
            return Answer(200, b'{"live": true}', "application/json")
        if request.path == READINESS_PATH:
            healthy, details = self.health()
            return Answer(200 if healthy else 503, json.dumps(details).encode(), "application/json")
        if request.path == METRICS_PATH:
            return Answer(200, self.metrics(), METRICS_CONTENT_TYPE)
        return NOT_FOUND

    def slack(self, request: Request) -> Answer:
        """A POST: Slack's request through the gate to the bolt app."""
        if request.path != SLACK_PATH or self.app is None:
            return NOT_FOUND
        declared = request.headers.get("content-length", "")
        if not declared.isdigit():
            return Answer(411 if not declared else 400, b"a Content-Length is required\n")
        if int(declared) > MAX_BODY:
            return Answer(413, b"request too large\n")
        headers = request.headers
        refusal = verify_signature(headers, request.body, self.signing_secret, now=self.clock()) or check_shape(
            headers.get("content-type", ""), request.body
        )
        if refusal is not None:
            log.warning("slack request refused", extra={"status": refusal.status, "reason": refusal.reason})
            return Answer(refusal.status, f"{refusal.reason}\n".encode())
        bolt_headers: dict[str, str | Sequence[str]] = dict(headers)
        try:
            body = request.body.decode()
            response = self.app.dispatch(SlackMeantRequest(body, query=request.query, headers=bolt_headers))
        except Exception as exc:  # a shape the gate let through and bolt could not read: the client's error
            reference = uuid.uuid4().hex[:12]
            log.warning("slack request not understood", extra={"error": repr(exc)[:200], "error_id": reference})
            return Answer(400, f"request not understood (ref {reference})\n".encode())
        if response.status >= 500 and response.status != 503:  # 503: the app's own "not now" (Redis unreachable)
            log.warning("slack request failed in the app", extra={"status": response.status})
            return Answer(400, b"request not understood\n")
        extra = {k: str(v[0] if isinstance(v, list | tuple) else v) for k, v in response.headers.items()}
        content_type = extra.pop("content-type", "text/plain;charset=utf-8")
        return Answer(response.status, str(response.body).encode(), content_type, extra)


def in_flight_limit(max_per_client: int | None, workers: int) -> int | None:
    """Requests one client may have answered at once: `max_per_client`, and at most all threads but one, so one
    client never holds every thread (None: no limit)."""
    return None if max_per_client is None else max(1, min(max_per_client, workers - 1))


def read_request(environ: Environ) -> Request:
    """The request of a WSGI environ: its body read up to the Content-Length it declared (waitress read it whole
    before the app is called, within `max_request_body_size`)."""
    headers = {name[5:].replace("_", "-").lower(): str(v) for name, v in environ.items() if name.startswith("HTTP_")}
    for key, name in (("CONTENT_TYPE", "content-type"), ("CONTENT_LENGTH", "content-length")):
        if environ.get(key):
            headers[name] = str(environ[key])
    declared = headers.get("content-length", "")
    length = int(declared) if declared.isdigit() else 0
    body = environ["wsgi.input"].read(min(length, MAX_BODY)) if length else b""
    return Request(
        method=str(environ.get("REQUEST_METHOD", "")),
        path=str(environ.get("PATH_INFO", "")),
        query=str(environ.get("QUERY_STRING", "")),
        headers=headers,
        body=bytes(body),
    )


def _respond(answer: Answer, start_response: StartResponse) -> list[bytes]:
    try:
        reason = HTTPStatus(answer.status).phrase
    except ValueError:  # a status of bolt's that Python does not name
        reason = "Unknown"
    headers = [("Content-Type", answer.content_type), ("Content-Length", str(len(answer.body)))]
    headers += [(name, value) for name, value in answer.headers.items() if name.lower() != "content-length"]
    start_response(f"{answer.status} {reason}", headers)
    return [answer.body]


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
