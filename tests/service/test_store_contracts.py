"""The store contracts (an abstract class each, with docstrings) hold for the Redis store and its memory twin alike:
the same checks run on both, so a service test may take the memory one and need no Redis."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
import redis

from lagbot.core.model import GroupSummary, Severity, Status
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.service.audit import AuditEntry, AuditLog, AuditTrail, MemoryAuditTrail
from lagbot.service.restores import RESTORE_LEASE, MemoryRestores, RestoreQueue, Restores
from lagbot.service.summary import MemorySummaries, StoredSummary, Summaries, SummaryStore
from tests.support.verdicts import verdict

T0 = 1_790_000_000.0


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.integration)])
def store_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis | None]:
    """None for the memory twin; a flushed client of the session's redis-server for the Redis store."""
    if request.param == "memory":
        yield None
        return
    server: EmbeddedRedis = request.getfixturevalue("redis_server")
    client = redis.Redis.from_url(server.url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


def audit_trail(client: redis.Redis | None) -> AuditTrail:
    return MemoryAuditTrail() if client is None else AuditLog(client)


def restore_queue(client: redis.Redis | None) -> RestoreQueue:
    return MemoryRestores() if client is None else Restores(client)


def entry(at: float, group: str, event: str = "proposed") -> AuditEntry:
    return AuditEntry(at=at, event=event, cluster="prod", group=group, user="lagbot", action="scale")


def test_the_audit_trail_keeps_each_group_s_and_everything(store_client: redis.Redis | None) -> None:
    trail = audit_trail(store_client)
    for i, group in enumerate(["orders", "billing", "orders"]):
        trail.record(entry(T0 + i, group))
    assert [e.at for e in trail.latest("prod", "orders")] == [T0 + 2, T0]
    assert [e.at for e in trail.latest("prod", "orders", n=1)] == [T0 + 2]
    assert trail.latest("prod", "payments") == []
    assert [e.group for e in trail.export()] == ["orders", "billing", "orders"]
    assert [e.at for e in trail.export(since=T0 + 1)] == [T0 + 1, T0 + 2]
    assert [e.at for e in trail.export(batch=1)] == [T0, T0 + 1, T0 + 2]
    assert next(iter(trail.export())) == entry(T0, "orders")


def test_restores_are_claimed_once_removed_when_run_and_due_again_after_a_dead_claim(
    store_client: redis.Redis | None,
) -> None:
    queue = restore_queue(store_client)
    queue.schedule("p1", T0 + 10, {"paused": "4"})
    queue.schedule("p2", T0 + 5, None)
    queue.schedule("p3", T0 + 500, {"later": True})
    assert list(queue.claim_due(now=T0)) == []

    due = queue.claim_due(now=T0 + 10)
    assert next(due) == ("p2", None)  # soonest first
    # This caller dies while running p2: the claim holds it from others until the lease is over.
    assert list(queue.claim_due(now=T0 + 10)) == [("p1", {"paused": "4"})]
    assert list(queue.claim_due(now=T0 + 10)) == []  # p1 ran and is gone
    assert list(queue.claim_due(now=T0 + 10 + RESTORE_LEASE - 1)) == []
    assert list(queue.claim_due(now=T0 + 10 + RESTORE_LEASE)) == [("p2", None)]
    queue.forget("p3")
    assert list(queue.claim_due(now=T0 + 1_000)) == []


def test_a_held_restore_is_never_due_until_released_and_a_schedule_or_forget_replaces_it(
    store_client: redis.Redis | None,
) -> None:
    queue = restore_queue(store_client)
    queue.hold("run", {"workload": "orders", "replicas": 3})
    queue.hold("done", {"replicas": 2})
    queue.hold("handed", {"interrupted": True})
    assert list(queue.claim_due(now=T0 + 10**9)) == []  # held: never due by itself
    assert queue.held() == ["done", "handed", "run"]

    assert queue.release("run", T0 + 5) is True  # its run was reaped: due at once
    assert queue.release("never-held", T0) is False
    queue.forget("done")  # its run ended in its own process and undid its change itself
    assert queue.release("done", T0) is False
    queue.schedule("handed", T0 + 600, "4")  # what the run hands back replaces what it held
    assert queue.held() == []  # released, dropped or scheduled: none is held any more
    assert list(queue.claim_due(now=T0 + 5)) == [("run", {"workload": "orders", "replicas": 3})]
    assert list(queue.claim_due(now=T0 + 599)) == []
    assert list(queue.claim_due(now=T0 + 600)) == [("handed", "4")]
    assert list(queue.claim_due(now=T0 + 10**9)) == []
    if store_client is not None:
        assert store_client.zcard("lagbot:restores") == 0 and store_client.hlen("lagbot:restores:previous") == 0


def summaries(
    client: redis.Redis | None, *, ttl: float = 60.0, clock: Callable[[], float] = time.monotonic
) -> Summaries:
    return MemorySummaries(ttl=ttl, clock=clock) if client is None else SummaryStore(client, ttl=ttl)


def test_a_summary_holds_its_cluster_s_rows_in_order_and_a_put_replaces_it(store_client: redis.Redis | None) -> None:
    store = summaries(store_client)
    behind = replace(verdict(lag=5_000, severity=Severity.CRITICAL, status=Status.STALL), group="orders")
    fine = replace(verdict(lag=0, severity=Severity.OK, status=Status.OK), group="billing")
    elsewhere = replace(verdict(lag=9, severity=Severity.WARN), cluster="staging", group="orders")
    assert store.get("prod") is None
    store.put("prod", T0, [behind, elsewhere, fine])
    found = store.get("prod")
    assert found is not None and (found.cluster, found.taken_at) == ("prod", T0)
    assert found.groups == [GroupSummary.of(behind), GroupSummary.of(fine)]
    assert store.get("staging") is None
    store.put("prod", T0 + 30, [fine])
    assert store.get("prod") == StoredSummary("prod", T0 + 30, [GroupSummary.of(fine)])


def test_a_summary_older_than_the_ttl_is_gone() -> None:
    now = [0.0]
    store = summaries(None, ttl=30.0, clock=lambda: now[0])
    store.put("prod", T0, [verdict(lag=1)])
    now[0] = 29.9
    assert store.get("prod") is not None
    now[0] = 30.0
    assert store.get("prod") is None
