"""The emulator's HTTP side: Slack's Web API paths, file uploads, response URLs and the Socket Mode link, each
handed to the SlackEmulator that owns the server."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlparse

if TYPE_CHECKING:
    from lagbot.devkit.emulator import SlackEmulator


class Server(ThreadingHTTPServer):
    emulator: SlackEmulator


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    @property
    def owner(self) -> SlackEmulator:
        return self.server.emulator

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the calls are recorded instead

    def do_GET(self) -> None:
        if urlparse(self.path).path == "/link/":
            self.owner._websocket(self)
            return
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if url.path.startswith("/api/"):
            args = _args(url.query, body, self.headers.get("Content-Type") or "")
            token = _token(self.headers.get("Authorization"), args)
            status, answer, headers = self.owner.handle(url.path.removeprefix("/api/"), args, token)
            self._send(status, json.dumps(answer).encode(), "application/json; charset=utf-8", headers)
        elif url.path.startswith("/upload/"):
            status = self.owner.upload(url.path.removeprefix("/upload/"), body)
            self._send(status, f"OK - {len(body)}".encode() if status == 200 else b"not found", "text/plain")
        elif url.path.startswith("/response/"):
            try:
                payload = json.loads(body or b"{}")
            except json.JSONDecodeError:
                self._send(400, b"invalid_payload", "text/plain")
                return
            status = self.owner.respond(url.path.removeprefix("/response/"), payload)
            self._send(status, b"ok" if status == 200 else b"invalid_blocks", "text/plain")
        else:
            self._send(404, b"not found", "text/plain")

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the caller gave up waiting: the call is recorded all the same
            self.close_connection = True


def _args(query: str, body: bytes, content_type: str) -> dict[str, Any]:
    """Arguments from the query string and a form or JSON body; JSON-encoded form fields are decoded."""
    args: dict[str, Any] = {k: v[-1] for k, v in parse_qs(query).items()}
    if body and content_type.startswith("application/json"):
        args.update(json.loads(body))
    elif body:
        args.update({k: v[-1] for k, v in parse_qs(body.decode()).items()})
    for key in ("blocks", "attachments"):
        if isinstance(args.get(key), str):
            try:
                args[key] = json.loads(args[key])
            except json.JSONDecodeError:
                args[key] = [{"type": "unparseable"}]
    return args


def _token(authorization: str | None, args: dict[str, Any]) -> str | None:
    if authorization and authorization.startswith("Bearer "):
        return authorization.removeprefix("Bearer ").strip()
    token = args.pop("token", None)
    return str(token) if token else None
