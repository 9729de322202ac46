"""Leases: one holder at a time, with an expiry, renewed by the holder.

Several bot replicas share work safely this way: the one holding the `leader` lease runs the checks
and digests; when it dies, its lease expires and another replica takes it within two lease periods
(it tries every third of a period). The contracts are `Lease` and `FencedLock` (below, with their guarantees);
`RedisLease` and `RedisFencedLock` keep them in Redis (expiry is Redis's own, PX, so the replicas' clocks do not
matter), `MemoryLease` and `MemoryFencedLock` in this process, on a shared `LeaseBoard` (one per "Redis"), aged by
its clock. tests/service/test_store_contracts.py checks both the same way.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from types import TracebackType
from typing import Self

import redis

from lagbot.core import keys as redis_keys

# KEYS[1] = lease key, ARGV[1] = holder id, ARGV[2] = ttl in ms
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""


def _positive(ttl: float, what: str) -> float:
    if ttl <= 0:
        raise ValueError(f"a {what} needs a positive ttl")
    return ttl


class Lease(ABC):
    """A named lease held by `holder` for `ttl` seconds at a time.

    Contract:
    - `acquire()` takes a free (or expired) lease, or renews one already held by this holder; it returns whether this
      holder now holds it. Taking is atomic: of two holders acquiring a free lease at once, one gets it.
    - `renew()` extends the lease by `ttl` only if this holder still holds it (atomically), so a holder that was
      paused past its expiry cannot extend a lease someone else has since taken.
    - `release()` frees the lease only if this holder holds it; True when it did.
    - A lease not renewed within `ttl` seconds is free again (`current_holder()` None).
    """

    key: str
    holder: str
    ttl: float

    @abstractmethod
    def acquire(self) -> bool:
        """Take the lease if it is free, or renew it if this holder has it. True when held."""

    @abstractmethod
    def renew(self) -> bool:
        """Extend the lease if (and only if) this holder still holds it."""

    @abstractmethod
    def release(self) -> bool:
        """Free the lease if this holder holds it."""

    @abstractmethod
    def current_holder(self) -> str | None:
        """Who holds the lease now (None when nobody does)."""


class FencedLock(ABC):
    """A lock with a short expiry and a fencing token: one holder at a time, taken over when its holder dies.

    Contract:
    - `acquire()` never waits: it returns the holder's value ("<holder> <token>", the token increasing with every
      acquisition of this key, never reused even after a release or an expiry) or None when someone holds the lock.
    - `renew(value)` extends the lock by `ttl` only while it is still held with `value`; `release(value)` frees it
      only then; `holds(value)` says whether it is.
    - A lock not renewed within `ttl` seconds is free again. The holder renews it while it works (`renewing`), so a
      live holder keeps it however long the work takes and a dead one loses it within one `ttl`.
    Writes made under the lock compare the stored value with theirs (the fence: lagbot.service.outbox), so a holder
    that was paused past its expiry changes nothing once another has taken over.
    """

    key: str
    holder: str
    ttl: float

    @abstractmethod
    def acquire(self) -> str | None: ...

    @abstractmethod
    def renew(self, value: str) -> bool: ...

    @abstractmethod
    def release(self, value: str) -> bool: ...

    @abstractmethod
    def holds(self, value: str) -> bool: ...

    def renewing(self, value: str) -> Renewal:
        """A block during which a thread renews the lock every third of its ttl."""
        return Renewal(self, value)


class RedisLease(Lease):
    """A lease in Redis under `lagbot:lease:<name>`."""

    def __init__(self, client: redis.Redis, name: str, *, holder: str, ttl: float) -> None:
        self._redis = client
        self.key = redis_keys.lease(name)
        self.holder = holder
        self.ttl = _positive(ttl, "lease")
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    @property
    def _ttl_ms(self) -> int:
        return max(1, int(self.ttl * 1000))

    def acquire(self) -> bool:
        if self._redis.set(self.key, self.holder, nx=True, px=self._ttl_ms):
            return True
        return self.renew()

    def renew(self) -> bool:
        return bool(self._renew(keys=[self.key], args=[self.holder, self._ttl_ms]))

    def release(self) -> bool:
        return bool(self._release(keys=[self.key], args=[self.holder]))

    def current_holder(self) -> str | None:
        value = self._redis.get(self.key)
        return value.decode() if isinstance(value, bytes) else value


# KEYS[1] = lock key, KEYS[2] = its fencing counter; ARGV[1] = holder id, ARGV[2] = ttl in ms
_TAKE = """
if redis.call('EXISTS', KEYS[1]) == 1 then
    return false
end
local token = redis.call('INCR', KEYS[2])
local value = ARGV[1] .. ' ' .. token
redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
return value
"""


class RedisFencedLock(FencedLock):
    """A fenced lock in Redis under `key`, its token counter beside it (lagbot.core.keys.fence_of)."""

    def __init__(self, client: redis.Redis, key: str, *, holder: str, ttl: float) -> None:
        self._redis = client
        self.key = key
        self.fence_key = redis_keys.fence_of(key)
        self.holder = holder
        self.ttl = _positive(ttl, "lock")
        self._take = client.register_script(_TAKE)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    def acquire(self) -> str | None:
        value = self._take(keys=[self.key, self.fence_key], args=[self.holder, max(1, int(self.ttl * 1000))])
        return None if value is None else value.decode() if isinstance(value, bytes) else str(value)

    def renew(self, value: str) -> bool:
        return bool(self._renew(keys=[self.key], args=[value, max(1, int(self.ttl * 1000))]))

    def release(self, value: str) -> bool:
        return bool(self._release(keys=[self.key], args=[value]))

    def holds(self, value: str) -> bool:
        current = self._redis.get(self.key)
        return (current.decode() if isinstance(current, bytes) else current) == value


class LeaseBoard:
    """The memory twins' shared keyspace: key -> (value, expiry on `clock`), and each lock's last fencing token.

    One board stands for one Redis: leases and locks built on the same board contend as they would in one Redis.
    Every operation holds the board's lock, so each is atomic as the Redis scripts are.
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._held: dict[str, tuple[str, float]] = {}
        self._tokens: dict[str, int] = {}
        self.lock = threading.Lock()

    def value(self, key: str) -> str | None:
        """The key's live value (None when unset or expired). Call with `lock` held."""
        held = self._held.get(key)
        if held is None or self.clock() >= held[1]:
            self._held.pop(key, None)
            return None
        return held[0]

    def set_if_free(self, key: str, value: str, ttl: float) -> bool:
        """Set `key` to `value` for `ttl` s unless it holds a live value. Call with `lock` held."""
        if self.value(key) is not None:
            return False
        self._held[key] = (value, self.clock() + ttl)
        return True

    def extend_if(self, key: str, value: str, ttl: float) -> bool:
        """Extend `key` by `ttl` s from now if it holds `value`. Call with `lock` held."""
        if self.value(key) != value:
            return False
        self._held[key] = (value, self.clock() + ttl)
        return True

    def delete_if(self, key: str, value: str) -> bool:
        """Delete `key` if it holds `value`. Call with `lock` held."""
        if self.value(key) != value:
            return False
        del self._held[key]
        return True

    def next_token(self, key: str) -> int:
        """The key's next fencing token (1, 2, ...). Call with `lock` held."""
        self._tokens[key] = self._tokens.get(key, 0) + 1
        return self._tokens[key]

    def holds(self, key: str, value: str) -> bool:
        with self.lock:
            return self.value(key) == value


class MemoryLease(Lease):
    """A lease on a `LeaseBoard` (this process), as `RedisLease` keeps it."""

    def __init__(self, board: LeaseBoard, name: str, *, holder: str, ttl: float) -> None:
        self._board = board
        self.key = redis_keys.lease(name)
        self.holder = holder
        self.ttl = _positive(ttl, "lease")

    def acquire(self) -> bool:
        with self._board.lock:
            if self._board.set_if_free(self.key, self.holder, self.ttl):
                return True
            return self._board.extend_if(self.key, self.holder, self.ttl)

    def renew(self) -> bool:
        with self._board.lock:
            return self._board.extend_if(self.key, self.holder, self.ttl)

    def release(self) -> bool:
        with self._board.lock:
            return self._board.delete_if(self.key, self.holder)

    def current_holder(self) -> str | None:
        with self._board.lock:
            return self._board.value(self.key)


class MemoryFencedLock(FencedLock):
    """A fenced lock on a `LeaseBoard` (this process), as `RedisFencedLock` keeps it."""

    def __init__(self, board: LeaseBoard, key: str, *, holder: str, ttl: float) -> None:
        self._board = board
        self.key = key
        self.holder = holder
        self.ttl = _positive(ttl, "lock")

    def acquire(self) -> str | None:
        with self._board.lock:
            if self._board.value(self.key) is not None:
                return None
            value = f"{self.holder} {self._board.next_token(self.key)}"
            self._board.set_if_free(self.key, value, self.ttl)
            return value

    def renew(self, value: str) -> bool:
        with self._board.lock:
            return self._board.extend_if(self.key, value, self.ttl)

    def release(self, value: str) -> bool:
        with self._board.lock:
            return self._board.delete_if(self.key, value)

    def holds(self, value: str) -> bool:
        return self._board.holds(self.key, value)


class Renewal:
    def __init__(self, lock: FencedLock, value: str) -> None:
        self._lock = lock
        self._value = value
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"renew-{lock.key}", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self._lock.ttl / 3):
            try:
                if not self._lock.renew(self._value):
                    return  # lost it (expired while we were paused): the fence stops our writes
            except redis.RedisError:
                continue  # the next renewal may get through before the expiry

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
