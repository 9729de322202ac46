"""Per-client limits on the HTTP edge: a WSGI layer keyed by the client's address that answers 429 to a client over
its share, before the request reaches the app.

Two limits, each optional: requests one client may have in flight at once (being answered, each on one of the
server's threads: a request waiting for a thread is not seen here yet), and a rate
(a token bucket: `burst` requests at once, refilled at `rate` a second). The client is the WSGI `REMOTE_ADDR`: the
peer's address, or the one a trusted proxy names when the server is told to trust it. Connections that never finish
a request never reach this layer: the server closes them after its channel timeout, and connections per client are
capped where clients connect in production, at the ingress (docs/security.md).

Requests `exempt` names (the server's: Slack's own, correctly signed) are never limited and never counted: behind an
ingress every Slack request comes from one address, and a 429 to Slack is an error shown to the person who clicked.

The buckets kept are bounded (`max_clients`): past it the client seen least recently is forgotten (it starts again
with a full bucket), so a flood of distinct addresses costs a bounded amount of memory.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]


@dataclass(frozen=True)
class Bucket:
    tokens: float
    stamp: float


def take(bucket: Bucket | None, now: float, rate: float, burst: int) -> tuple[bool, Bucket]:
    """Whether one more request fits a client's bucket at `now`, and the bucket after it (a new client starts full)."""
    start = Bucket(float(burst), now) if bucket is None else bucket
    tokens = min(float(burst), start.tokens + max(0.0, now - start.stamp) * rate)
    if tokens >= 1.0:
        return True, Bucket(tokens - 1.0, now)
    return False, Bucket(tokens, now)


def too_many_in_flight(limit: int) -> str:
    return f"too many requests from this client at once (the limit is {limit}); retry when one is answered\n"


def too_fast(rate: float, burst: int) -> str:
    return f"too many requests from this client (the limit is {rate:g} a second, {burst} at once); retry in a second\n"


def _drained(answer: Iterable[bytes]) -> list[bytes]:
    """The app's whole answer, read while the request still counts as in flight (and closed, as WSGI asks)."""
    try:
        return list(answer)
    finally:
        close = getattr(answer, "close", None)
        if close is not None:
            close()


class ClientLimits:
    """WSGI middleware: `app` behind a per-client in-flight limit and a per-client rate, each None for none; a request
    `exempt` says yes to passes through uncounted."""

    def __init__(
        self,
        app: WSGIApp,
        *,
        max_in_flight: int | None = None,
        rate: float | None = None,
        burst: int = 20,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
        exempt: Callable[[Environ], bool] | None = None,
    ) -> None:
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, not {max_in_flight}")
        if rate is not None and rate <= 0:
            raise ValueError(f"rate must be above 0, not {rate}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, not {burst}")
        self.app = app
        self.max_in_flight = max_in_flight
        self.rate = rate
        self.burst = burst
        self.max_clients = max_clients
        self.clock = clock
        self.exempt = exempt
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = {}
        self._buckets: dict[str, Bucket] = {}

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        if self.exempt is not None and self.exempt(environ):
            return _drained(self.app(environ, start_response))
        client = str(environ.get("REMOTE_ADDR") or "")
        refusal = self._admit(client)
        if refusal is not None:
            log.info("http request limited", extra={"reason": refusal.strip()})
            body = refusal.encode()
            start_response(
                "429 Too Many Requests",
                [("Content-Type", "text/plain"), ("Content-Length", str(len(body))), ("Retry-After", "1")],
            )
            return [body]
        try:
            return _drained(self.app(environ, start_response))
        finally:
            self._release(client)

    def in_flight(self, client: str) -> int:
        with self._lock:
            return self._in_flight.get(client, 0)

    def clients_kept(self) -> int:
        """Clients whose rate is remembered (bounded by `max_clients`)."""
        with self._lock:
            return len(self._buckets)

    def _admit(self, client: str) -> str | None:
        with self._lock:
            held = self._in_flight.get(client, 0)
            if self.max_in_flight is not None and held >= self.max_in_flight:
                return too_many_in_flight(self.max_in_flight)
            if self.rate is not None:
                now = self.clock()
                allowed, bucket = take(self._buckets.pop(client, None), now, self.rate, self.burst)
                self._buckets[client] = bucket  # last in the dict: the most recently seen
                self._prune()
                if not allowed:
                    return too_fast(self.rate, self.burst)
            self._in_flight[client] = held + 1
            return None

    def _release(self, client: str) -> None:
        with self._lock:
            left = self._in_flight.get(client, 1) - 1
            if left > 0:
                self._in_flight[client] = left
            else:
                self._in_flight.pop(client, None)

    def _prune(self) -> None:
        while len(self._buckets) > self.max_clients:
            del self._buckets[next(iter(self._buckets))]
