"""While Redis is down, a signed command gets 503 (as docs/security.md says: a replay is never let through), not a
400 "request not understood". Real HTTP, a correctly signed command, a Redis address where nothing listens."""

from __future__ import annotations

import socket

import pytest
import redis

from lagbot.app.server import BotHTTPServer
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.slack_api import slack_client
from lagbot.slack.app import build_app
from lagbot.slack.commands import Reply
from lagbot.slack.replay import ReplayGuard, refuse_replays
from lagbot.slack.wording.commands import replay_check_failed

pytestmark = pytest.mark.integration

SECRET = "redis-down-secret"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_fault_a_command_while_redis_is_down_gets_503_and_runs_nothing() -> None:
    ran: list[str] = []
    down = redis.Redis(host="127.0.0.1", port=closed_port(), socket_connect_timeout=1)
    with SlackEmulator(token="xoxb-down").start() as slack:
        app = build_app(
            client=slack_client("xoxb-down", slack.api_url),
            signing_secret=SECRET,
            run_command=lambda text, user, channel: Reply(text=ran.append(text) or "ran"),
        )
        refuse_replays(app, ReplayGuard(down))
        with BotHTTPServer(
            host="127.0.0.1", port=0, app=app, health=lambda: (True, {}), metrics=lambda: b"", signing_secret=SECRET
        ).start() as server:
            url = f"http://127.0.0.1:{server.port}/slack/events"
            status, body, _ = slack.slash_command(url, SECRET, text="top 5")
    assert (status, body) == (503, replay_check_failed())
    assert ran == []
