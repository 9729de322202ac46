"""The silence store: `/lag silence` keeps a group's incidents from opening until the silence expires.

One interface, two implementations that pass the same contract tests (tests/service/test_silences_contract.py):
`MemorySilenceStore` for one process, `RedisSilenceStore` for the bot (shared by replicas, survives restarts).

Contract (both stores):
- A silence is keyed by (cluster, group); silencing again replaces it (to extend or shorten it).
- `silence` refuses an `until` that is not after `now` (ValueError) and changes nothing then.
- `active(cluster, group, now)` is the silence when `until > now`, else None. At `until` it has expired.
- `all_active(now)` lists every active silence, sorted by (cluster, group).
- `unsilence(cluster, group, now=...)` removes the silence and says whether an active one was removed.
- Time is always passed in (`now`, epoch seconds); the stores never read the clock.

Redis layout: one key per silence, `<prefix>:silence:<cluster>:<group>`, holding versioned JSON with a
Redis TTL equal to the time left (`until - now`), so Redis itself forgets expired silences; and one sorted
set `<prefix>:silences` (member: JSON [cluster, group], score: until) to list them. Reading a document of
an unknown format version raises `StoredFormatError`.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import redis

from lagbot.core import codec
from lagbot.core import keys as redis_keys
from lagbot.service import wording

FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Silence:
    """One group silenced until `until` (epoch seconds) by a Slack user, with a reason."""

    cluster: str
    group: str
    until: float
    reason: str
    by: str
    """The Slack user id of who silenced it."""
    created_at: float

    def remaining(self, now: float) -> float:
        """Seconds left at `now` (0 once expired)."""
        return max(0.0, self.until - now)


class SilenceStore(ABC):
    """Where silences live. See the module docstring for the contract every implementation keeps."""

    @abstractmethod
    def silence(self, cluster: str, group: str, *, until: float, reason: str, by: str, now: float) -> Silence:
        """Silence (cluster, group) until `until`, replacing any silence it has. Returns what was stored.

        Raises:
            ValueError: when `until` is not after `now` (nothing is stored).
        """

    @abstractmethod
    def unsilence(self, cluster: str, group: str, *, now: float) -> bool:
        """Remove the silence of (cluster, group). True when an active silence (until > now) was removed."""

    @abstractmethod
    def active(self, cluster: str, group: str, now: float) -> Silence | None:
        """The silence of (cluster, group) if it is active at `now`, else None."""

    @abstractmethod
    def all_active(self, now: float) -> list[Silence]:
        """Every silence active at `now`, sorted by (cluster, group)."""


def _checked(cluster: str, group: str, *, until: float, reason: str, by: str, now: float) -> Silence:
    if not until > now:
        raise ValueError(wording.silence_not_in_future(until, now))
    return Silence(cluster=cluster, group=group, until=until, reason=reason, by=by, created_at=now)


class MemorySilenceStore(SilenceStore):
    """Silences in a dict: for one process (tests, a single bot without Redis)."""

    def __init__(self) -> None:
        self._data: dict[tuple[str, str], Silence] = {}

    def silence(self, cluster: str, group: str, *, until: float, reason: str, by: str, now: float) -> Silence:
        stored = _checked(cluster, group, until=until, reason=reason, by=by, now=now)
        self._data[(cluster, group)] = stored
        return stored

    def unsilence(self, cluster: str, group: str, *, now: float) -> bool:
        removed = self._data.pop((cluster, group), None)
        return removed is not None and removed.until > now

    def active(self, cluster: str, group: str, now: float) -> Silence | None:
        found = self._data.get((cluster, group))
        return found if found is not None and found.until > now else None

    def all_active(self, now: float) -> list[Silence]:
        return sorted((s for s in self._data.values() if s.until > now), key=lambda s: (s.cluster, s.group))


class RedisSilenceStore(SilenceStore):
    """Silences in Redis: a key per silence with a real TTL, and a sorted set (by expiry) to list them."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    @staticmethod
    def key(cluster: str, group: str) -> str:
        """The key of one silence (its names escaped: lagbot.core.keys)."""
        return redis_keys.silence(cluster, group)

    @property
    def index_key(self) -> str:
        return redis_keys.SILENCES

    def silence(self, cluster: str, group: str, *, until: float, reason: str, by: str, now: float) -> Silence:
        stored = _checked(cluster, group, until=until, reason=reason, by=by, now=now)
        ttl_ms = max(1, math.ceil((until - now) * 1000))
        pipe = self._redis.pipeline(transaction=True)
        pipe.set(self.key(cluster, group), encode_silence(stored), px=ttl_ms)
        pipe.zadd(self.index_key, {_member(cluster, group): until})
        pipe.zremrangebyscore(self.index_key, "-inf", now)  # forget entries that expired (by the caller's clock)
        pipe.execute()
        return stored

    def unsilence(self, cluster: str, group: str, *, now: float) -> bool:
        key = self.key(cluster, group)
        removed: list[Silence | None] = [None]

        def read_then_delete(pipe: redis.client.Pipeline) -> None:
            raw = pipe.get(key)
            removed[0] = None if raw is None else decode_silence(raw)  # an unknown version raises: nothing deleted
            pipe.multi()
            pipe.delete(key)
            pipe.zrem(self.index_key, _member(cluster, group))

        # WATCH the key: a silence written between the read and the delete retries, so the answer is exact.
        self._redis.transaction(read_then_delete, key)
        return removed[0] is not None and removed[0].until > now

    def active(self, cluster: str, group: str, now: float) -> Silence | None:
        raw = self._redis.get(self.key(cluster, group))
        if raw is None:
            return None
        found = decode_silence(raw)
        return found if found.until > now else None

    def all_active(self, now: float) -> list[Silence]:
        members = self._redis.zrangebyscore(self.index_key, f"({now!r}", "+inf")
        pairs = [_pair(m) for m in members if isinstance(m, bytes | str)]  # members without scores
        if not pairs:
            return []
        raws = self._redis.mget([self.key(c, g) for c, g in pairs])
        found = [decode_silence(raw) for raw in raws if raw is not None]  # None: Redis's TTL ran out first
        return sorted((s for s in found if s.until > now), key=lambda s: (s.cluster, s.group))


def _member(cluster: str, group: str) -> str:
    return json.dumps([cluster, group], separators=(",", ":"))


def _pair(member: bytes | str) -> tuple[str, str]:
    cluster, group = json.loads(member)
    return str(cluster), str(group)


SILENCE_CODEC = codec.register(codec.Codec("silence", Silence, FORMAT_VERSION))


def encode_silence(silence: Silence) -> str:
    """Versioned JSON of one silence."""
    return SILENCE_CODEC.encode(silence)


def decode_silence(raw: bytes | str) -> Silence:
    """A stored silence; raises StoredFormatError for any format version but FORMAT_VERSION, or what is not one."""
    return SILENCE_CODEC.decode(raw)
