"""The audit trail: every proposal, approval, refusal, execution and result, in Redis streams.

Its contract is `AuditTrail` (what every implementation keeps); `AuditLog` keeps it in Redis, `MemoryAuditTrail` in
this process (tests/service/test_store_contracts.py checks both the same way).

Each entry is versioned JSON in one field of a stream entry: who, when, what (the event), which group
and proposal, the plan, before and after. Entries go to a stream per group (what `/lag audit` reads)
and to one stream of everything (what `lagbot audit export` writes as JSON lines). Both are capped
(approximately, as Redis trims) so the trail cannot fill Redis.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import redis

from lagbot.core import codec
from lagbot.core import keys as redis_keys
from lagbot.core.stored import text

AUDIT_VERSION = 1
BOT_USER = "lagbot"
"""The user of what lagbot does itself (proposed, failed, restored, expired; an auto-approval)."""
MAX_ALL = 100_000
MAX_PER_GROUP = 1_000
GROUP_KEEP = 90 * 86_400
"""A group's own stream (what `/lag audit` shows) expires this long after its last entry; the stream of
everything keeps the entry (capped at MAX_ALL) for `lagbot audit export`."""


@dataclass(frozen=True)
class AuditEntry:
    at: float
    event: str
    """proposed, approved, refused, denied, expired, running, succeeded, failed, verified, escalated."""
    cluster: str
    group: str
    user: str
    """Slack user id, or 'lagbot' for the bot's own actions."""
    action: str | None = None
    proposal: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return AUDIT_CODEC.encode(self)

    @classmethod
    def from_json(cls, raw: str | bytes) -> AuditEntry:
        """Raises StoredFormatError (lagbot.core.stored) when it is not an entry lagbot wrote."""
        return AUDIT_CODEC.decode(raw)


AUDIT_CODEC = codec.register(codec.Codec("audit entry", AuditEntry, AUDIT_VERSION))


class AuditTrail(ABC):
    """Every proposal, approval, refusal, execution and result, per group and all together.

    Contract: `record` keeps an entry in its group's trail and in the trail of everything; `latest(cluster, group,
    n)` gives the group's newest `n` entries, newest first (a group's trail keeps about its newest MAX_PER_GROUP);
    `export(since=, batch=)` gives every entry of the trail of everything, oldest first (only those at or after
    `since` when given), reading `batch` at a time.
    """

    @abstractmethod
    def record(self, entry: AuditEntry) -> None: ...

    @abstractmethod
    def latest(self, cluster: str, group: str, n: int = 20) -> list[AuditEntry]: ...

    @abstractmethod
    def export(self, *, since: float | None = None, batch: int = 1_000) -> Iterator[AuditEntry]: ...


class MemoryAuditTrail(AuditTrail):
    """The audit trail in this process."""

    def __init__(self) -> None:
        self._all: list[AuditEntry] = []

    def record(self, entry: AuditEntry) -> None:
        self._all.append(entry)

    def latest(self, cluster: str, group: str, n: int = 20) -> list[AuditEntry]:
        mine = [e for e in self._all if (e.cluster, e.group) == (cluster, group)][-MAX_PER_GROUP:]
        return mine[::-1][:n]

    def export(self, *, since: float | None = None, batch: int = 1_000) -> Iterator[AuditEntry]:
        for entry in list(self._all):
            if since is None or entry.at >= since:
                yield entry


class AuditLog(AuditTrail):
    """The audit trail in Redis streams: one per group (capped, expiring) and one of everything (capped)."""

    def __init__(self, client: redis.Redis) -> None:
        self._redis = client
        self._all = redis_keys.AUDIT

    @staticmethod
    def _group_stream(cluster: str, group: str) -> str:
        return redis_keys.audit(cluster, group)

    def record(self, entry: AuditEntry) -> None:
        fields: dict[Any, Any] = {"entry": entry.to_json()}
        pipe = self._redis.pipeline(transaction=True)
        pipe.xadd(self._all, fields, maxlen=MAX_ALL, approximate=True)
        stream = self._group_stream(entry.cluster, entry.group)
        pipe.xadd(stream, fields, maxlen=MAX_PER_GROUP, approximate=True)
        pipe.expire(stream, GROUP_KEEP)  # a group gone for that long takes its stream with it
        pipe.execute()

    def latest(self, cluster: str, group: str, n: int = 20) -> list[AuditEntry]:
        """The newest `n` entries of a group, newest first."""
        rows = _rows(self._redis.xrevrange(self._group_stream(cluster, group), count=n))
        return [AuditEntry.from_json(raw) for _, raw in rows]

    def export(self, *, since: float | None = None, batch: int = 1_000) -> Iterator[AuditEntry]:
        """Every entry of the trail, oldest first (those at or after `since` when given)."""
        start = "-"
        while True:
            rows = _rows(self._redis.xrange(self._all, min=start, count=batch))
            for _, raw in rows:
                entry = AuditEntry.from_json(raw)
                if since is None or entry.at >= since:
                    yield entry
            if len(rows) < batch:
                return
            start = "(" + rows[-1][0]


def _rows(result: Any) -> list[tuple[str, bytes]]:
    """(entry id, the entry's JSON) from an XRANGE / XREVRANGE answer."""
    rows = []
    for entry_id, fields in result or []:
        rows.append((text(entry_id), fields[b"entry"] if b"entry" in fields else fields["entry"]))
    return rows
