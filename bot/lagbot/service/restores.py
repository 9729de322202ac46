"""What a run left to undo later (a paused autoscaler handed back after its hold), due at a time, run once; and what a
running remediation changed, held until it ends (released to run at once when the run is reaped: its process died).

A sorted set `lagbot:restores` (proposal id -> when) and a hash of what each restore needs. A due restore is
claimed atomically by pushing its due time a lease ahead (one script), and removed only once it ran: two replicas
never run it together, and one that dies mid-restore leaves it to be claimed again when the lease is over
(handing KEDA its annotations back twice is harmless). A held restore is in the hash only (never claimed) until
`release` puts it in the sorted set, or `forget` drops it (the run ended and undid its change itself).

Its contract is `RestoreQueue`; `Restores` keeps it in Redis, `MemoryRestores` in this process (tests/service/
test_store_contracts.py checks both the same way).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import redis

from lagbot.core import codec
from lagbot.core import keys as redis_keys
from lagbot.core.stored import StoredFormatError, text

log = logging.getLogger(__name__)

RESTORES = redis_keys.RESTORES
"""Sorted set: proposal id -> when what its run left to undo is due."""
RESTORE_VERSION = 1
RESTORE_LEASE = 120.0
"""Seconds a claimed restore is held by the replica running it; if that replica dies before finishing, the
restore is due again after this and another replica runs it."""


@dataclass(frozen=True)
class PendingRestore:
    """What a restore needs, as the hash keeps it."""

    previous: Any = None
    """JSON data: what the run changed (a paused autoscaler's annotations)."""


RESTORE_CODEC = codec.register(codec.Codec("autoscaler restore", PendingRestore, RESTORE_VERSION))


def _stored(previous: Any) -> str:
    return RESTORE_CODEC.encode(PendingRestore(previous))


_CLAIM = """
local due = redis.call('ZSCORE', KEYS[1], ARGV[1])
if due and tonumber(due) <= tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  return 1
end
return 0
"""


class RestoreQueue(ABC):
    """What runs left to undo later (a paused autoscaler handed back after its hold), due at a time, run once.

    Contract: `schedule(proposal, at, previous)` keeps `previous` (JSON data: what the restore needs) due at `at`.
    `claim_due(now=)` yields (proposal id, previous) for each restore due by `now`, soonest first, claimed by this
    caller: no other caller gets it for RESTORE_LEASE seconds; it is removed once the caller asks for the next item
    (so a caller that dies while running it leaves it due again after the lease). `forget` removes a restore.
    `hold(proposal, previous)` keeps `previous` due never (a running remediation's change); `release(proposal, at)`
    makes a held one due at `at` (True), or does nothing when none is held (False); `schedule` replaces a held one.
    `held()` lists the proposals whose change is held and not due (sorted): a hold whose run is over is stranded.
    """

    @abstractmethod
    def schedule(self, proposal_id: str, at: float, previous: Any) -> None: ...

    @abstractmethod
    def hold(self, proposal_id: str, previous: Any) -> None: ...

    @abstractmethod
    def release(self, proposal_id: str, at: float) -> bool: ...

    @abstractmethod
    def held(self) -> list[str]: ...

    @abstractmethod
    def claim_due(self, *, now: float) -> Iterator[tuple[str, Any]]: ...

    @abstractmethod
    def forget(self, proposal_id: str) -> None: ...


class MemoryRestores(RestoreQueue):
    """The restores queue in this process; what a restore needs is kept as the Redis one keeps it (its JSON)."""

    def __init__(self) -> None:
        self._due: dict[str, float] = {}
        self._previous: dict[str, str] = {}

    def schedule(self, proposal_id: str, at: float, previous: Any) -> None:
        self._due[proposal_id] = at
        self._previous[proposal_id] = _stored(previous)

    def hold(self, proposal_id: str, previous: Any) -> None:
        self._due.pop(proposal_id, None)
        self._previous[proposal_id] = _stored(previous)

    def release(self, proposal_id: str, at: float) -> bool:
        if proposal_id not in self._previous:
            return False
        self._due[proposal_id] = at
        return True

    def held(self) -> list[str]:
        return sorted(set(self._previous) - set(self._due))

    def claim_due(self, *, now: float) -> Iterator[tuple[str, Any]]:
        due = sorted((at, proposal_id) for proposal_id, at in self._due.items() if at <= now)
        for _at, proposal_id in due:
            if self._due.get(proposal_id, float("inf")) > now:
                continue  # claimed meanwhile
            self._due[proposal_id] = now + RESTORE_LEASE
            try:
                restore: PendingRestore | None = RESTORE_CODEC.decode(self._previous[proposal_id])
            except (KeyError, StoredFormatError):
                restore = None
            if restore is None:
                log.error("restore lost", extra={"proposal": proposal_id})
            else:
                yield proposal_id, restore.previous
            self.forget(proposal_id)

    def forget(self, proposal_id: str) -> None:
        self._due.pop(proposal_id, None)
        self._previous.pop(proposal_id, None)


class Restores(RestoreQueue):
    """The restores queue in Redis, shared by every replica."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def schedule(self, proposal_id: str, at: float, previous: Any) -> None:
        pipe = self._redis.pipeline(transaction=True)
        pipe.zadd(RESTORES, {proposal_id: at})
        pipe.hset(redis_keys.RESTORES_PREVIOUS, proposal_id, _stored(previous))
        pipe.execute()

    def hold(self, proposal_id: str, previous: Any) -> None:
        pipe = self._redis.pipeline(transaction=True)
        pipe.zrem(RESTORES, proposal_id)
        pipe.hset(redis_keys.RESTORES_PREVIOUS, proposal_id, _stored(previous))
        pipe.execute()

    def release(self, proposal_id: str, at: float) -> bool:
        release = self._redis.register_script(_RELEASE)
        return bool(release(keys=[RESTORES, redis_keys.RESTORES_PREVIOUS], args=[proposal_id, at]))

    def held(self) -> list[str]:
        pipe = self._redis.pipeline(transaction=True)
        pipe.hkeys(redis_keys.RESTORES_PREVIOUS)
        pipe.zrange(RESTORES, 0, -1)
        kept, due = pipe.execute()
        return sorted({text(k) for k in kept} - {text(d) for d in due})

    def claim_due(self, *, now: float) -> Iterator[tuple[str, Any]]:
        """(proposal id, what the restore needs) of each restore due and claimed by this replica, removed once
        the caller has run it (after the next item is asked for). A restore whose record is unreadable is
        logged and removed: it cannot be run."""
        claim = self._redis.register_script(_CLAIM)
        for raw in self._redis.zrangebyscore(RESTORES, "-inf", now):
            proposal_id = text(raw)
            if not claim(keys=[RESTORES], args=[proposal_id, now, now + RESTORE_LEASE]):
                continue  # another replica claimed it
            stored = self._redis.hget(redis_keys.RESTORES_PREVIOUS, proposal_id)
            try:
                restore = RESTORE_CODEC.decode(stored) if stored is not None else None
            except StoredFormatError:
                restore = None
            if restore is None:
                log.error("restore lost", extra={"proposal": proposal_id, "stored": text(stored or b"")})
            else:
                yield proposal_id, restore.previous
            self.forget(proposal_id)

    def forget(self, proposal_id: str) -> None:
        pipe = self._redis.pipeline(transaction=True)
        pipe.zrem(RESTORES, proposal_id)
        pipe.hdel(redis_keys.RESTORES_PREVIOUS, proposal_id)
        pipe.execute()
