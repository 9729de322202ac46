"""One HTTP listener on waitress: one loop reads every connection without blocking, and only complete requests
reach a fixed pool of threads, so a client that sends its headers and never its body holds no thread.

Each listener has its own socket map, loop thread and threads, so two listeners (Slack's and the probes') never
wait on each other. What waitress does with a bad client: a connection idle for `channel_timeout` (nothing read,
nothing answered) is closed without an answer; headers over `max_header` get 431, a body over `max_body` 413;
past `connection_limit` open connections it stops accepting until some close (new ones wait in the kernel's
backlog). Queued connections are accepted up to ACCEPTS_PER_TURN a loop turn (waitress alone: one). Proxy headers
(Forwarded, X-Forwarded-*) are stripped: no proxy is trusted, so `REMOTE_ADDR` is the peer.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, cast

from waitress import wasyncore
from waitress.server import TcpWSGIServer

from lagbot.app.client_limits import WSGIApp

log = logging.getLogger(__name__)

IDENT = "lagbot"
BACKLOG = 4_096
"""Connections the kernel queues before the loop accepts them (capped by net.core.somaxconn): with waitress's
default of 1,024, a thousand slow clients reconnecting at once overflowed it, and a signed command's connection
waited for its SYN to be sent again (1 s, then 3 s: bench/http_edge.py)."""
ACCEPTS_PER_TURN = 256
"""Connections the loop accepts in one turn (waitress accepts one). Each turn costs in proportion to the open
connections, so one accept a turn left a request queued behind a thousand reconnecting clients for 4.6 s (its
loop turns at 1,000 open connections); accepting what is queued in a few turns answers it in about 0.1 s."""


class _Server(TcpWSGIServer):
    """waitress's TCP server, accepting up to ACCEPTS_PER_TURN queued connections a loop turn with its own accept,
    and never past its connection limit."""

    def handle_accept(self) -> None:
        for _ in range(ACCEPTS_PER_TURN):
            before = self.open_connections()
            super().handle_accept()
            after = self.open_connections()
            if after == before or after >= self.adj.connection_limit:  # nothing queued (or refused), or full
                return

    def open_connections(self) -> int:
        channels: dict[int, Any] = cast(dict[int, Any], self.active_channels)  # the stubs say one channel
        return len(channels)


class Listener:
    """A waitress server on (host, port) answering with `app` on `threads` threads; bound when made, served from
    `start` to `stop`."""

    def __init__(
        self,
        app: WSGIApp,
        *,
        host: str,
        port: int,
        threads: int,
        channel_timeout: float,
        connection_limit: int,
        max_header: int,
        max_body: int,
        name: str,
    ) -> None:
        self._map: dict[int, Any] = {}
        server = _Server(
            app,
            map=self._map,
            host=host,
            port=port,
            threads=threads,
            channel_timeout=channel_timeout,
            cleanup_interval=max(0.5, min(30.0, channel_timeout / 2)),
            connection_limit=connection_limit,
            max_request_header_size=max_header,
            max_request_body_size=max_body,
            asyncore_use_poll=True,  # select() stops at 1024 descriptors
            backlog=BACKLOG,
            ident=IDENT,
            expose_tracebacks=False,
            clear_untrusted_proxy_headers=True,
            log_untrusted_proxy_headers=False,
        )
        self._server = server
        bound_host, bound_port = server.getsockname()
        self._address = (str(bound_host), int(bound_port))
        self._name = name
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._running = False
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def server_address(self) -> tuple[str, int]:
        return self._address

    def connections(self) -> int:
        """Connections open on this listener (reading a request, waiting for its answer, or idle)."""
        return self._server.open_connections()

    def start(self) -> None:
        with self._lock:
            self._running = True
        self._thread = threading.Thread(target=self._loop, name=f"{self._name}-loop", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Finish the requests being answered (5 s at most; the loop still flushes their answers), then stop the loop
        and close every connection. Twice is once."""
        self._server.task_dispatcher.shutdown(cancel_pending=True, timeout=5)
        with self._lock:  # the loop closes the trigger under this lock: never pulled once closed (its fd reused)
            self._stop.set()
            if self._running:
                self._server.pull_trigger()  # wakes the loop's poll at once
            elif not self._closed:  # never started: nothing else closes them
                self._close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        timeout = self._server.adj.asyncore_loop_timeout
        try:
            while not self._stop.is_set() and self._map:
                wasyncore.loop(timeout=timeout, map=self._map, use_poll=True, count=1)
        except Exception:  # the loop is waitress's; if it ever fails, say so once and stop serving
            log.exception("http listener stopped", extra={"listener": self._name})
        finally:
            with self._lock:
                self._running = False
                self._close()

    def _close(self) -> None:
        wasyncore.close_all(self._map)
        self._closed = True
