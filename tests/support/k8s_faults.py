"""The two faults of an API server that the real one (tests/support/k8s_cluster.py) cannot be made to produce on
demand, and nothing else: an answer of 500 (etcd failing under it), and an answer that never comes (a hang after the
request was read). Every other behaviour of the executor is tested on the real server.

```python
with FaultyApiServer(status=500, message="etcdserver: request timed out").start() as server:
    ...                                   # point the executor at server.url
with FaultyApiServer(hang=True).start() as server:
    ...
```
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self


class FaultyApiServer:
    """On 127.0.0.1: answers every request with `status` (a Kubernetes Status body), or with nothing at all."""

    def __init__(self, *, status: int = 500, message: str = "", hang: bool = False) -> None:
        self.status, self.message, self.hang = status, message, hang
        self.requests: list[tuple[str, str]] = []
        self._release = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Self:
        fault = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                fault.requests.append((self.command, self.path))
                if fault.hang:
                    fault._release.wait(60)  # the request was read; no answer until the test ends
                    return
                body = json.dumps(
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "status": "Failure",
                        "message": fault.message,
                        "reason": "InternalError",
                        "code": fault.status,
                    }
                ).encode()
                self.send_response(fault.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PATCH = do_DELETE = _answer

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
