"""A small HTTP front: one thread reads requests, a bounded pool of workers answers complete ones.

Why not ThreadingHTTPServer: it gives every connection a thread that blocks reading, so clients that send
headers and never a body hold as many threads as they open connections. Here one selector thread reads every
connection without blocking until its request is complete (headers, and the body the Content-Length
announces), then hands it to a fixed pool of workers. A request not complete within `read_timeout` is
answered 408 and closed; connections beyond `max_connections` are closed at once. A worker never waits on a
client's upload, so a health check is answered while hundreds of slow clients are connected.

A connection carries one request (the answer says `Connection: close`). A client that disconnects early is
one debug line, never a traceback.
"""

from __future__ import annotations

import contextlib
import io
import logging
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

log = logging.getLogger(__name__)

MAX_HEADER = 64 * 1024
TIMEOUT_ANSWER = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
TOO_LARGE_ANSWER = b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


@dataclass
class _Pending:
    sock: socket.socket
    address: Any
    deadline: float
    data: bytearray = field(default_factory=bytearray)


def request_complete(data: bytes | bytearray, max_body: int) -> bool:
    """Whether `data` holds a whole request: headers, then the body its Content-Length announces.

    A request without a valid Content-Length (or one over `max_body`) is complete once its headers are: the
    handler answers it without reading a body.
    """
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return False
    declared = content_length(bytes(data[:end]))
    if declared is None or declared > max_body:
        return True
    return len(data) >= end + 4 + declared


def content_length(head: bytes) -> int | None:
    """The Content-Length header of a request head, when it is a plain non-negative integer."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            value = value.strip()
            return int(value) if value.isdigit() else None
    return None


class BufferedHandler(BaseHTTPRequestHandler):
    """A request handler whose request was read already: `request` is (socket, bytes)."""

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        self.connection, data = self.request
        self.rfile = io.BytesIO(data)
        self.wfile = self.connection.makefile("wb")

    def end_headers(self) -> None:
        self.send_header("Connection", "close")
        super().end_headers()


def _client(address: Any) -> str:
    """The client's address without its port."""
    return str(address[0]) if isinstance(address, tuple) and address else str(address)


class HTTPFront:
    """Accepts on (host, port); answers each complete request with `handler` on one of `workers` threads."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BufferedHandler],
        *,
        owner: Any,
        workers: int = 8,
        max_connections: int = 1_000,
        max_per_client: int | None = None,
        read_timeout: float = 10.0,
        write_timeout: float = 10.0,
        max_body: int = 1_000_000,
    ) -> None:
        self.owner = owner
        self._handler = handler
        self._listener = socket.create_server(address, backlog=256)
        self._listener.setblocking(False)
        self.server_address = self._listener.getsockname()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="http-worker")
        self._selector = selectors.DefaultSelector()
        self._pending: dict[int, _Pending] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        """Connections one client address may hold open while sending its requests (None: no limit of its own), so
        that one client's idle connections never take every slot."""
        self._per_client: dict[str, int] = {}
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        self.max_body = max_body

    def start(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._thread = threading.Thread(target=self._loop, name="http-reader", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for pending in list(self._pending.values()):
            self._close(pending)
        self._selector.close()
        self._listener.close()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def connections(self) -> int:
        """Connections still sending their request (what the reader holds)."""
        return len(self._pending)

    # -- the reader thread --------------------------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                events = self._selector.select(timeout=0.2)
            except OSError:  # closed under us while stopping
                return
            for key, _ in events:
                if key.fileobj is self._listener:
                    self._accept()
                else:
                    pending = self._pending.get(key.fd)
                    if pending is not None:
                        self._read(pending)
            self._expire(time.monotonic())

    def _accept(self) -> None:
        while True:
            try:
                sock, address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                log.warning("http accept failed", extra={"error": str(exc)})
                return
            if len(self._pending) >= self.max_connections:
                log.warning("http connection refused: too many open", extra={"open": len(self._pending)})
                sock.close()
                continue
            client = _client(address)
            held = self._per_client.get(client, 0)
            if self.max_per_client is not None and held >= self.max_per_client:
                log.info("http connection refused: too many open from one client", extra={"open": held})
                sock.close()
                continue
            self._per_client[client] = held + 1
            sock.setblocking(False)
            pending = _Pending(sock, address, time.monotonic() + self.read_timeout)
            self._pending[sock.fileno()] = pending
            self._selector.register(sock, selectors.EVENT_READ)

    def _read(self, pending: _Pending) -> None:
        try:
            chunk = pending.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._close(pending)
            return
        pending.data += chunk
        if request_complete(pending.data, self.max_body):
            self._forget(pending)
            self._pool.submit(self._answer, pending.sock, pending.address, bytes(pending.data))
        elif pending.data.find(b"\r\n\r\n") < 0 and len(pending.data) > MAX_HEADER:
            self._refuse(pending, TOO_LARGE_ANSWER, "headers too large")

    def _expire(self, now: float) -> None:
        for pending in [p for p in self._pending.values() if p.deadline < now]:
            self._refuse(pending, TIMEOUT_ANSWER, "request not complete in time")

    def _refuse(self, pending: _Pending, answer: bytes, reason: str) -> None:
        log.info("http request refused", extra={"reason": reason, "received": len(pending.data)})
        with contextlib.suppress(OSError):
            pending.sock.send(answer)
        self._close(pending)

    def _forget(self, pending: _Pending) -> None:
        if self._pending.pop(pending.sock.fileno(), None) is not None:
            client = _client(pending.address)
            left = self._per_client.get(client, 1) - 1
            if left > 0:
                self._per_client[client] = left
            else:
                self._per_client.pop(client, None)
        self._selector.unregister(pending.sock)

    def _close(self, pending: _Pending) -> None:
        self._forget(pending)
        pending.sock.close()

    # -- a worker ---------------------------------------------------------------------------------------------

    def _answer(self, sock: socket.socket, address: Any, data: bytes) -> None:
        try:
            sock.setblocking(True)
            sock.settimeout(self.write_timeout)
            self._handler((sock, data), address, self)  # type: ignore[arg-type]
        except OSError as exc:  # the client went away (broken pipe, reset, timeout): nothing to answer
            log.debug("http client gone", extra={"error": str(exc)})
        except Exception:
            log.exception("http handler failed")
        finally:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
