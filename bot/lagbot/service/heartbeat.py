"""Heartbeats of running remediations: a run that stops beating is finished as interrupted, within a minute.

The replica that runs an approved plan beats for it in the shared `Heartbeats` store (lagbot.service.
remediation_stores: a sorted set in Redis, proposal id -> last beat) every
`interval` seconds until the run ends. Its process may die mid-run (kill -9, a lost node): then the beats
stop, and the leader's housekeeping finds the run silent for `STALE_BEATS` intervals and finishes it as
interrupted (lagbot.service.remediate.Remediator.reap), which releases the group for new proposals. A run that never
beat (its replica died between the approval and the first beat) is caught by its longest duration instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Self

import redis

from lagbot.service.remediation_stores import Heartbeats

log = logging.getLogger(__name__)

STALE_BEATS = 3
"""A run silent for this many heartbeat intervals is interrupted."""


class RunHeartbeat:
    """Beats for `proposal_id` at once, then every `interval` seconds in a thread, until the block ends."""

    def __init__(self, beats: Heartbeats, proposal_id: str, *, interval: float, clock: Callable[[], float]) -> None:
        self._beats = beats
        self._id = proposal_id
        self._interval = interval
        self._clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"heartbeat-{proposal_id}", daemon=True)

    def beat(self) -> None:
        try:
            self._beats.beat(self._id, self._clock())
        except redis.RedisError as exc:  # the next beat may get through; silence for long is what counts
            log.warning("run heartbeat failed", extra={"proposal": self._id, "error": str(exc)})

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.beat()

    def __enter__(self) -> Self:
        self.beat()
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval + 5)


def silent_runs(beats: Heartbeats, running: Iterable[str], *, now: float, interval: float) -> list[str]:
    """The running proposals whose last beat is older than STALE_BEATS intervals (never-beaten ones excluded)."""
    ids = list(running)
    limit = now - STALE_BEATS * interval
    return [i for i, beat in zip(ids, beats.last(ids), strict=True) if beat is not None and beat < limit]
