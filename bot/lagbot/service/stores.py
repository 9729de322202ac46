"""What a `Bot` keeps between checks, given to it whole (`BotStores`): the service can then be built on any store
that keeps its contract. `redis_stores` builds them in Redis for a running bot, `memory_stores` in this process (a
bot that needs no Redis: tests, a single replica's trial run).

Every store has an abstract contract with docstrings and a memory twin (each module's doc): windows
(lagbot.engine.window), incidents, history, summaries, the audit trail, the outbox, storms, the leader lease and the
outbox's fenced lock, the state epoch and what each root message last showed, and the remediation side's
(lagbot.service.remediation_stores: proposals, restores, offers and refusals, run states, heartbeats, proposal
messages). tests/service/test_store_contracts.py, test_bot_store_contracts.py and test_remediation_store_contracts.py
check each twin against its Redis store the same way.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import redis

from lagbot.core import keys as redis_keys
from lagbot.core.config import Settings
from lagbot.engine.window import MemoryWindowStore, RedisWindowStore, WindowStore
from lagbot.service.audit import AuditLog, AuditTrail, MemoryAuditTrail
from lagbot.service.edits import MemoryShownStore, RedisShownStore, ShownStore
from lagbot.service.history import HistoryStore
from lagbot.service.incidents import IncidentStore, MemoryIncidentStore, RedisIncidentStore
from lagbot.service.lease import (
    FencedLock,
    Lease,
    LeaseBoard,
    MemoryFencedLock,
    MemoryLease,
    RedisFencedLock,
    RedisLease,
)
from lagbot.service.outbox import Outbox
from lagbot.service.outbox_stores import MemoryOutbox, RedisOutbox
from lagbot.service.proposal_stores import MemoryProposals, ProposalStore
from lagbot.service.remediation_stores import (
    MemoryHeartbeats,
    MemoryOfferBook,
    MemoryProposalMessages,
    MemoryRunStates,
    RedisHeartbeats,
    RedisOfferBook,
    RedisProposalMessages,
    RedisRunStates,
    RemediationStores,
)
from lagbot.service.restores import MemoryRestores, Restores
from lagbot.service.rollups import make_tiered_history
from lagbot.service.state_epoch import EpochMarker, MemoryStateEpoch, RedisStateEpoch, StateEpoch
from lagbot.service.storms import MemoryStorms, RedisStorms, Storms
from lagbot.service.summary import MemorySummaries, Summaries, SummaryStore


@dataclass(frozen=True)
class BotStores:
    """Every store of one bot replica. `leader.holder` is the replica's id."""

    redis: redis.Redis | None
    """The client the app still uses directly (its guard, rate limits, user-group cache and replay guard); None on
    memory stores."""
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
    shown: ShownStore
    remediation: RemediationStores


def redis_stores(settings: Settings, client: redis.Redis, *, replica_id: str | None = None) -> BotStores:
    """The stores of a running bot, all in `client`'s Redis, held as `replica_id` (a fresh one when None)."""
    holder = replica_id or uuid.uuid4().hex[:8]
    ttl = settings.leader.lease_ttl
    return BotStores(
        redis=client,
        windows=RedisWindowStore(client, samples=settings.window.samples, ttl=settings.window.ttl),
        incidents=RedisIncidentStore(client, keep=settings.digest.history.longest),
        outbox=RedisOutbox(client),
        storms=RedisStorms(client, settings.incidents.storm),
        history=make_tiered_history(settings.digest.history, client),
        summaries=SummaryStore(client, ttl=settings.window.ttl),
        audit=AuditLog(client),
        leader=RedisLease(client, "leader", holder=holder, ttl=ttl),
        outbox_lock=RedisFencedLock(client, redis_keys.OUTBOX_LOCK, holder=holder, ttl=ttl),
        epoch=RedisStateEpoch(client),
        shown=RedisShownStore(client),
        remediation=RemediationStores(
            proposals=ProposalStore(client),
            restores=Restores(client),
            offers=RedisOfferBook(client),
            runs=RedisRunStates(client),
            heartbeats=RedisHeartbeats(client),
            messages=RedisProposalMessages(client),
        ),
    )


def memory_stores(
    settings: Settings,
    clock: Callable[[], float] = time.time,
    *,
    replica_id: str | None = None,
    board: LeaseBoard | None = None,
    marker: EpochMarker | None = None,
) -> BotStores:
    """The stores of one bot in this process, their expiries on `clock`, held as `replica_id` (a fresh one when
    None). Replicas that share a `board` (leases, locks) and a `marker` (the state epoch) contend as replicas on one
    Redis do; their other stores are their own."""
    holder = replica_id or uuid.uuid4().hex[:8]
    ttl = settings.leader.lease_ttl
    board = board or LeaseBoard(clock=clock)
    messages = MemoryProposalMessages(clock=clock)
    return BotStores(
        redis=None,
        windows=MemoryWindowStore(samples=settings.window.samples, ttl=settings.window.ttl),
        incidents=MemoryIncidentStore(),
        outbox=MemoryOutbox(board=board, clock=clock, messages=messages),
        storms=MemoryStorms(settings.incidents.storm, clock=clock),
        history=make_tiered_history(settings.digest.history, None),
        summaries=MemorySummaries(ttl=settings.window.ttl, clock=clock),
        audit=MemoryAuditTrail(),
        leader=MemoryLease(board, "leader", holder=holder, ttl=ttl),
        outbox_lock=MemoryFencedLock(board, redis_keys.OUTBOX_LOCK, holder=holder, ttl=ttl),
        epoch=MemoryStateEpoch(marker or EpochMarker()),
        shown=MemoryShownStore(clock=clock),
        remediation=RemediationStores(
            proposals=MemoryProposals(clock=clock),
            restores=MemoryRestores(),
            offers=MemoryOfferBook(clock=clock),
            runs=MemoryRunStates(clock=clock),
            heartbeats=MemoryHeartbeats(),
            messages=messages,
        ),
    )
