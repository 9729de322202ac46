"""Noticing that Redis lost lagbot's state (restarted empty, flushed, failed over without data).

A marker key holds an epoch id. Every replica remembers the epoch it last saw; when the marker is gone,
the first replica to write a new one (SET NX) learned that the state was lost and is the one to say so,
once; the others see the new marker and say nothing. A first start of lagbot finds no marker too, but
has seen none before: it only writes one.

The contract is `StateEpoch`; `RedisStateEpoch` keeps the marker in Redis, `MemoryStateEpoch` on a shared
`EpochMarker` in this process (`forget()` stands for Redis losing its data).
"""

from __future__ import annotations

import threading
import uuid
from abc import ABC, abstractmethod

import redis

from lagbot.core import keys as redis_keys
from lagbot.core.stored import text

EPOCH_KEY = redis_keys.STATE_EPOCH


class StateEpoch(ABC):
    """One replica's view of the stored state's epoch.

    Contract: `lost()` is True once per loss of the marker, on the one replica (of those sharing the store) that
    wrote the new marker first, and only if that replica had seen a marker before (a first start is no loss). Every
    other call is False. Writing the new marker is atomic (set only if absent), so two replicas never both say it.
    """

    def __init__(self) -> None:
        self._seen: str | None = None

    def lost(self) -> bool:
        """True once per loss of the stored state, on the one replica that noticed it first."""
        current = self._read()
        if current is not None:
            self._seen = current
            return False
        fresh = uuid.uuid4().hex
        won = self._write_if_absent(fresh)
        had_seen, self._seen = self._seen, fresh if won else (self._read() or "")
        return won and had_seen is not None

    @abstractmethod
    def _read(self) -> str | None:
        """The marker now (None when gone)."""

    @abstractmethod
    def _write_if_absent(self, epoch: str) -> bool:
        """Write the marker unless one is there, atomically; True when this call wrote it."""


class RedisStateEpoch(StateEpoch):
    """The marker in Redis under `key`."""

    def __init__(self, client: redis.Redis, *, key: str = EPOCH_KEY) -> None:
        super().__init__()
        self._redis = client
        self._key = key

    def _read(self) -> str | None:
        current = self._redis.get(self._key)
        return None if current is None else text(current)

    def _write_if_absent(self, epoch: str) -> bool:
        return bool(self._redis.set(self._key, epoch, nx=True))


class EpochMarker:
    """The marker the memory twins share (one per "Redis"); `forget()` drops it, as a Redis that lost its data."""

    def __init__(self) -> None:
        self.value: str | None = None
        self.lock = threading.Lock()

    def forget(self) -> None:
        with self.lock:
            self.value = None


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
