"""Parts of the web demo that need no browser: every emoji shortcode lagbot writes has a character on the page and in
the terminal transcript; the page's address is printed again while the demo waits for a click; messages carry the
time they were posted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lagbot.devkit.demo_web import Reminder
from lagbot.devkit.emulator import SlackEmulator
from lagbot.devkit.wording import TERMINAL_EMOJI, demo_web_url_again

ROOT = Path(__file__).resolve().parents[2]
SHORTCODE = re.compile(r"(?<![\w:]):([a-z][a-z0-9_+-]*):(?![\w])")


def shortcodes_written() -> set[str]:
    """Every `:name:` in the wording of the layers that write to Slack."""
    found: set[str] = set()
    for path in (*ROOT.glob("bot/lagbot/*/wording.py"), *ROOT.glob("remediations/lagbot/remediations/*wording.py")):
        found |= set(SHORTCODE.findall(path.read_text()))
    return found


def test_every_shortcode_lagbot_writes_has_a_character() -> None:
    written = shortcodes_written()
    assert {"no_entry_sign", "white_check_mark", "gear"} <= written
    assert sorted(written - set(TERMINAL_EMOJI)) == []


class Said:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, line: str = "") -> None:
        self.lines.append(line)


def test_the_address_is_repeated_while_waiting() -> None:
    now = [100.0]
    run = Said()
    remind = Reminder(run, "http://127.0.0.1:8080/", every=15.0, clock=lambda: now[0])  # type: ignore[arg-type]
    calls = []
    for step in range(0, 50):
        now[0] = 100.0 + step
        calls.append(remind())
    assert [i for i, said in enumerate(calls) if said] == [15, 30, 45]
    assert run.lines == [demo_web_url_again("http://127.0.0.1:8080/")] * 3
    assert run.lines[0] == "  (waiting for your click in the page: open http://127.0.0.1:8080/)"


@pytest.mark.integration
def test_messages_carry_when_they_were_posted() -> None:
    import time

    from slack_sdk import WebClient

    with SlackEmulator(token="xoxb-t").start() as slack:
        before = time.time()
        WebClient(token="xoxb-t", base_url=slack.api_url).chat_postMessage(channel="C1", text="hi")
        [message] = slack.channel("C1")
        assert before <= message.posted_at <= time.time()
