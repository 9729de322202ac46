"""A local Slack Web API emulator: a threaded HTTP server on 127.0.0.1 that answers as Slack does.

Slack cannot be reached from the test machines, so the tests, the demo and anyone's staging point
slack_sdk's `WebClient(base_url=emulator.api_url)` here. It:
- requires the bot token (`not_authed` without one, `invalid_auth` with another), as Slack does;
- implements auth.test, chat.postMessage (with message metadata), chat.update, chat.postEphemeral,
  conversations.history, conversations.replies (lagbot.devkit.emulator_messages), files.getUploadURLExternal,
  the upload URL it hands out, files.completeUploadExternal, views.open, users.info,
  usergroups.users.list, and response URLs;
- gives each message a ts as Slack does: its epoch time in microseconds, unique and increasing;
- checks Block Kit limits and answers `invalid_blocks` with Slack's error shape;
- can fail the next calls of a method with 429 + Retry-After, or 500; can delete a message (then edits and
  replies answer message_not_found / thread_not_found);
- speaks Socket Mode: apps.connections.open (app token) hands out a ws:// URL on the same port, where
  the app gets `hello` and envelopes (slash commands) that it acknowledges;
- records every call (and keeps channels, threads, files and views) for assertions.

Its Block Kit checks are written from Slack's published limits, independently of lagbot's renderer,
so that a renderer bug is caught here rather than agreed with.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlencode

from lagbot.devkit import emulator_messages
from lagbot.devkit.block_kit import MAX_MESSAGE_BLOCKS, MAX_TEXT, MAX_VIEW_BLOCKS, block_errors
from lagbot.devkit.emulator_http import Handler, Server
from lagbot.devkit.emulator_messages import Message
from lagbot.devkit.emulator_ws import SocketConnection, accept_key
from lagbot.devkit.signed import post_signed

__all__ = ["Answer", "Call", "Message", "SlackEmulator"]  # Message is lagbot.devkit.emulator_messages'

Answer = tuple[int, dict[str, Any], dict[str, str]]
"""(HTTP status, JSON body, extra headers)."""


@dataclass(frozen=True)
class Call:
    """One request the emulator received."""

    method: str
    args: dict[str, Any]
    token: str | None
    status: int
    response: dict[str, Any] | str
    at: float


@dataclass
class _Failure:
    status: int
    retry_after: int
    times: int


class SlackEmulator:
    """Run with `with SlackEmulator().start() as slack:` and point a WebClient at `slack.api_url`."""

    def __init__(
        self,
        *,
        token: str = "xoxb-lagbot-test",
        app_token: str = "xapp-lagbot-test",
        team_id: str = "T0LAGBOT",
        bot_user_id: str = "U0LAGBOT",
        users: dict[str, dict[str, Any]] | None = None,
        usergroups: dict[str, list[str]] | None = None,
    ) -> None:
        self.token = token
        self.app_token = app_token
        self.sockets: list[SocketConnection] = []
        self.team_id = team_id
        self.bot_user_id = bot_user_id
        self.users = dict(users or {})
        self.usergroups = {k: list(v) for k, v in (usergroups or {}).items()}
        self.calls: list[Call] = []
        self.messages: list[Message] = []
        self.ephemeral: list[dict[str, Any]] = []
        self.views: list[dict[str, Any]] = []
        self.uploads: dict[str, bytes] = {}
        self.files: dict[str, dict[str, Any]] = {}
        self.responses: dict[str, list[dict[str, Any]]] = {}
        self._failures: dict[str, _Failure] = {}
        self._lock = threading.RLock()
        self._ids = itertools.count(1)
        self._last_ts = 0.0
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle ----------------------------------------------------------------------------------

    def start(self) -> Self:
        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.emulator = self
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="slack-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        for connection in self.sockets:
            connection.close()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the emulator first"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def api_url(self) -> str:
        """What WebClient(base_url=...) takes (with the trailing slash slack_sdk expects)."""
        return f"{self.base_url}/api/"

    # -- test controls -------------------------------------------------------------------------------

    def fail(self, method: str, *, status: int, retry_after: int = 1, times: int = 1) -> None:
        """Answer the next `times` calls of `method` with `status` (429 carries Retry-After)."""
        with self._lock:
            self._failures[method] = _Failure(status, retry_after, times)

    def delete(self, channel: str, ts: str) -> None:
        """Delete a message as a user or an admin can (its replies stay): edits of it and replies to it then
        fail with message_not_found / thread_not_found, as Slack answers."""
        with self._lock:
            self.messages = [m for m in self.messages if not (m.channel == channel and m.ts == ts)]

    def response_url(self, key: str | None = None) -> str:
        """Mint a response URL (as Slack puts in interaction payloads); posts to it are kept by key."""
        key = key or f"R{next(self._ids):06d}"
        with self._lock:
            self.responses.setdefault(key, [])
        return f"{self.base_url}/response/{key}"

    def calls_to(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def channel(self, channel: str) -> list[Message]:
        """Top-level messages of a channel, oldest first."""
        with self._lock:
            return [m for m in self.messages if m.channel == channel and m.thread_ts is None]

    def history(self, channel: str) -> list[Message]:
        """Every message of a channel, thread replies included, in the order they were posted."""
        with self._lock:
            return [m for m in self.messages if m.channel == channel]

    def thread(self, channel: str, ts: str) -> list[Message]:
        """Replies in the thread of the message `ts`, oldest first."""
        with self._lock:
            return [m for m in self.messages if m.channel == channel and m.thread_ts == ts]

    # -- requests into the app, as Slack sends them --------------------------------------------------

    def slash_command(
        self,
        app_url: str,
        secret: str,
        *,
        text: str,
        user: str = "U0ONCALL",
        channel: str = "C0ALERTS",
        command: str = "/lag",
        timestamp: int | None = None,
        channel_name: str = "alerts",
    ) -> tuple[int, str, str]:
        """POST a signed slash command to the app, as Slack does. Returns (HTTP status, body, response key)."""
        key = f"R{next(self._ids):06d}"
        response_url = self.response_url(key)
        form = {
            "token": "unused-verification-token",
            "team_id": self.team_id,
            "team_domain": "lagbot-test",
            "channel_id": channel,
            "channel_name": channel_name,
            "user_id": user,
            "user_name": user.lower(),
            "command": command,
            "text": text,
            "api_app_id": "A0LAGBOT",
            "response_url": response_url,
            "trigger_id": f"{next(self._ids)}.trigger",
        }
        status, body = post_signed(app_url, urlencode(form), secret, timestamp=timestamp)
        return status, body, key

    def interaction(
        self, app_url: str, secret: str, payload: dict[str, Any], *, timestamp: int | None = None
    ) -> tuple[int, str]:
        """POST a signed interaction payload (a button click, a modal submission) to the app."""
        return post_signed(app_url, urlencode({"payload": json.dumps(payload)}), secret, timestamp=timestamp)

    def click_button(
        self, app_url: str, secret: str, *, user: str, message: Message, action_prefix: str, index: int = 0
    ) -> tuple[int, str, str]:
        """Click a button of `message` as `user` (a confirm dialog counts as confirmed), as Slack sends it.

        Returns (HTTP status, body, response key).
        """
        found = [
            (block, element)
            for block in message.blocks
            if block.get("type") == "actions"
            for element in block.get("elements", [])
            if str(element.get("action_id", "")).startswith(action_prefix)
        ]
        block, button = found[index]
        key = f"R{next(self._ids):06d}"
        payload = {
            "type": "block_actions",
            "team": {"id": self.team_id, "domain": "lagbot-test"},
            "user": {"id": user, "username": user.lower(), "team_id": self.team_id},
            "api_app_id": "A0LAGBOT",
            "token": "unused-verification-token",
            "container": {
                "type": "message",
                "message_ts": message.ts,
                "channel_id": message.channel,
                "is_ephemeral": False,
                "thread_ts": message.thread_ts,
            },
            "trigger_id": f"{next(self._ids)}.trigger",
            "channel": {"id": message.channel, "name": "alerts"},
            "message": {
                "type": "message",
                "ts": message.ts,
                "text": message.text,
                "blocks": message.blocks,
                "thread_ts": message.thread_ts,
            },
            "response_url": self.response_url(key),
            "actions": [
                {
                    "type": "button",
                    "action_id": button["action_id"],
                    "block_id": block.get("block_id", "b"),
                    "text": button["text"],
                    "value": button.get("value", ""),
                    "action_ts": f"{time.time():.6f}",
                }
            ],
        }
        status, body = self.interaction(app_url, secret, payload)
        return status, body, key

    def submit_view(
        self, app_url: str, secret: str, *, user: str, view: dict[str, Any], values: dict[str, dict[str, str]]
    ) -> tuple[int, str]:
        """Submit an opened modal with `values` ({block_id: {action_id: text}}), as Slack sends it."""
        state = {
            block: {action: {"type": "plain_text_input", "value": text} for action, text in actions.items()}
            for block, actions in values.items()
        }
        payload = {
            "type": "view_submission",
            "team": {"id": self.team_id, "domain": "lagbot-test"},
            "user": {"id": user, "username": user.lower(), "team_id": self.team_id},
            "api_app_id": "A0LAGBOT",
            "token": "unused-verification-token",
            "trigger_id": f"{next(self._ids)}.trigger",
            "view": {**view, "state": {"values": state}},
        }
        return self.interaction(app_url, secret, payload)

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the emulator first"
        return int(self._server.server_address[1])

    def socket_connection(self, timeout: float = 30.0) -> SocketConnection:
        """The newest open Socket Mode connection of the app (waits for one)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                live = [c for c in self.sockets if not c.closed.is_set()]
            if live:
                return live[-1]
            time.sleep(0.05)
        raise TimeoutError("no Socket Mode connection from the app")

    def socket_slash_command(
        self, *, text: str, user: str = "U0ONCALL", channel: str = "C0ALERTS", command: str = "/lag"
    ) -> tuple[str, str]:
        """Send a slash command envelope over Socket Mode. Returns (envelope id, response key)."""
        key = f"R{next(self._ids):06d}"
        payload = {
            "team_id": self.team_id,
            "channel_id": channel,
            "user_id": user,
            "command": command,
            "text": text,
            "api_app_id": "A0LAGBOT",
            "response_url": self.response_url(key),
            "trigger_id": f"{next(self._ids)}.trigger",
        }
        envelope_id = f"E{next(self._ids):08d}"
        self.socket_connection().send_json(
            {"envelope_id": envelope_id, "type": "slash_commands", "accepts_response_payload": True, "payload": payload}
        )
        return envelope_id, key

    def _websocket(self, handler: BaseHTTPRequestHandler) -> None:
        """Upgrade an HTTP request to a Socket Mode connection and serve it until the app leaves."""
        key = handler.headers.get("Sec-WebSocket-Key")
        if not key or "websocket" not in (handler.headers.get("Upgrade") or "").lower():
            handler.send_error(400)
            return
        handler.send_response(101, "Switching Protocols")
        handler.send_header("Upgrade", "websocket")
        handler.send_header("Connection", "Upgrade")
        handler.send_header("Sec-WebSocket-Accept", accept_key(key))
        handler.end_headers()
        handler.wfile.flush()
        connection = SocketConnection(handler.connection, handler.rfile, "A0LAGBOT")  # type: ignore[arg-type]
        with self._lock:
            self.sockets.append(connection)
        connection.hello()
        connection.serve()
        handler.close_connection = True

    # -- the API -------------------------------------------------------------------------------------

    def handle(
        self, method: str, args: dict[str, Any], token: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Answer one API call: (HTTP status, JSON body, extra headers). Records it."""
        with self._lock:
            status, body, headers = self._answer(method, args, token)
            self.calls.append(Call(method, args, token, status, body, time.time()))
            return status, body, headers

    def _answer(
        self, method: str, args: dict[str, Any], token: str | None
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        failure = self._failures.get(method)
        if failure is not None and failure.times > 0:
            failure.times -= 1
            if failure.status == 429:
                return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(failure.retry_after)}
            return failure.status, {"ok": False, "error": "internal_error"}, {}
        if not token:
            return 200, _error("not_authed"), {}
        if method == "apps.connections.open":
            if token != self.app_token:
                return 200, _error("invalid_auth"), {}
            ticket = f"T{next(self._ids):06d}"
            return 200, {"ok": True, "url": f"ws://127.0.0.1:{self.port}/link/?ticket={ticket}"}, {}
        if token != self.token:
            return 200, _error("invalid_auth"), {}
        answer = getattr(self, "_api_" + method.replace(".", "_"), None)
        if answer is None:
            return 200, _error("unknown_method"), {}
        return 200, answer(args), {}

    def _next_ts(self) -> str:
        """The epoch time in microseconds, one microsecond past the last ts when the clock has not moved on."""
        self._last_ts = max(round(time.time(), 6), round(self._last_ts + 0.000_001, 6))
        return f"{self._last_ts:.6f}"

    def _find(self, channel: str, ts: str) -> Message | None:
        return next((m for m in self.messages if m.channel == channel and m.ts == ts), None)

    def _api_auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": "https://lagbot-test.slack.com/",
            "team": "lagbot-test",
            "user": "lagbot",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": "B0LAGBOT",
        }

    def _message_problem(self, args: dict[str, Any]) -> dict[str, Any] | None:
        if not args.get("channel"):
            return _error("channel_not_found")
        blocks = args.get("blocks")
        if not args.get("text") and not blocks and not args.get("attachments"):
            return _error("no_text")
        if args.get("text") and len(str(args["text"])) > MAX_TEXT:
            return _error("msg_too_long")
        if blocks is not None:
            errors = block_errors(blocks, max_blocks=MAX_MESSAGE_BLOCKS)
            if errors:
                return _invalid_blocks(errors)
        return None

    def _api_chat_postMessage(self, args: dict[str, Any]) -> dict[str, Any]:
        problem = self._message_problem(args)
        if problem is not None:
            return problem
        thread_ts = args.get("thread_ts")
        channel = str(args["channel"])
        if thread_ts and self._find(channel, str(thread_ts)) is None:
            return _error("thread_not_found")
        if (metadata_problem := emulator_messages.metadata_problem(args.get("metadata"))) is not None:
            return _error(metadata_problem)
        message = Message(channel, self._next_ts(), str(args.get("text") or ""), list(args.get("blocks") or []),
                          str(thread_ts) if thread_ts else None,
                          metadata=emulator_messages.metadata_of(args.get("metadata")))  # fmt: skip
        self.messages.append(message)
        shown = emulator_messages.message_json(message, self.bot_user_id, with_metadata=True)
        return {"ok": True, "channel": channel, "ts": message.ts, "message": shown}

    def _api_conversations_history(self, args: dict[str, Any]) -> dict[str, Any]:
        return emulator_messages.history(self.messages, args, self.bot_user_id)

    def _api_conversations_replies(self, args: dict[str, Any]) -> dict[str, Any]:
        return emulator_messages.replies(self.messages, args, self.bot_user_id)

    def _api_chat_update(self, args: dict[str, Any]) -> dict[str, Any]:
        problem = self._message_problem(args)
        if problem is not None:
            return problem
        message = self._find(str(args["channel"]), str(args.get("ts")))
        if message is None:
            return _error("message_not_found")
        message.text = str(args.get("text") or "")
        if "blocks" in args:
            message.blocks = list(args.get("blocks") or [])
        message.edits += 1
        return {"ok": True, "channel": message.channel, "ts": message.ts, "text": message.text}

    def _api_chat_postEphemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        problem = self._message_problem(args)
        if problem is not None:
            return problem
        if not args.get("user"):
            return _error("user_not_found")
        ts = self._next_ts()
        self.ephemeral.append({**args, "message_ts": ts})
        return {"ok": True, "message_ts": ts}

    def _api_users_info(self, args: dict[str, Any]) -> dict[str, Any]:
        user = self.users.get(str(args.get("user")))
        if user is None:
            return _error("user_not_found")
        return {"ok": True, "user": {"id": args["user"], **user}}

    def _api_usergroups_users_list(self, args: dict[str, Any]) -> dict[str, Any]:
        members = self.usergroups.get(str(args.get("usergroup")))
        if members is None:
            return _error("no_such_subteam")
        return {"ok": True, "users": list(members)}

    def _api_views_open(self, args: dict[str, Any]) -> dict[str, Any]:
        if not args.get("trigger_id"):
            return _error("invalid_trigger_id")
        view = args.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        if not isinstance(view, dict) or view.get("type") not in ("modal", "home"):
            return _error("invalid_arguments")
        if len(str(view.get("private_metadata", ""))) > 3_000:  # Slack's limit on a view's private_metadata
            return _error("invalid_arguments")
        errors = block_errors(view.get("blocks") or [], max_blocks=MAX_VIEW_BLOCKS)
        if errors:
            return _invalid_blocks(errors)
        opened = {**view, "id": f"V{next(self._ids):08d}"}
        self.views.append(opened)
        return {"ok": True, "view": opened}

    def _api_files_getUploadURLExternal(self, args: dict[str, Any]) -> dict[str, Any]:
        if not args.get("filename") or not str(args.get("length", "")).isdigit():
            return _error("invalid_arguments")
        file_id = f"F{next(self._ids):08d}"
        self.files[file_id] = {"id": file_id, "name": args["filename"], "length": int(args["length"])}
        return {"ok": True, "upload_url": f"{self.base_url}/upload/{file_id}", "file_id": file_id}

    def _api_files_completeUploadExternal(self, args: dict[str, Any]) -> dict[str, Any]:
        files = args.get("files")
        if isinstance(files, str):
            files = json.loads(files)
        if not files:
            return _error("invalid_arguments")
        done = []
        for f in files:
            known = self.files.get(str(f.get("id")))
            if known is None or known["id"] not in self.uploads:
                return _error("file_not_found")
            if len(self.uploads[known["id"]]) != known["length"]:
                return _error("file_upload_size_mismatch")
            known["title"] = f.get("title") or known["name"]
            done.append(dict(known))
        channel = args.get("channel_id")
        if channel:
            thread_ts = args.get("thread_ts")
            share = Message(str(channel), self._next_ts(), str(args.get("initial_comment") or ""), [],
                            str(thread_ts) if thread_ts else None, files=done)  # fmt: skip
            self.messages.append(share)
        return {"ok": True, "files": done}

    def upload(self, file_id: str, data: bytes) -> int:
        with self._lock:
            if file_id not in self.files:
                return 404
            self.uploads[file_id] = data
            self.calls.append(Call("upload", {"file_id": file_id, "bytes": len(data)}, None, 200, "OK", time.time()))
            return 200

    def respond(self, key: str, payload: dict[str, Any]) -> int:
        with self._lock:
            if key not in self.responses:
                return 404
            if payload.get("blocks") is not None and block_errors(payload["blocks"], max_blocks=MAX_MESSAGE_BLOCKS):
                return 400
            self.responses[key].append(payload)
            self.calls.append(Call("response_url", {"key": key, **payload}, None, 200, "ok", time.time()))
            return 200


def _error(code: str) -> dict[str, Any]:
    return {"ok": False, "error": code}


def _invalid_blocks(errors: list[str]) -> dict[str, Any]:
    return {
        "ok": False,
        "error": "invalid_blocks",
        "errors": errors,
        "response_metadata": {"messages": [f"[ERROR] {e}" for e in errors]},
    }
