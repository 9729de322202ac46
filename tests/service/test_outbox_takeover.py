"""The outbox's delivery lock: never waited for, taken over from a dead holder within one lease, fenced so a
holder that lost it changes nothing, and a stalled outbox is what /healthz says."""

from __future__ import annotations

import time

import pytest
import redis

from lagbot.app.assembly import health
from lagbot.core.config import Settings
from lagbot.core.keys import OUTBOX_LOCK
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.bot import Bot
from lagbot.service.lease import RedisFencedLock
from lagbot.service.outbox import POST_ROOT, REPLY, Fence, Operation
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter
from tests.support.bot_process import wait_for
from tests.support.slack_messages import deliver, section_message

pytestmark = pytest.mark.integration

TOKEN = "xoxb-takeover"
TTL = 1.0


def replica(redis_client: redis.Redis, slack: SlackEmulator, name: str, **http: object) -> Bot:
    settings = Settings(
        clusters=[{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}],  # type: ignore[list-item]
        leader={"lease_ttl": TTL},  # type: ignore[arg-type]
        http=http,  # type: ignore[arg-type]
    )
    return Bot.on_redis(settings, redis_client, slack_client(TOKEN, slack.api_url), SlackPresenter(), replica_id=name)


def op(kind: str, text: str) -> Operation:
    return Operation(kind, "i1", "prod", "orders", "C1", section_message(text))


def test_the_fenced_lock_is_exclusive_expires_when_its_holder_dies_and_counts_up(redis_client: redis.Redis) -> None:
    dead = RedisFencedLock(redis_client, OUTBOX_LOCK, holder="dead", ttl=TTL)
    alive = RedisFencedLock(redis_client, OUTBOX_LOCK, holder="alive", ttl=TTL)
    first = dead.acquire()
    assert first == "dead 1"
    assert alive.acquire() is None  # never waits
    # The holder dies: nobody renews; the lock is free within one ttl.
    second = wait_for("the dead holder's lock to expire", alive.acquire, timeout=2 * TTL)
    assert second == "alive 2"
    assert not dead.renew(first) and not dead.release(first) and alive.holds(second)
    with alive.renewing(second):  # a live holder keeps it however long it works
        until = time.monotonic() + 3 * TTL
        wait_for("three lease periods of work", lambda: time.monotonic() >= until, timeout=5)
        assert alive.holds(second)
    assert alive.release(second) and redis_client.exists(OUTBOX_LOCK) == 0


def test_a_dead_deliverers_lock_delays_nobody_and_is_taken_over_within_two_leases(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    bot = replica(redis_client, slack, "b")
    for operation in [op(POST_ROOT, "root"), op(REPLY, "one"), op(REPLY, "two")]:
        bot.outbox.enqueue(operation, now=1.0)
    # Replica "a" took the lock and was killed -9 before delivering anything.
    assert RedisFencedLock(redis_client, OUTBOX_LOCK, holder="a", ttl=TTL).acquire() == "a 1"

    report = bot.deliver()  # a check that delivers: it does not wait for the lock
    assert (report.sent, report.pending) == (0, 3) and slack.calls == []

    started = time.monotonic()
    wait_for("delivery by the surviving replica", lambda: bot.deliver().sent == 3, timeout=2 * TTL)
    took_over_in = time.monotonic() - started
    assert took_over_in <= 2 * TTL
    [root] = slack.channel("C1")
    assert (root.text, [m.text for m in slack.thread("C1", root.ts)]) == ("root", ["one", "two"])
    assert bot.outbox.pending() == 0 and redis_client.exists(OUTBOX_LOCK) == 0


def test_a_deliverer_that_lost_the_lock_sends_and_changes_nothing(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    bot = replica(redis_client, slack, "b")
    bot.outbox.enqueue(op(POST_ROOT, "root"), now=1.0)
    paused = RedisFencedLock(redis_client, OUTBOX_LOCK, holder="paused", ttl=TTL)
    stale = paused.acquire()
    assert stale is not None
    redis_client.delete(OUTBOX_LOCK)  # its lease ran out while it was paused ...
    current = RedisFencedLock(redis_client, OUTBOX_LOCK, holder="b", ttl=TTL).acquire()  # ... and "b" took over
    assert current == "b 2"

    report = deliver(bot.outbox, bot.slack, fence=Fence(OUTBOX_LOCK, stale))
    assert (report.sent, report.pending) == (0, 1) and slack.calls == []
    assert deliver(bot.outbox, bot.slack, fence=Fence(OUTBOX_LOCK, current)).sent == 1
    assert [m.text for m in slack.channel("C1")] == ["root"]


def test_healthz_reports_a_stalled_outbox(redis_client: redis.Redis, slack: SlackEmulator) -> None:
    bot = replica(redis_client, slack, "b", outbox_stalled_after=60)
    clock = {"now": 1_000.0}
    bot.clock = lambda: clock["now"]
    healthy, details = health(bot)
    assert healthy and details["outbox"] == {"pending": 0, "stalled": False, "stalled_for": 0.0}

    bot.outbox.enqueue(op(POST_ROOT, "root"), now=1_000.0)
    clock["now"] = 1_030.0
    assert health(bot)[1]["outbox"] == {"pending": 1, "stalled": False, "stalled_for": 30.0}
    clock["now"] = 1_061.0  # nothing moved for longer than allowed: unhealthy, and why
    healthy, details = health(bot)
    assert not healthy and details["ok"] is False
    assert details["outbox"] == {"pending": 1, "stalled": True, "stalled_for": 61.0}
