"""Noticing that Redis lost lagbot's state (restarted empty, flushed, failed over without data).

A marker key holds an epoch id. Every replica looks at it on each of its checks (leader or not) and remembers the
epoch it last saw; a replica that finds the marker gone writes a new one (SET NX), and a replica that finds an
epoch other than the one it saw learned that the state was lost. A first start of lagbot finds no marker too, but
has seen none before: it only writes one.

Who says it: the leader, at its first check of each cluster after it learned of the loss, in the channels of that
check's groups in trouble (the incidents that reopen there). Each channel is told once per loss, whichever replica
leads: the telling is claimed per channel in the new epoch (SADD), so a leader that changes mid-way, or a
follower that learned of the loss and leads later, never says it twice. A loss is news for `horizon` seconds:
a replica that becomes leader long after says nothing of it.

The contract is `StateEpoch`; `RedisStateEpoch` keeps the marker in Redis, `MemoryStateEpoch` on a shared
`EpochMarker` in this process (`forget()` stands for Redis losing its data).
"""

from __future__ import annotations

import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import redis

from lagbot.core import keys as redis_keys
from lagbot.core.config import Settings
from lagbot.core.stored import text

EPOCH_KEY = redis_keys.STATE_EPOCH
TOLD_TTL = 86_400
"""How long the channels told of one loss are kept (seconds): far longer than any loss stays news."""


class StateEpoch(ABC):
    """One replica's view of the stored state's epoch.

    Contract: `observe()` returns the new epoch once per loss of the marker on every replica that had seen an
    earlier one (a first start is no loss), else None. Writing a new marker is atomic (set only if absent), so the
    replicas agree on the epoch that follows a loss. `claim(epoch, channel)` is True once per epoch and channel,
    on one replica.
    """

    def __init__(self) -> None:
        self._seen: str | None = None

    def observe(self) -> str | None:
        """The epoch that followed a loss this replica had not yet seen, else None."""
        current = self._read()
        if current is None:
            fresh = uuid.uuid4().hex
            current = fresh if self._write_if_absent(fresh) else (self._read() or fresh)
        had_seen, self._seen = self._seen, current
        return current if had_seen is not None and had_seen != current else None

    def claim(self, epoch: str, channel: str) -> bool:
        """True for the one call, of all replicas, that claims telling `channel` of the loss that began `epoch`."""
        return self._add_told(epoch, channel)

    @abstractmethod
    def _read(self) -> str | None:
        """The marker now (None when gone)."""

    @abstractmethod
    def _write_if_absent(self, epoch: str) -> bool:
        """Write the marker unless one is there, atomically; True when this call wrote it."""

    @abstractmethod
    def _add_told(self, epoch: str, channel: str) -> bool:
        """Add `channel` to the channels told of `epoch`'s loss, atomically; True when it was not there."""


class RedisStateEpoch(StateEpoch):
    """The marker in Redis under `key`, the channels told of a loss in a set beside it."""

    def __init__(self, client: redis.Redis, *, key: str = EPOCH_KEY) -> None:
        super().__init__()
        self._redis = client
        self._key = key

    def _read(self) -> str | None:
        current = self._redis.get(self._key)
        return None if current is None else text(current)

    def _write_if_absent(self, epoch: str) -> bool:
        return bool(self._redis.set(self._key, epoch, nx=True))

    def _add_told(self, epoch: str, channel: str) -> bool:
        key = redis_keys.state_epoch_told(epoch)
        pipe = self._redis.pipeline()
        pipe.sadd(key, channel)
        pipe.expire(key, TOLD_TTL)
        added, _ = pipe.execute()
        return bool(added)


class EpochMarker:
    """The marker the memory twins share (one per "Redis"); `forget()` drops it, as a Redis that lost its data."""

    def __init__(self) -> None:
        self.value: str | None = None
        self.told: set[tuple[str, str]] = set()
        self.lock = threading.Lock()

    def forget(self) -> None:
        with self.lock:
            self.value = None
            self.told.clear()


class MemoryStateEpoch(StateEpoch):
    """The marker on an `EpochMarker` in this process."""

    def __init__(self, marker: EpochMarker) -> None:
        super().__init__()
        self._marker = marker

    def _read(self) -> str | None:
        with self._marker.lock:
            return self._marker.value

    def _write_if_absent(self, epoch: str) -> bool:
        with self._marker.lock:
            if self._marker.value is not None:
                return False
            self._marker.value = epoch
            return True

    def _add_told(self, epoch: str, channel: str) -> bool:
        with self._marker.lock:
            if (epoch, channel) in self._marker.told:
                return False
            self._marker.told.add((epoch, channel))
            return True


def loss_horizon(settings: Settings) -> float:
    """How long a loss stays news (seconds): two leases (a leader elected again) and two of the slowest checks."""
    slowest = max((c.check_interval for c in settings.clusters), default=0.0)
    return 2 * settings.leader.lease_ttl + 2 * slowest


@dataclass
class _Loss:
    epoch: str
    noticed_at: float
    unchecked: set[str] = field(default_factory=set)


class LossNews:
    """What one replica knows of the latest loss of the stored state, until each cluster's first check since."""

    def __init__(self, epoch: StateEpoch, clusters: Sequence[str], *, horizon: float) -> None:
        self._epoch = epoch
        self._clusters = tuple(clusters)
        self._horizon = horizon
        self._loss: _Loss | None = None
        self._lock = threading.Lock()

    def look(self, *, now: float) -> bool:
        """Look at the marker (every replica, every check); True when this look learned of a loss."""
        epoch = self._epoch.observe()
        if epoch is None:
            return False
        with self._lock:
            self._loss = _Loss(epoch, now, set(self._clusters))
        return True

    def to_tell(self, cluster: str, channels: Iterable[str], *, now: float) -> list[str]:
        """Of `channels` (the groups in trouble at `cluster`'s check that read it), those this replica is to tell.

        Only at the first check of `cluster` since this replica learned of the loss, within the horizon, and only
        the channels no replica claimed before.
        """
        with self._lock:
            loss = self._loss
            if loss is None or cluster not in loss.unchecked:
                return []
            expired = now - loss.noticed_at > self._horizon
            loss.unchecked.discard(cluster)
            if expired or not loss.unchecked:
                self._loss = None
            if expired:
                return []
        return [channel for channel in sorted(set(channels)) if self._epoch.claim(loss.epoch, channel)]
