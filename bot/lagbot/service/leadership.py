"""Which replica leads: the one holding the `leader` lease (lagbot.service.lease), renewed on the scheduler's clock.

Only the leader checks clusters, delivers, posts digests and runs the housekeeping (lagbot.service.bot asks
`Leadership.is_leader` before each); the scheduler's leadership job calls `tick` (lagbot.service.scheduler).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import redis

from lagbot.service.lease import Lease

log = logging.getLogger(__name__)


class Leadership:
    """Whether this replica leads: it holds the `leader` lease, renewed every third of its ttl.

    `is_leader` is also false once the lease may have expired without a successful renewal, so a
    replica cut off from Redis stops acting before another one can have taken over.
    """

    def __init__(self, lease: Lease, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.lease = lease
        self._clock = clock
        self._held_until = 0.0
        self._lock = threading.Lock()

    def tick(self) -> bool:
        started = self._clock()
        try:
            held = self.lease.acquire()
        except redis.RedisError as exc:
            log.warning("lease renewal failed", extra={"error": str(exc)})
            held = False
        with self._lock:
            self._held_until = started + self.lease.ttl if held else 0.0
        return held

    def is_leader(self) -> bool:
        with self._lock:
            return self._clock() < self._held_until

    def start(self) -> None:
        """Nothing to do: the scheduler's leadership job takes the lease (lagbot.service.scheduler)."""

    def stop(self) -> None:
        """Resign, so another replica takes over at once instead of after the lease's expiry."""
        self.resign()

    def resign(self) -> None:
        with self._lock:
            self._held_until = 0.0
        try:
            self.lease.release()
        except redis.RedisError as exc:
            log.warning("lease release failed", extra={"error": str(exc)})
