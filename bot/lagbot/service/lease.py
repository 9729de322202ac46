"""Leases in Redis: one holder at a time, with an expiry, renewed by the holder.

Several bot replicas share work safely this way: the one holding the `leader` lease runs the checks
and digests; when it dies, its lease expires and another replica takes it within two lease periods
(it tries every third of a period). Contract:
- `acquire()` takes a free (or expired) lease, or renews one already held by this holder; it returns
  whether this holder now holds it.
- `renew()` extends the lease only if this holder still holds it (atomically, by a script), so a
  holder that was paused past its expiry cannot extend a lease someone else has since taken.
- `release()` frees the lease only if this holder holds it.
Expiry is Redis's own (PX), so clocks of the replicas do not matter.
"""

from __future__ import annotations

import threading
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


class Lease:
    """A named lease held by `holder` for `ttl` seconds at a time."""

    def __init__(self, client: redis.Redis, name: str, *, holder: str, ttl: float) -> None:
        if ttl <= 0:
            raise ValueError("a lease needs a positive ttl")
        self._redis = client
        self.key = redis_keys.lease(name)
        self.holder = holder
        self.ttl = ttl
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    @property
    def _ttl_ms(self) -> int:
        return max(1, int(self.ttl * 1000))

    def acquire(self) -> bool:
        """Take the lease if it is free, or renew it if this holder has it. True when held."""
        if self._redis.set(self.key, self.holder, nx=True, px=self._ttl_ms):
            return True
        return self.renew()

    def renew(self) -> bool:
        """Extend the lease if (and only if) this holder still holds it."""
        return bool(self._renew(keys=[self.key], args=[self.holder, self._ttl_ms]))

    def release(self) -> bool:
        """Free the lease if this holder holds it."""
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


class FencedLock:
    """A lock with a short expiry and a fencing token: one holder at a time, taken over when its holder dies.

    `acquire()` never waits: it returns the holder's value ("<holder> <token>", the token increasing with
    every acquisition) or None when someone else holds the lock. The holder renews it while it works
    (`renewing`), so a live holder keeps it however long the work takes and a dead one loses it within one
    `ttl`. Writes made under the lock compare the stored value with theirs (the fence), so a holder that
    was paused past its expiry changes nothing once another has taken over.
    """

    def __init__(self, client: redis.Redis, key: str, *, holder: str, ttl: float) -> None:
        if ttl <= 0:
            raise ValueError("a lock needs a positive ttl")
        self._redis = client
        self.key = key
        self.fence_key = redis_keys.fence_of(key)
        self.holder = holder
        self.ttl = ttl
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

    def renewing(self, value: str) -> Renewal:
        """A block during which a thread renews the lock every third of its ttl."""
        return Renewal(self, value)


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
