"""A `Bot` built on memory stores (lagbot.service.stores.BotStores) answers without Redis: its stores are given to it,
so the service is tested on the twins that keep each store's contract (tests/service/test_store_contracts.py).

The stores that are Redis only for now (outbox, storms, leases, state epoch) get a client of a socket nobody serves,
and these tests are not integration tests: the suite's guard (tests/conftest.py) fails one that connects anywhere, so
any Redis call on the paths tested here would fail it."""

from __future__ import annotations

from pathlib import Path

import redis

from lagbot.core import keys as redis_keys
from lagbot.core.config import Settings, build_settings
from lagbot.core.model import GroupSummary, Severity, Status
from lagbot.engine.window import MemoryWindowStore
from lagbot.service.audit import AuditEntry, MemoryAuditTrail
from lagbot.service.bot import Bot, slack_client
from lagbot.service.history import MemoryHistoryStore
from lagbot.service.incidents import MemoryIncidentStore
from lagbot.service.lease import FencedLock, Lease
from lagbot.service.outbox import Outbox
from lagbot.service.state_epoch import StateEpoch
from lagbot.service.stores import BotStores
from lagbot.service.storms import Storms
from lagbot.service.summary import MemorySummaries
from lagbot.slack.presenter import SlackPresenter
from tests.support.verdicts import verdict

T0 = 1_790_000_000.0
INTERVAL = 30.0


def settings() -> Settings:
    cluster = {"name": "prod", "bootstrap_servers": "127.0.0.1:9", "check_interval": INTERVAL}
    return build_settings({"clusters": [cluster]}, source="test")


def memory_stores(config: Settings, nowhere: redis.Redis, *, replica_id: str) -> BotStores:
    ttl = config.leader.lease_ttl
    return BotStores(
        redis=nowhere,
        windows=MemoryWindowStore(samples=config.window.samples, ttl=config.window.ttl),
        incidents=MemoryIncidentStore(),
        outbox=Outbox(nowhere),
        storms=Storms(nowhere, config.incidents.storm),
        history=MemoryHistoryStore(),
        summaries=MemorySummaries(ttl=config.window.ttl, clock=lambda: T0),
        audit=MemoryAuditTrail(),
        leader=Lease(nowhere, "leader", holder=replica_id, ttl=ttl),
        outbox_lock=FencedLock(nowhere, redis_keys.OUTBOX_LOCK, holder=replica_id, ttl=ttl),
        epoch=StateEpoch(nowhere),
    )


def test_a_follower_on_memory_stores_answers_lag_top_from_the_leader_s_summary_then_from_its_windows(
    tmp_path: Path,
) -> None:
    nowhere = redis.Redis(unix_socket_path=str(tmp_path / "nobody.sock"), socket_connect_timeout=0.5)
    config, now = settings(), [T0]
    stores = memory_stores(config, nowhere, replica_id="follower")
    bot = Bot(config, stores, slack_client("xoxb-x", "http://127.0.0.1:9/api/"), SlackPresenter(), clock=lambda: now[0])
    assert bot.replica_id == "follower" and not bot.leadership.is_leader()

    behind = verdict(lag=7_000, severity=Severity.CRITICAL, status=Status.STALL, group="orders")
    fine = verdict(lag=0, severity=Severity.OK, status=Status.OK, group="billing")
    stores.summaries.put("prod", T0 - 10, [behind, fine])  # as the leader stores it after its check
    assert bot.current_summaries("prod") == [GroupSummary.of(behind), GroupSummary.of(fine)]

    now[0] = T0 - 10 + 2 * INTERVAL + 1  # older than two check intervals: judged from the stored windows (none)
    assert bot.current_summaries("prod") == []

    entry = AuditEntry(at=T0, event="proposed", cluster="prod", group="orders", user="lagbot", action="scale")
    bot.audit.record(entry)
    assert bot.audit.latest("prod", "orders") == [entry]
    assert bot.incidents.open_incidents() == []
