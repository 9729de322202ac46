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

import redis

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

    def __init__(self, client: redis.Redis, name: str, *, holder: str, ttl: float, prefix: str = "lagbot") -> None:
        if ttl <= 0:
            raise ValueError("a lease needs a positive ttl")
        self._redis = client
        self.key = f"{prefix}:lease:{name}"
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
