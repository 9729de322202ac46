"""Incidents: one per (cluster, group) in trouble, one Slack thread each.

`step` is the pure part: the current incident (or None) and the newest verdict in, the next incident and
the effects to deliver out. The rules, in the order they are checked:

1. A verdict that could not be read (ERR) changes nothing: unknown lag neither opens nor resolves.
2. No incident (or one resolved longer ago than `reopen_within`): one opens when the severity reaches
   `open_at` and the group is not silenced and has a channel. Effects: post the root, then the first
   reply (table and causes).
3. An incident resolved within `reopen_within`: trouble again reopens it in the same thread (a flapping
   group does not open a new incident each minute). Effects: edit the root, one reply.
4. An open incident in trouble: the root is edited in place; a reply is posted only when the severity
   changed or a primary cause appeared that the thread has not stated yet (a reshuffle of known causes
   is not news). Within the settle period of lagbot's own restart or scale (`settling`) no new cause is
   stated, and while the check's window still reaches into it no cause read from rates (they are measured
   across the rebalance that action caused). A cause still primary after that is stated then.
5. An open incident out of trouble: it starts recovering; after `resolve_after` below the opening
   severity it resolves. Effects: edit the root (green), one reply.

`IncidentStore` keeps incidents in Redis as versioned JSON (in memory for tests of the pure parts).
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Annotated, Any

import redis

from lagbot.core import codec
from lagbot.core import keys as redis_keys
from lagbot.core.codec import ByName
from lagbot.core.config import IncidentConfig
from lagbot.core.model import GroupState, GroupVerdict, Severity, Status, Trend
from lagbot.core.stored import text
from lagbot.engine.agreement import Settling, held
from lagbot.service.remediation_state import RemediationState, points_as_objects

INCIDENT_VERSION = 2
"""2: fields at their default are left out, a remediation's check points are objects. 1 (still read): no
remediation stored as {}."""
HISTORY_KEEP = 8 * 86_400.0
"""Incidents (resolved or not) stay listed this long after their last change: digests look back a day."""


class Change(StrEnum):
    """Why an effect is delivered. Each has its own wording in lagbot.slack.wording."""

    OPENED = "opened"
    REOPENED = "reopened"
    SEVERITY_UP = "severity_up"
    SEVERITY_DOWN = "severity_down"
    NEW_CAUSE = "new_cause"
    UPDATED = "updated"
    RECOVERING = "recovering"
    RESOLVED = "resolved"
    REMEDIATION = "remediation"
    PATTERN = "pattern"
    """The incident looks like the group's recurring pattern (lagbot.service.pattern_notes): said, never silenced."""


class EffectKind(StrEnum):
    """What an effect does in Slack."""

    POST_ROOT = "post_root"
    UPDATE_ROOT = "update_root"
    REPLY = "reply"


@dataclass(frozen=True)
class Effect:
    """Something to show in Slack: post the root, edit it, or reply in the thread."""

    kind: EffectKind
    change: Change
    detail: str = ""


POST_ROOT, UPDATE_ROOT, REPLY = EffectKind.POST_ROOT, EffectKind.UPDATE_ROOT, EffectKind.REPLY


@dataclass(frozen=True)
class Incident:
    """One incident of one group. Its Slack thread (channel id, root ts) is the outbox's to know."""

    id: str
    cluster: str
    group: str
    channel: str
    opened_at: float
    severity: Annotated[Severity, ByName(Severity, lower=True)]
    """Stored by label ('warn'), as `peak_severity`."""
    peak_severity: Annotated[Severity, ByName(Severity, lower=True)]
    peak_lag: int | None
    primary_cause: str | None
    status: Annotated[Status, ByName(Status)]
    """The group's status at the incident's latest check (stored by name: 'WARN', 'STALL' ...)."""
    updated_at: float
    below_since: float | None = None
    resolved_at: float | None = None
    reopened: int = 0
    causes_stated: tuple[str, ...] = ()
    """Cause kinds already shown in the thread: a primary cause among them is not news."""
    remediation: RemediationState | None = None
    """The latest remediation of this incident as the root message shows it (action, state, detail)."""
    storm: str | None = None
    """The storm this incident is folded into (lagbot.service.storms): no thread of its own, the storm's summary
    shows it for its whole life. None: its own thread, as usual."""

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None

    def duration(self, now: float) -> float:
        return (self.resolved_at if self.resolved_at is not None else now) - self.opened_at


@dataclass(frozen=True)
class Transition:
    incident: Incident | None
    effects: tuple[Effect, ...] = ()


def in_trouble(verdict: GroupVerdict, config: IncidentConfig) -> bool:
    """The verdict's severity reaches the level that opens incidents."""
    return verdict.severity >= Severity[config.open_at.upper()]


def primary_cause(verdict: GroupVerdict) -> str | None:
    return verdict.causes[0].kind if verdict.causes else None


def _peak(incident: Incident, verdict: GroupVerdict) -> Incident:
    lags = [x for x in (incident.peak_lag, verdict.total_lag) if x is not None]
    return replace(
        incident,
        peak_lag=max(lags) if lags else None,
        peak_severity=max(incident.peak_severity, verdict.severity),
        status=verdict.status,
    )


def step(
    current: Incident | None,
    verdict: GroupVerdict,
    *,
    channel: str | None,
    silenced: bool,
    config: IncidentConfig,
    now: float,
    new_id: Callable[[], str] = lambda: uuid.uuid4().hex[:12],
    settling: Settling = Settling.NO,
) -> Transition:
    """The next state of a group's incident given its newest verdict. Pure (the id maker is passed in).

    `settling`: how far the check is from the incident's own restart or scale (which new causes wait, rule 4).
    """
    if verdict.status is Status.ERR or verdict.error is not None:
        return Transition(current)  # rule 1
    trouble = in_trouble(verdict, config)
    if current is None or (not current.is_open and now - (current.resolved_at or now) > config.reopen_within):
        if trouble and not silenced and channel:
            return _open(verdict, channel=channel, now=now, incident_id=new_id())  # rule 2
        return Transition(current)
    if not current.is_open:
        if trouble and not silenced:
            return _reopen(current, verdict, now)  # rule 3
        return Transition(current)
    if trouble:
        return _still_open(current, verdict, now, settling=settling)  # rule 4
    return _recovering(current, verdict, config, now)  # rule 5


def gone(current: Incident, detail: str, *, now: float) -> Transition:
    """An open incident of a group the cluster no longer lists (deleted, its offsets expired, or no longer watched):
    resolved now, said in its thread. A group anyone could create and drop must not leave incidents open forever."""
    resolved = replace(current, resolved_at=now, updated_at=now, severity=Severity.OK)
    return Transition(resolved, (Effect(UPDATE_ROOT, Change.RESOLVED), Effect(REPLY, Change.UPDATED, detail)))


def gone_verdict(incident: Incident) -> GroupVerdict:
    """What is known of a group that is gone: nothing (no partitions, no lag)."""
    return GroupVerdict(
        cluster=incident.cluster, group=incident.group, state=GroupState.DEAD, status=Status.OK, severity=Severity.OK,
        severity_reason="", partitions=(), total_lag=None, max_lag_seconds=None, produce_rate=None,
        consume_rate=None, eta_seconds=None, trend=Trend.UNKNOWN,
    )  # fmt: skip


def _open(verdict: GroupVerdict, *, channel: str, now: float, incident_id: str) -> Transition:
    incident = Incident(
        id=incident_id,
        cluster=verdict.cluster,
        group=verdict.group,
        channel=channel,
        opened_at=now,
        severity=verdict.severity,
        peak_severity=verdict.severity,
        peak_lag=verdict.total_lag,
        primary_cause=primary_cause(verdict),
        status=verdict.status,
        updated_at=now,
        causes_stated=_kinds(verdict),
    )
    return Transition(incident, (Effect(POST_ROOT, Change.OPENED), Effect(REPLY, Change.OPENED)))


def _kinds(verdict: GroupVerdict, already: tuple[str, ...] = ()) -> tuple[str, ...]:
    return already + tuple(c.kind for c in verdict.causes if c.kind not in already)


def _reopen(current: Incident, verdict: GroupVerdict, now: float) -> Transition:
    incident = _peak(
        replace(
            current,
            resolved_at=None,
            below_since=None,
            severity=verdict.severity,
            primary_cause=primary_cause(verdict) or current.primary_cause,
            updated_at=now,
            reopened=current.reopened + 1,
            causes_stated=_kinds(verdict, current.causes_stated),
        ),
        verdict,
    )
    return Transition(incident, (Effect(UPDATE_ROOT, Change.REOPENED), Effect(REPLY, Change.REOPENED)))


def _still_open(
    current: Incident, verdict: GroupVerdict, now: float, *, settling: Settling = Settling.NO
) -> Transition:
    effects = [Effect(UPDATE_ROOT, Change.UPDATED)]
    if verdict.severity > current.severity:
        effects.append(Effect(REPLY, Change.SEVERITY_UP, current.severity.label))
    elif verdict.severity < current.severity:
        effects.append(Effect(REPLY, Change.SEVERITY_DOWN, current.severity.label))
    cause = primary_cause(verdict)
    stated = current.causes_stated
    primary = cause or current.primary_cause
    if cause is not None and cause not in stated:
        if held(settling, cause):  # not stated yet: the thread's primary cause stays the one it said
            primary = current.primary_cause
        else:
            effects.append(Effect(REPLY, Change.NEW_CAUSE, current.primary_cause or ""))
            stated = (*stated, cause)
    incident = _peak(
        replace(
            current,
            severity=verdict.severity,
            primary_cause=primary,
            below_since=None,
            updated_at=now,
            causes_stated=stated,
        ),
        verdict,
    )
    return Transition(incident, tuple(effects))


def _recovering(current: Incident, verdict: GroupVerdict, config: IncidentConfig, now: float) -> Transition:
    below_since = current.below_since if current.below_since is not None else now
    incident = _peak(replace(current, below_since=below_since, updated_at=now), verdict)
    if now - below_since >= config.resolve_after:
        resolved = replace(incident, resolved_at=now, severity=verdict.severity)
        return Transition(resolved, (Effect(UPDATE_ROOT, Change.RESOLVED), Effect(REPLY, Change.RESOLVED)))
    return Transition(incident, (Effect(UPDATE_ROOT, Change.RECOVERING),))


# ---------------------------------------------------------------------------------------------------
# Storage
# ---------------------------------------------------------------------------------------------------


def _upgrade_1(document: dict[str, Any]) -> dict[str, Any]:
    """Format 1 stored no remediation as {} and a remediation's check points maybe as lists (its format 1)."""
    remediation = document.pop("remediation", None)
    if remediation:
        document["remediation"] = points_as_objects(remediation)
    return document


INCIDENT_CODEC = codec.register(
    codec.Codec("stored incident", Incident, INCIDENT_VERSION, {1: _upgrade_1}, omit_defaults=True)
)
"""Fields at their default (no storm, no remediation, never reopened ...) are left out."""


def encode_incident(incident: Incident) -> str:
    return INCIDENT_CODEC.encode(incident)


def decode_incident(raw: str | bytes) -> Incident:
    """Raises StoredFormatError (lagbot.core.stored) when it is not an incident lagbot wrote."""
    return INCIDENT_CODEC.decode(raw)


class IncidentStore(ABC):
    """Where incidents live between cycles and across restarts.

    Contract: `get` returns the newest incident of a group (open or resolved) or None; `put` replaces it
    and lists it in `changed_since`; `changed_since(t)` lists incidents
    whose last change is at or after t (for digests), oldest change first.
    """

    @abstractmethod
    def get(self, cluster: str, group: str) -> Incident | None: ...

    @abstractmethod
    def put(self, incident: Incident) -> None: ...

    @abstractmethod
    def changed_since(self, since: float) -> list[Incident]: ...

    @abstractmethod
    def open_incidents(self) -> list[Incident]: ...

    def get_many(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Incident]:
        found = {}
        for cluster, group in keys:
            incident = self.get(cluster, group)
            if incident is not None:
                found[(cluster, group)] = incident
        return found


class MemoryIncidentStore(IncidentStore):
    def __init__(self) -> None:
        self._current: dict[tuple[str, str], Incident] = {}
        self._by_id: dict[str, Incident] = {}

    def get(self, cluster: str, group: str) -> Incident | None:
        return self._current.get((cluster, group))

    def put(self, incident: Incident) -> None:
        self._current[(incident.cluster, incident.group)] = incident
        self._by_id[incident.id] = incident

    def changed_since(self, since: float) -> list[Incident]:
        return sorted((i for i in self._by_id.values() if i.updated_at >= since), key=lambda i: i.updated_at)

    def open_incidents(self) -> list[Incident]:
        return [i for i in self._current.values() if i.is_open]


# KEYS[1] = the index by last change, KEYS[2] = incidents by id; ARGV[1] = forget what changed before this.
# Server side, in the same transaction as the write: no extra round trip per incident.
_TRIM = """
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
for _, id in ipairs(old) do
    redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
end
return #old
"""


class RedisIncidentStore(IncidentStore):
    """Incidents in Redis: the current one per group, and an index of all by their last change."""

    def __init__(self, client: redis.Redis, *, keep: float = HISTORY_KEEP) -> None:
        self._redis = client
        self._keep = max(keep, HISTORY_KEEP)
        """Resolved incidents stay this long (as long as the history's rollups: the weekly report reads them)."""
        self._index = redis_keys.INCIDENTS_CHANGED
        self._by_id = redis_keys.INCIDENTS_BY_ID
        self._trim = client.register_script(_TRIM)

    @staticmethod
    def _key(cluster: str, group: str) -> str:
        return redis_keys.incident(cluster, group)

    def get(self, cluster: str, group: str) -> Incident | None:
        raw = self._redis.get(self._key(cluster, group))
        return None if raw is None else decode_incident(raw)

    def put(self, incident: Incident) -> None:
        raw = encode_incident(incident)
        pipe = self._redis.pipeline(transaction=True)
        # An open incident stays; a resolved one is forgotten after HISTORY_KEEP (groups come and go).
        pipe.set(self._key(incident.cluster, incident.group), raw, ex=None if incident.is_open else int(self._keep))
        pipe.hset(self._by_id, incident.id, raw)
        pipe.zadd(self._index, {incident.id: incident.updated_at})
        self._trim(keys=[self._index, self._by_id], args=[repr(incident.updated_at - self._keep)], client=pipe)
        pipe.execute()

    def changed_since(self, since: float) -> list[Incident]:
        ids = [text(i) for i in self._redis.zrangebyscore(self._index, since, "+inf")]
        if not ids:
            return []
        raws = self._redis.hmget(self._by_id, ids)
        return [decode_incident(raw) for raw in raws if raw is not None]

    def get_many(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Incident]:
        """Every group's incident in one MGET: a check reads them all, one round trip, not one per group."""
        wanted = list(keys)
        if not wanted:
            return {}
        raws = self._redis.mget([self._key(c, g) for c, g in wanted])
        return {key: decode_incident(raw) for key, raw in zip(wanted, raws, strict=True) if raw is not None}

    def open_incidents(self) -> list[Incident]:
        keys = list(self._redis.scan_iter(match=redis_keys.INCIDENTS_PATTERN, count=500))
        if not keys:
            return []
        found = [decode_incident(raw) for raw in self._redis.mget(keys) if raw is not None]
        return [i for i in found if i.is_open]
