"""The long-lived parts start in dependency order and stop in reverse; a part that fails to start stops the ones
already started (lagbot.app.lifecycle). Then the bot's own parts (lagbot.app.assembly.long_lived): a real HTTP
server, the leadership and the scheduler of a bot on memory stores, started and stopped in that order."""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from collections.abc import Callable

import pytest

from lagbot.app.assembly import long_lived
from lagbot.app.lifecycle import Lifecycle, Part
from lagbot.app.server import BotHTTPServer
from lagbot.core.config import build_settings
from lagbot.service.bot import Bot
from lagbot.service.scheduler import build_scheduler
from lagbot.service.slack_api import slack_client
from lagbot.service.stores import memory_stores
from lagbot.slack.presenter import SlackPresenter


def recorded(names: list[str], log: list[str], *, fails_to_start: str = "", fails_to_stop: str = "") -> list[Part]:
    """Parts that write what happens to them into `log`; the one named `fails_to_start` (`fails_to_stop`) raises."""

    def step(name: str, what: str, fails: bool) -> Callable[[], None]:
        def run() -> None:
            log.append(f"{what} {name}")
            if fails:
                raise RuntimeError(f"{name} could not {what}")

        return run

    return [
        Part(name, step(name, "start", name == fails_to_start), step(name, "stop", name == fails_to_stop))
        for name in names
    ]


def test_parts_start_in_order_and_stop_in_reverse() -> None:
    log: list[str] = []
    lifecycle = Lifecycle(recorded(["server", "leadership", "scheduler", "socket"], log))
    lifecycle.start()
    assert log == ["start server", "start leadership", "start scheduler", "start socket"]
    lifecycle.stop()
    assert log[4:] == ["stop socket", "stop scheduler", "stop leadership", "stop server"]
    lifecycle.stop()  # stopped already: nothing is stopped twice
    assert len(log) == 8


def test_a_part_that_fails_to_start_stops_the_ones_started_before_it_and_the_failure_is_raised() -> None:
    log: list[str] = []
    lifecycle = Lifecycle(recorded(["server", "leadership", "scheduler", "socket"], log, fails_to_start="scheduler"))
    with pytest.raises(RuntimeError, match="scheduler could not start"):
        lifecycle.start()
    assert log == ["start server", "start leadership", "start scheduler", "stop leadership", "stop server"]
    assert lifecycle.started == []


def test_a_part_that_fails_to_stop_is_logged_and_the_others_still_stop(caplog: pytest.LogCaptureFixture) -> None:
    log: list[str] = []
    lifecycle = Lifecycle(recorded(["server", "leadership", "scheduler"], log, fails_to_stop="leadership"))
    lifecycle.start()
    with caplog.at_level(logging.ERROR, logger="lagbot.app.lifecycle"):
        lifecycle.stop()
    assert log[3:] == ["stop scheduler", "stop leadership", "stop server"]
    assert [(r.getMessage(), getattr(r, "part", None)) for r in caplog.records] == [
        ("part failed to stop", "leadership")
    ]


def livez(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/livez", timeout=5) as response:
            return int(response.status)
    except urllib.error.URLError:
        return 0


@pytest.mark.integration
def test_the_bot_s_parts_start_server_leadership_scheduler_and_stop_in_reverse() -> None:
    settings = build_settings({"clusters": [{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}]}, source="test")
    bot = Bot(settings, memory_stores(settings), slack_client("xoxb-x", "http://127.0.0.1:9/api/"), SlackPresenter())
    server = BotHTTPServer(host="127.0.0.1", port=0, app=None, health=lambda: (True, {}), metrics=lambda: b"")
    scheduler = build_scheduler(bot)
    parts = long_lived(server, bot, scheduler, None)
    assert [p.name for p in parts] == ["http server", "leadership", "scheduler"]

    lifecycle = Lifecycle(parts)
    lifecycle.start()
    try:
        assert livez(server.port) == 200 and scheduler.running
        assert bot.leadership.tick() and bot.leadership.lease.current_holder() == bot.replica_id
    finally:
        lifecycle.stop()
    assert not scheduler.running
    assert bot.leadership.lease.current_holder() is None and not bot.leadership.is_leader()  # resigned
    assert livez(server.port) == 0  # stopped last
