"""What a `Bot` keeps between checks, given to it whole (`BotStores`): the service can then be built on any store
that keeps its contract, and `redis_stores` is the one place that builds them from Redis for a running bot.

Stores with an abstract contract and a memory twin (each module's doc): windows (lagbot.engine.window), incidents,
history, summaries and the audit trail. The outbox, storms, leases and the state epoch are Redis only for now.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import redis

from lagbot.core import keys as redis_keys
from lagbot.core.config import Settings
from lagbot.engine.window import RedisWindowStore, WindowStore
from lagbot.service.audit import AuditLog, AuditTrail
from lagbot.service.history import HistoryStore
from lagbot.service.incidents import IncidentStore, RedisIncidentStore
from lagbot.service.lease import FencedLock, Lease
from lagbot.service.outbox import Outbox
from lagbot.service.rollups import make_tiered_history
from lagbot.service.state_epoch import StateEpoch
from lagbot.service.storms import Storms
from lagbot.service.summary import Summaries, SummaryStore


@dataclass(frozen=True)
class BotStores:
    """Every store of one bot replica. `leader.holder` is the replica's id."""

    redis: redis.Redis
    """The client the remediation side (lagbot.service.remediate) and the app still use directly."""
    windows: WindowStore
    incidents: IncidentStore
    outbox: Outbox
    storms: Storms
    history: HistoryStore
    summaries: Summaries
    audit: AuditTrail
    leader: Lease
    outbox_lock: FencedLock
    epoch: StateEpoch


def redis_stores(settings: Settings, client: redis.Redis, *, replica_id: str | None = None) -> BotStores:
    """The stores of a running bot, all in `client`'s Redis, held as `replica_id` (a fresh one when None)."""
    holder = replica_id or uuid.uuid4().hex[:8]
    ttl = settings.leader.lease_ttl
    return BotStores(
        redis=client,
        windows=RedisWindowStore(client, samples=settings.window.samples, ttl=settings.window.ttl),
        incidents=RedisIncidentStore(client, keep=settings.digest.history.longest),
        outbox=Outbox(client),
        storms=Storms(client, settings.incidents.storm),
        history=make_tiered_history(settings.digest.history, client),
        summaries=SummaryStore(client, ttl=settings.window.ttl),
        audit=AuditLog(client),
        leader=Lease(client, "leader", holder=holder, ttl=ttl),
        outbox_lock=FencedLock(client, redis_keys.OUTBOX_LOCK, holder=holder, ttl=ttl),
        epoch=StateEpoch(client),
    )
