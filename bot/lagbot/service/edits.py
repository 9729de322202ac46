"""Which edits of an incident's root message go out: those that say something new, not only newer counters.

A check edits the root of every open incident. Most of those edits would change nothing but counters: how long the
incident has been open, the lag figures, how long it has been below the threshold. Slack shows each edit (and the
table reply follows the root: one more edit each), so an edit is sent only when

1. the root is not identical to the one last shown (text, blocks and the table it carries): an identical root is
   never sent again; and
2. its story changed (`story`: open or resolved, severity, status, state, trend, whether an ETA is known, the
   causes and their order, recovering or not, reopened, the remediation's action, state and progress), or
3. the last root shown is at least `incidents.refresh_every` seconds old (REFRESH, 5 min, by default), so figures
   are never staler than that.

`story` and `due` are pure. What each root last showed is kept by a `ShownStore` (contract below): `RedisShownStore`
in Redis (one versioned document), `MemoryShownStore` in this process.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import redis

from lagbot.core import codec
from lagbot.core import keys as redis_keys
from lagbot.core.model import GroupVerdict
from lagbot.core.stored import StoredFormatError
from lagbot.service import remedies
from lagbot.service.incidents import HISTORY_KEEP, Incident
from lagbot.service.remediation_state import RemediationState
from lagbot.service.slack_message import SlackMessage

REFRESH = 300.0
"""A root whose only change is its counters is edited at most this often (seconds), by default: the setting is
`incidents.refresh_every` (lagbot.core.config)."""
SHOWN_VERSION = 1


@dataclass(frozen=True, slots=True)
class Shown:
    """What a root message showed: its story, a digest of everything it showed, and when."""

    story: str
    digest: str
    at: float


SHOWN_CODEC = codec.register(codec.Codec("shown root", Shown, SHOWN_VERSION))


def story(incident: Incident, verdict: GroupVerdict) -> str:
    """What the root says apart from counters (durations and figures), as one comparable string."""
    remediation = incident.remediation
    parts: list[object] = [
        incident.is_open,
        incident.severity.label,
        incident.peak_severity.label,
        verdict.status.name,
        verdict.state.value,
        verdict.trend.value,
        verdict.eta_seconds is None,
        [(c.kind, remedies.remedy(c)) for c in verdict.causes],
        incident.below_since is not None,
        incident.reopened,
        None if remediation is None else [remediation.action, remediation.state.value, _progress(remediation)],
    ]
    return json.dumps(parts, separators=(",", ":"))


def _progress(remediation: RemediationState) -> str | None:
    return None if remediation.progress is None else str(remediation.progress.value)


def digest(message: SlackMessage, table: SlackMessage | None) -> str:
    """A digest of everything a root edit shows: its text and blocks, and the table reply it carries (the same digest
    as when they were pairs of text and blocks, so that what a root last showed compares across an upgrade)."""
    pair = None if table is None else [table.text, table.blocks]
    shown = json.dumps([message.text, message.blocks, pair], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(shown.encode()).hexdigest()


def due(last: Shown | None, now: Shown, *, every: float = REFRESH) -> bool:
    """Whether the root edit `now` is sent, given what the root `last` showed (None: unknown, so it is)."""
    if last is None:
        return True
    if now.digest == last.digest:
        return False
    return now.story != last.story or now.at - last.at >= every


class ShownStore(ABC):
    """What each incident's root last showed.

    Contract: `get(incident_id)` is what the last `put` for that incident kept, or None when nothing is known: never
    put, kept longer than incidents are (lagbot.service.incidents.HISTORY_KEEP), or unreadable (then the edit goes).
    """

    @abstractmethod
    def get(self, incident_id: str) -> Shown | None: ...

    @abstractmethod
    def put(self, incident_id: str, shown: Shown) -> None: ...


class RedisShownStore(ShownStore):
    """Each root's `Shown` in Redis under lagbot.core.keys.root_shown, expiring with the incident's history."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client

    def get(self, incident_id: str) -> Shown | None:
        raw = self._redis.get(redis_keys.root_shown(incident_id))
        if raw is None:
            return None
        try:
            return SHOWN_CODEC.decode(raw)
        except StoredFormatError:
            return None

    def put(self, incident_id: str, shown: Shown) -> None:
        self._redis.set(redis_keys.root_shown(incident_id), SHOWN_CODEC.encode(shown), ex=int(HISTORY_KEEP))


class MemoryShownStore(ShownStore):
    """Each root's `Shown` in this process (its stored document, as Redis keeps it), aged by `clock`."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._kept: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def get(self, incident_id: str) -> Shown | None:
        with self._lock:
            until, raw = self._kept.get(incident_id, (0.0, ""))
            if self._clock() >= until:
                self._kept.pop(incident_id, None)
                return None
        try:
            return SHOWN_CODEC.decode(raw)
        except StoredFormatError:
            return None

    def put(self, incident_id: str, shown: Shown) -> None:
        with self._lock:
            self._kept[incident_id] = (self._clock() + int(HISTORY_KEEP), SHOWN_CODEC.encode(shown))
