"""Slash commands whose text or channel holds "payload" reach their handler.

bolt 1.30 reads any form body holding the substring "payload" as an interaction and drops it with a 404: `/lag
payload-consumer`, a silence reason mentioning a payload, and every `/lag` from a channel named like
`#payload-alerts` failed. The edge (lagbot.app.server `bolt_request`) gives bolt the body as Slack meant it.
Real HTTP, correctly signed requests from the Slack emulator, the bolt app as `lagbot run` builds it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagbot.app.server import BotHTTPServer
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.slack_api import slack_client
from lagbot.slack.app import build_app
from lagbot.slack.commands import Reply
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

SECRET = "payload-secret"
TOKEN = "xoxb-payload"


class Rig:
    def __init__(self, slack: SlackEmulator, server: BotHTTPServer) -> None:
        self.slack, self.server = slack, server
        self.calls: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()

    def run_command(self, text: str, user: str, channel: str) -> Reply:
        with self.lock:
            self.calls.append((text, user, channel))
        return Reply(text=f"ran {len(text)}")

    def ask(self, text: str, channel_name: str = "alerts") -> None:
        """One signed `/lag <text>`: answered 200 and run once with exactly that text."""
        url = f"http://127.0.0.1:{self.server.port}/slack/events"
        status, body, key = self.slack.slash_command(url, SECRET, text=text, user="U0ONCALL", channel_name=channel_name)
        assert (status, body) == (200, ""), (text, channel_name)
        wait_for(f"the answer to {text!r}", lambda: self.slack.responses.get(key), timeout=20)
        assert self.slack.responses[key][0]["text"] == f"ran {len(text)}"
        with self.lock:
            assert self.calls.pop() == (text, "U0ONCALL", "C0ALERTS")


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    with SlackEmulator(token=TOKEN).start() as slack:
        holder: list[Rig] = []
        app = build_app(
            client=slack_client(TOKEN, slack.api_url),
            signing_secret=SECRET,
            run_command=lambda text, user, channel: holder[0].run_command(text, user, channel),
        )
        server = BotHTTPServer(
            host="127.0.0.1", port=0, app=app, health=lambda: (True, {}), metrics=lambda: b"", signing_secret=SECRET
        ).start()
        holder.append(Rig(slack, server))
        try:
            yield holder[0]
        finally:
            server.stop()


@pytest.mark.parametrize(
    ("text", "channel_name"),
    [
        ("payload-consumer", "alerts"),
        ("silence orders 1h the payload schema changed", "alerts"),
        ("top 5", "payload-alerts"),
        ('payload={"type":"block_actions"}', "alerts"),
        ("", "payload"),
    ],
)
def test_fuzz_commands_holding_payload_reach_their_handler(rig: Rig, text: str, channel_name: str) -> None:
    rig.ask(text, channel_name)


@settings(max_examples=25, deadline=None)
@given(st.text(max_size=60).map(lambda t: t.replace("\x00", "")), st.sampled_from(["payload", "alerts", "x-payload"]))
def test_fuzz_any_command_text_reaches_its_handler(rig: Rig, text: str, channel_name: str) -> None:
    rig.ask(f"payload {text}", channel_name)
