"""Noticing that Redis lost lagbot's state (restarted empty, flushed, failed over without data).

A marker key holds an epoch id. Every replica remembers the epoch it last saw; when the marker is gone,
the first replica to write a new one (SET NX) learned that the state was lost and is the one to say so,
once; the others see the new marker and say nothing. A first start of lagbot finds no marker too, but
has seen none before: it only writes one.
"""

from __future__ import annotations

import uuid

import redis

from lagbot.core import keys as redis_keys
from lagbot.core.stored import text

EPOCH_KEY = redis_keys.STATE_EPOCH


class StateEpoch:
    def __init__(self, client: redis.Redis, *, key: str = EPOCH_KEY) -> None:
        self._redis = client
        self._key = key
        self._seen: str | None = None

    def lost(self) -> bool:
        """True once per loss of the stored state, on the one replica that noticed it first."""
        current = self._redis.get(self._key)
        if current is not None:
            self._seen = text(current)
            return False
        fresh = uuid.uuid4().hex
        won = bool(self._redis.set(self._key, fresh, nx=True))
        had_seen, self._seen = self._seen, fresh if won else text(self._redis.get(self._key) or b"")
        return won and had_seen is not None
