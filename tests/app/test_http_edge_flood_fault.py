"""The HTTP edge under a flood: 1,000 connections holding unfinished requests (from many client addresses) and 1,000
unsigned junk requests, while signed commands and health checks go on. The report: 41 of 44 health probes failed.

The probes have a listener of their own (`http.health_port`); one client address holds at most
`http.max_connections_per_client` connections. Asserted: every health check on the probes' port and every signed
command from a client not in the flood is answered (200) while the flood holds its connections. Real sockets on
loopback (client addresses 127.0.0.2 to 127.0.0.41), the bolt app as `lagbot run` builds it, correctly signed commands.
"""

from __future__ import annotations

import contextlib
import socket
import urllib.request
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

from lagbot.app.server import BotHTTPServer
from lagbot.devkit.emulator import SlackEmulator
from lagbot.devkit.signed import post_signed
from lagbot.service.bot import slack_client
from lagbot.slack.app import build_app
from lagbot.slack.commands import Reply
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

SECRET = "flood-secret"
ADDRESSES = [f"127.0.0.{i}" for i in range(2, 42)]
PER_ADDRESS = 25  # 40 x 25 = 1,000 held connections
PER_CLIENT = 30
JUNK = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\njunk"
UNFINISHED = b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"


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
            max_per_client=PER_CLIENT,
        ) as bot_server:
            bot_server._server.max_connections = 1_100
            yield bot_server.start()


def held_open(port: int, source: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    sock.sendall(UNFINISHED)
    return sock


def closed_by_the_server(sock: socket.socket) -> bool:
    """The server closed the connection without an answer (an end of stream, or a reset: it had unread data)."""
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True


def test_fault_health_and_signed_commands_answer_while_a_thousand_connections_hang(server: BotHTTPServer) -> None:
    assert server.health_port is not None
    flood: list[socket.socket] = []
    try:
        for source in ADDRESSES:
            for _ in range(PER_ADDRESS):
                flood.append(held_open(server.port, source))
        wait_for("the reader to hold the flood", lambda: server._server.connections() == 1_000, 30)
        # one client up to its share is held; beyond it, closed at once
        for _ in range(PER_CLIENT - PER_ADDRESS):
            flood.append(held_open(server.port, ADDRESSES[0]))
        held = 1_000 + PER_CLIENT - PER_ADDRESS
        wait_for("the reader to hold the client's full share", lambda: server._server.connections() == held, 30)
        with contextlib.closing(held_open(server.port, ADDRESSES[0])) as extra:
            assert closed_by_the_server(extra)
        assert server._server.connections() == held
        # 1,000 unsigned junk requests from one more address: each refused, nothing held
        for i in range(1_000):
            with contextlib.closing(socket.create_connection(("127.0.0.1", server.port), timeout=10,
                                                             source_address=("127.0.0.99", 0))) as junk:  # fmt: skip
                junk.sendall(JUNK + str(i % 10).encode())
                assert junk.recv(64).startswith(b"HTTP/1.1 401 ")
        # while the flood holds its connections: probes on their own port, signed commands on the main one
        for i in range(20):
            with urllib.request.urlopen(f"http://127.0.0.1:{server.health_port}/healthz", timeout=3) as response:
                assert response.status == 200
            body = urlencode({"command": "/lag", "text": f"help {i}", "user_id": "U1", "channel_id": "C1",
                              "team_id": "T1"})  # fmt: skip
            status, _ = post_signed(f"http://127.0.0.1:{server.port}/slack/events", body, SECRET)
            assert status == 200
        assert server._server.connections() >= 1_000  # the flood was held all along
    finally:
        for sock in flood:
            sock.close()
