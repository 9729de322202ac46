"""The HTTP edge under a flood: 1,000 connections holding unfinished requests (from 40 client addresses) and 1,000
unsigned junk requests, while signed commands and health checks go on. The report: 41 of 44 health probes failed.

The edge is waitress (lagbot.app.edge): one loop reads every connection, only complete requests reach the threads,
and the probes have a listener of their own (`http.health_port`). Asserted: while the flood holds its 1,000
connections and the junk is sent, every health check on the probes' port and every signed command is answered
within Slack's 3 s (each request's timeout), each junk request gets its 401, and the flood is still held at the end;
then the flood reconnects all at once and a command right behind it is answered within 3 s as well.
Real sockets on loopback (client addresses 127.0.0.2 to 127.0.0.41), the bolt app as `lagbot run` builds it,
correctly signed commands.
"""

from __future__ import annotations

import http.client
import resource
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

from lagbot.app.server import BotHTTPServer
from lagbot.devkit.emulator import SlackEmulator
from lagbot.devkit.signed import signature
from lagbot.service.slack_api import slack_client
from lagbot.slack.app import build_app
from lagbot.slack.commands import Reply
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

SECRET = "flood-secret"
ADDRESSES = [f"127.0.0.{i}" for i in range(2, 42)]
PER_ADDRESS = 25  # 40 x 25 = 1,000 held connections
JUNK_COUNT = 1_000
SLACK_DEADLINE = 3.0  # Slack gives up on an answer after 3 s
MIN_ROUNDS = 20
MAX_ROUNDS = 2_000  # bounded: the rounds stop when the junk is sent (or here)
JUNK = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5\r\n\r\njunk"
UNFINISHED = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
FILES_NEEDED = 4 * (PER_ADDRESS * len(ADDRESSES)) + 512  # both ends of every held connection, and some


@pytest.fixture(autouse=True)
def enough_file_descriptors() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < FILES_NEEDED:
        if hard != resource.RLIM_INFINITY and hard < FILES_NEEDED:
            pytest.fail(f"the flood needs {FILES_NEEDED} open files; this process may open {hard} (ulimit -Hn)")
        resource.setrlimit(resource.RLIMIT_NOFILE, (FILES_NEEDED, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def server() -> Iterator[BotHTTPServer]:
    with SlackEmulator(token="xoxb-flood").start() as slack:
        app = build_app(
            client=slack_client("xoxb-flood", slack.api_url),
            signing_secret=SECRET,
            run_command=lambda text, user, channel: Reply(text=f"echo {text}"),
        )
        with BotHTTPServer(
            host="127.0.0.1",
            port=0,
            app=app,
            health=lambda: (True, {"ok": True}),
            metrics=lambda: b"",
            signing_secret=SECRET,
            workers=4,
            read_timeout=60.0,
            health_port=0,
            max_per_client=8,
        ) as bot_server:
            yield bot_server.start()


def held_open(port: int, source: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    sock.sendall(UNFINISHED)
    return sock


def still_open(sock: socket.socket) -> bool:
    """Nothing to read and not closed: the server still holds the connection, waiting for the body."""
    sock.setblocking(False)
    try:
        sock.recv(1)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


def junk_answers(port: int, count: int, into: list[bytes]) -> None:
    """`count` unsigned junk requests from one more address, each on its own connection: each answer's status line."""
    for i in range(count):
        with socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.99", 0)) as junk:
            junk.sendall(JUNK + str(i % 10).encode())
            into.append(junk.makefile("rb").readline())


def health_status(port: int) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=SLACK_DEADLINE)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status
    finally:
        connection.close()


def signed_command_status(port: int, text: str) -> tuple[int, bytes]:
    body = urlencode({"command": "/lag", "text": text, "user_id": "U1", "channel_id": "C1", "team_id": "T1"})
    ts = int(time.time())
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": str(ts),
        "X-Slack-Signature": signature(SECRET, ts, body),
    }
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=SLACK_DEADLINE)
    try:
        connection.request("POST", "/slack/events", body=body.encode(), headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_fault_health_and_signed_commands_answer_while_a_thousand_connections_hang(server: BotHTTPServer) -> None:
    health_port = server.health_port
    assert health_port is not None
    held = PER_ADDRESS * len(ADDRESSES)
    flood: list[socket.socket] = []
    try:
        for source in ADDRESSES:
            for _ in range(PER_ADDRESS):
                flood.append(held_open(server.port, source))
        wait_for("the server to hold the flood", lambda: server.connections() == held, 30)
        junk: list[bytes] = []
        sender = threading.Thread(target=junk_answers, args=(server.port, JUNK_COUNT, junk), daemon=True)
        sender.start()
        health: list[int] = []
        commands: list[tuple[int, bytes]] = []
        during_junk = 0
        for i in range(MAX_ROUNDS):
            if not sender.is_alive() and i >= MIN_ROUNDS:
                break
            during_junk += sender.is_alive()
            health.append(health_status(health_port))
            commands.append(signed_command_status(server.port, f"help {i}"))
        sender.join(timeout=60)
        assert not sender.is_alive()
        assert during_junk > 0  # the commands and probes went on while the junk was sent
        assert health == [200] * len(health)
        assert [status for status, _ in commands] == [200] * len(commands)
        assert junk == [b"HTTP/1.1 401 Unauthorized\r\n"] * JUNK_COUNT
        assert server.connections() >= held  # the flood was held all along
        assert [still_open(sock) for sock in flood] == [True] * held
        # The flood reconnects all at once (as when its connections time out together): a signed command and a probe
        # right behind the thousand new connections are answered within Slack's 3 s too.
        for sock in flood:
            sock.close()
        flood = [held_open(server.port, source) for source in ADDRESSES for _ in range(PER_ADDRESS)]
        assert signed_command_status(server.port, "help again")[0] == 200
        assert health_status(health_port) == 200
        wait_for("the server to hold the new flood", lambda: server.connections() == held, 30)
    finally:
        for sock in flood:
            sock.close()
