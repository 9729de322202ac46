"""The HTTP server under malformed and slow requests: the signature first, a 4xx and one log line for every bad
request, never a 500 or a dropped connection, and a bounded number of threads whatever clients do; a client that
never finishes its request is closed once idle past the read timeout (waitress: no 408)."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

from lagbot.app.server import BotHTTPServer
from lagbot.devkit.emulator import SlackEmulator
from lagbot.devkit.signed import signature
from lagbot.service.slack_api import slack_client
from lagbot.slack.app import build_app
from lagbot.slack.commands import Reply
from tests.support.bot_process import wait_for

pytestmark = pytest.mark.integration

SECRET = "hardening-secret"


@pytest.fixture
def server() -> Iterator[BotHTTPServer]:
    with SlackEmulator(token="xoxb-hard").start() as slack:
        app = build_app(
            client=slack_client("xoxb-hard", slack.api_url),
            signing_secret=SECRET,
            run_command=lambda text, user, channel: Reply(text=f"echo {text}"),
        )
        bot_server = BotHTTPServer(
            host="127.0.0.1",
            port=0,
            app=app,
            health=lambda: (True, {"ok": True}),
            metrics=lambda: b"",
            signing_secret=SECRET,
            workers=4,
            read_timeout=2.0,
        ).start()
        try:
            yield bot_server
        finally:
            bot_server.stop()


def post(port: int, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("POST", "/slack/events", body=body, headers=headers)
    response = connection.getresponse()
    answer = response.status, response.read().decode()
    connection.close()
    return answer


def signed(
    body: str, *, content_type: str = "application/x-www-form-urlencoded", ts: str | None = None
) -> dict[str, str]:
    timestamp = ts if ts is not None else str(int(time.time()))
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": signature(SECRET, timestamp, body) if timestamp.isdigit() else "v0=00",
    }


def refusals(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "lagbot.app.server" and r.levelno >= logging.INFO]


CASES = [
    # (what, body, headers builder, expected status, expected reason)
    ("unsigned payload that is not JSON", "payload=%5Bnot-json", None, 401, "missing signature headers"),
    ("unsigned payload that is a JSON list", "payload=%5B1%5D", None, 401, "missing signature headers"),
    ("non-numeric timestamp", "command=%2Flag&text=x", "abc", 401, "request timestamp is not an integer"),
    ("fractional timestamp", "command=%2Flag&text=x", "1700000000.5", 401, "request timestamp is not an integer"),
    ("stale timestamp", "command=%2Flag&text=x", "1000000000", 401, "request timestamp outside the five-minute window"),
    ("signed payload that is not JSON", "payload=%7Bnope", "", 400, "payload is not a JSON object"),
    ("signed payload that is a JSON list", "payload=%5B1%2C2%5D", "", 400, "payload is not a JSON object"),
    (
        "signed block_actions without actions",
        urlencode({"payload": json.dumps({"type": "block_actions", "user": {"id": "U1"}})}),
        "",
        400,
        "block_actions without actions",
    ),
    (
        "signed block_actions whose action is a string",
        urlencode({"payload": json.dumps({"type": "block_actions", "user": {"id": "U1"}, "actions": ["x"]})}),
        "",
        400,
        "an action without an action_id",
    ),
    (
        "signed view_submission whose view is a number",
        urlencode({"payload": json.dumps({"type": "view_submission", "user": {"id": "U1"}, "view": 3})}),
        "",
        400,
        "field view must be an object",
    ),
    (
        "signed view_submission without a callback_id",
        urlencode({"payload": json.dumps({"type": "view_submission", "user": {"id": "U1"}, "view": {}})}),
        "",
        400,
        "view interaction without a view callback_id",
    ),
    (
        "signed block_actions whose event is a list (bolt reads it as an object)",
        urlencode({"payload": json.dumps({"type": "block_actions", "user": {"id": "U1"}, "event": [1]})}),
        "",
        400,
        "field event must be an object",
    ),
    (
        "signed block_actions whose event is null (found by the fuzz: bolt read null.get)",
        urlencode({"payload": json.dumps({"type": "block_actions", "user": {"id": "U1"}, "event": None})}),
        "",
        400,
        "field event must be an object",
    ),
    (
        "signed form that is nothing Slack sends",
        "hello=world",
        "",
        400,
        "neither a command, an interaction nor an event",
    ),
]


@pytest.mark.parametrize(("what", "body", "ts", "status", "reason"), CASES, ids=[c[0] for c in CASES])
def test_every_malformed_request_gets_a_4xx_and_one_log_line(
    server: BotHTTPServer,
    caplog: pytest.LogCaptureFixture,
    what: str,
    body: str,
    ts: str | None,
    status: int,
    reason: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    headers = {"Content-Type": "application/x-www-form-urlencoded"} if ts is None else signed(body, ts=ts or None)
    assert post(server.port, body.encode(), headers) == (status, f"{reason}\n")
    lines = refusals(caplog)
    assert [(r.getMessage(), r.__dict__["status"], r.__dict__["reason"]) for r in lines] == [
        ("slack request refused", status, reason)
    ]
    assert all(r.exc_info is None for r in caplog.records)


def test_events_in_json_are_checked_after_the_signature(server: BotHTTPServer) -> None:
    body = "[1, 2]"
    assert post(server.port, body.encode(), signed(body, content_type="application/json")) == (
        400,
        "body is not a JSON object\n",
    )
    challenge = json.dumps({"type": "url_verification", "challenge": "c-123", "token": "t"})
    status, answer = post(server.port, challenge.encode(), signed(challenge, content_type="application/json"))
    assert (status, json.loads(answer)) == (200, {"challenge": "c-123"})
    limited = json.dumps({"type": "app_rate_limited", "team_id": "T1", "minute_rate_limited": 1518467820})
    assert post(server.port, limited.encode(), signed(limited, content_type="application/json"))[0] < 500
    unknown = json.dumps({"type": "something_else"})
    assert post(server.port, unknown.encode(), signed(unknown, content_type="application/json")) == (
        400,
        "unknown event envelope type\n",
    )
    # An event nobody listens to is bolt's 404, not a 500.
    event = json.dumps({"type": "event_callback", "event": {"type": "app_mention", "text": "hi"}, "team_id": "T1"})
    assert post(server.port, event.encode(), signed(event, content_type="application/json"))[0] == 404


def test_a_correct_command_still_runs(server: BotHTTPServer) -> None:
    body = urlencode({"command": "/lag", "text": "help", "user_id": "U1", "channel_id": "C1", "team_id": "T1"})
    assert post(server.port, body.encode(), signed(body))[0] == 200


def closed_without_an_answer(sock: socket.socket) -> bool:
    """The server closed the connection and sent nothing (an end of stream, or a reset: it had unread data)."""
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True


def test_clients_that_never_send_a_body_hold_no_threads_and_health_is_answered(
    server: BotHTTPServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    threads_before = threading.active_count()
    slow: list[socket.socket] = []
    try:
        for _ in range(300):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sock.sendall(
                b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                b"Content-Length: 100\r\n\r\n"
            )
            slow.append(sock)
        wait_for("the server to hold the 300 slow connections", lambda: server.connections() == 300, 10)
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5) as response:
            assert (response.status, json.loads(response.read())) == (200, {"ok": True})
        assert threading.active_count() <= threads_before + 4  # the pool, whatever the clients hold
        # Idle past the read timeout (waitress's channel_timeout), every slow client is closed without an answer
        # (waitress sends no 408; docs/security.md).
        for sock in slow:
            assert closed_without_an_answer(sock)
        wait_for("the server to forget the slow connections", lambda: server.connections() == 0, 5)
    finally:
        for sock in slow:
            sock.close()
    # Clients that leave before their answer leave no traceback either.
    for _ in range(20):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.close()
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5) as response:
        assert response.status == 200
    assert all(r.exc_info is None for r in caplog.records)


def status(port: int, request: bytes) -> bytes:
    """The status and reason of the answer to a raw request (waitress answers what it cannot parse as HTTP/1.0)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        return sock.makefile("rb").readline().split(b" ", 1)[1]


def test_oversized_headers_and_bodies_are_refused_before_the_app_and_other_methods_get_405(
    server: BotHTTPServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    huge = b"X-Filler: " + b"a" * (70 * 1024) + b"\r\n"
    huge_head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + huge + b"\r\n"
    assert status(server.port, huge_head) == b"431 Request Header Fields Too Large\r\n"
    announced = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 1000001\r\n\r\n"
    assert status(server.port, announced) == b"413 Request Entity Too Large\r\n"
    put = b"PUT /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
    assert status(server.port, put) == b"405 Method Not Allowed\r\n"
    assert refusals(caplog) == []  # none reached the gate
    assert all(r.exc_info is None for r in caplog.records)


def test_a_taken_probes_port_is_refused_and_lets_go_of_the_main_port() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken, socket.create_server(("127.0.0.1", 0)) as probe:
        main_port = probe.getsockname()[1]
        probe.close()  # a free port to ask for, then to take again
        with pytest.raises(OSError):
            BotHTTPServer(
                host="127.0.0.1", port=main_port, app=None, health=lambda: (True, {}), metrics=lambda: b"",
                health_port=taken.getsockname()[1],
            )  # fmt: skip
        with socket.create_server(("127.0.0.1", main_port)):  # released: it binds again
            pass
