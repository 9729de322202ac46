"""Incident storms: past a threshold of new incidents in one channel, one summary thread instead of one thread each.

One client can create hundreds of lagging groups in seconds; one thread each is minutes of Slack backlog (about one
post a second per channel) with real incidents queued behind it. So, per channel:

- Every new incident (a root that would be posted) is counted in a sliding window (`incidents.storm.window`). While
  the window holds `threshold` or fewer, it is posted as usual.
- The one that makes it more than `threshold` starts a storm: it, and every new incident of that channel while the
  storm is on, is *folded*: tracked in Redis exactly as any incident (opened, updated, resolved), but with no thread of
  its own. One summary root is posted for the storm, and edited at most once per `update_every` while anything in it
  changed: how many incidents, how many still open, the worst groups first, how to narrow the watch.
- The storm ends once a window holds `threshold` or fewer new incidents: the summary says so at once.
- A folded incident stays in the summary for its whole life (also after the storm ended, also when it reopens): it
  never gets a thread of its own, so the end of a storm of 300 still-lagging groups does not post 300 roots. The
  summary is kept current until every folded incident has resolved, and says so last.

The decisions are pure functions (`now` passed in); a `Storms` keeps the state (its contract: the class's doc):
`RedisStorms` in Redis (lagbot.core.keys, the versioned codec), `MemoryStorms` in this process. It is used by the
leader only (lagbot.service.bot), which queues the summary through the outbox under the
storm's id, so it is posted once across replicas.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum

import redis

from lagbot.core import codec
from lagbot.core import keys as redis_keys
from lagbot.core.config import StormConfig
from lagbot.core.model import Severity
from lagbot.core.stored import StoredFormatError, text
from lagbot.service.incidents import Incident

log = logging.getLogger(__name__)

STORM_VERSION = 1
KEEP = 8 * 86_400
"""A storm's state is kept this long after its last change (as long as a resolved incident is listed)."""


@dataclass(frozen=True)
class ChannelOpens:
    """A channel's newest incident openings (at most threshold + 1 within the window) and its storm, if one is on."""

    recent: tuple[float, ...] = ()
    storm_id: str | None = None


@dataclass(frozen=True)
class Storm:
    """One storm of one channel; its summary thread is the outbox's, under `id`."""

    id: str
    channel: str
    started_at: float
    folded: int = 0
    ended_at: float | None = None
    posted: bool = False
    """Its summary root is queued."""
    shown_at: float = 0.0
    """When its summary was last queued (posted or edited)."""
    dirty: bool = False
    """Something in it changed since its summary was last queued."""

    @property
    def is_on(self) -> bool:
        return self.ended_at is None


@dataclass(frozen=True)
class Member:
    """What a storm's summary shows of one folded incident."""

    cluster: str
    group: str
    severity: str
    peak_lag: int | None
    open: bool

    @classmethod
    def of(cls, incident: Incident) -> Member:
        return cls(incident.cluster, incident.group, incident.severity.label, incident.peak_lag, incident.is_open)


@dataclass(frozen=True)
class Admission:
    """What a new incident of a channel does: posted as usual (`fold_into` None) or folded into a storm."""

    channel: ChannelOpens
    storm: Storm | None
    """The storm it is folded into, as it is now (a new one when this incident starts it)."""

    @property
    def fold_into(self) -> str | None:
        return None if self.storm is None else self.storm.id


class Show(StrEnum):
    """What a storm's summary needs now."""

    POST = "post"
    UPDATE = "update"


@dataclass(frozen=True)
class StormSummary:
    """Everything the summary message shows (rendered by lagbot.slack.presenter)."""

    storm: Storm
    members: tuple[Member, ...]
    """Every folded incident, worst first."""
    threshold: int
    window: float
    worst: int
    """How many groups to name."""
    now: float

    @property
    def still_open(self) -> int:
        return sum(1 for m in self.members if m.open)

    @property
    def clusters(self) -> tuple[str, ...]:
        return tuple(sorted({m.cluster for m in self.members}))

    @property
    def shared_prefix(self) -> str:
        return shared_prefix(m.group for m in self.members)


# -- the pure decisions ---------------------------------------------------------------------------------------------


def recent_opens(opens: Iterable[float], *, now: float, config: StormConfig) -> tuple[float, ...]:
    """The openings within the window before `now`, the newest threshold + 1 of them (all a decision needs)."""
    within = sorted(t for t in opens if now - t < config.window)
    return tuple(within[-(config.threshold + 1) :])


def is_stormy(opens: Iterable[float], *, now: float, config: StormConfig) -> bool:
    """More than `threshold` new incidents within the window before `now`."""
    return len(recent_opens(opens, now=now, config=config)) > config.threshold


def admit(
    opens: ChannelOpens,
    storm: Storm | None,
    *,
    channel: str,
    now: float,
    config: StormConfig,
    new_id: Callable[[], str],
) -> Admission:
    """One new incident in `channel` at `now`: posted as usual, or folded into its storm (`storm`: the channel's
    storm, None when none is on). Pure."""
    recent = recent_opens((*opens.recent, now), now=now, config=config)
    if len(recent) <= config.threshold:  # (a storm still on is over: `next_show` says so)
        return Admission(ChannelOpens(recent, None), None)
    if storm is not None and storm.is_on:
        folded = replace(storm, folded=storm.folded + 1, dirty=True)
        return Admission(ChannelOpens(recent, storm.id), folded)
    started = Storm(id=new_id(), channel=channel, started_at=now, folded=1, dirty=True)
    return Admission(ChannelOpens(recent, started.id), started)


def member_changed(before: Incident | None, after: Incident) -> bool:
    """Whether what the summary shows of a folded incident changed (a new incident always counts)."""
    return before is None or before.id != after.id or Member.of(before) != Member.of(after)


def next_show(storm: Storm, opens: ChannelOpens, *, now: float, config: StormConfig) -> tuple[Storm, Show | None]:
    """What the storm's summary needs at `now`, and the storm after it. Pure.

    Posted once; ended (and said at once) when its channel's window no longer holds more than `threshold` new
    incidents; otherwise edited when something changed and the last edit is `update_every` old.
    """
    if not storm.posted:
        return replace(storm, posted=True, shown_at=now, dirty=False), Show.POST
    on_here = opens.storm_id == storm.id and is_stormy(opens.recent, now=now, config=config)
    if storm.is_on and not on_here:
        return replace(storm, ended_at=now, shown_at=now, dirty=False), Show.UPDATE
    if storm.dirty and now - storm.shown_at >= config.update_every:
        return replace(storm, shown_at=now, dirty=False), Show.UPDATE
    return storm, None


def ended_in(opens: ChannelOpens, storm: Storm) -> ChannelOpens:
    """The channel once `storm` ended: no storm on (the openings still count towards the next one)."""
    return replace(opens, storm_id=None) if opens.storm_id == storm.id else opens


def finished(storm: Storm, members: Iterable[Member]) -> bool:
    """Nothing in the storm can change its summary any more: ended, shown as it is, every incident resolved.

    (A folded incident that reopens later marks it live again: lagbot.service.storms.Storms.fold.)
    """
    return not storm.is_on and not storm.dirty and not any(m.open for m in members)


def worst_first(members: Iterable[Member]) -> tuple[Member, ...]:
    """Open before resolved, then higher severity, then more lag, then by name."""
    return tuple(sorted(members, key=_badness))


def _badness(m: Member) -> tuple[bool, int, int, str, str]:
    return (not m.open, -Severity[m.severity.upper()], -(m.peak_lag or 0), m.cluster, m.group)


def shared_prefix(groups: Iterable[str]) -> str:
    """The longest start every group's name shares ('' when they share nothing, or there is one group)."""
    names = sorted(groups)
    if len(names) < 2:
        return ""
    first, last = names[0], names[-1]  # what the first and last in order share, every name between shares
    shared = 0
    while shared < min(len(first), len(last)) and first[shared] == last[shared]:
        shared += 1
    return first[:shared]


# -- storage -----------------------------------------------------------------------------------------------------


OPENS_CODEC = codec.register(codec.Codec("channel storm state", ChannelOpens, STORM_VERSION))
STORM_CODEC = codec.register(codec.Codec("storm", Storm, STORM_VERSION))
MEMBER_CODEC = codec.register(codec.Codec("storm member", Member, STORM_VERSION))


def _encode(document: ChannelOpens | Storm | Member) -> str:
    if isinstance(document, ChannelOpens):
        return OPENS_CODEC.encode(document)
    if isinstance(document, Storm):
        return STORM_CODEC.encode(document)
    return MEMBER_CODEC.encode(document)


def decode_opens(raw: str | bytes | None) -> ChannelOpens:
    return ChannelOpens() if raw is None else OPENS_CODEC.decode(raw)


def decode_storm(raw: str | bytes) -> Storm:
    return STORM_CODEC.decode(raw)


def decode_member(raw: str | bytes) -> Member:
    return MEMBER_CODEC.decode(raw)


@dataclass
class StormWrites:
    """What one step of the storms changes, written at once (`Storms._commit`)."""

    opens: dict[str, ChannelOpens] = field(default_factory=dict)
    """channel -> its openings now."""
    storms: list[Storm] = field(default_factory=list)
    """Storms as they are now (each live until dropped)."""
    members: list[tuple[str, str, Member]] = field(default_factory=list)
    """(storm id, incident id, what the summary shows of it)."""
    dropped: list[str] = field(default_factory=list)
    """Storms no longer live (finished, or expired)."""


def _new_storm_id() -> str:
    return f"storm-{uuid.uuid4().hex[:12]}"


class Storms(ABC):
    """The storms of every channel; the leader's (one thread at a time: checks of several clusters may route to one
    channel).

    Contract (the decisions are this class's, the keeping its subclasses'):
    - `admit(channel, now=)` counts a new incident of `channel` and returns the id of the storm it is folded into
      (None: posted as usual), as the pure `admit` decides; the channel's openings and the storm are written together.
    - `fold(before, incident)` records what the summary shows of a folded incident and marks its storm changed.
    - `due(emit, now=)` emits each live storm's summary that needs posting or editing now (`next_show`), and moves
      the storm's state on only after its summary was emitted; a finished storm is no longer `live()`.
    - Everything is kept `KEEP` seconds after its last change; an expired or unreadable storm is dropped from
      `live()` without a summary.
    - `_commit` writes one step's changes all or nothing.
    """

    def __init__(self, config: StormConfig, *, new_id: Callable[[], str] = _new_storm_id) -> None:
        self.config = config
        self._new_id = new_id
        self._lock = threading.Lock()

    @abstractmethod
    def opens(self, channel: str) -> ChannelOpens:
        """The channel's openings (empty when none are kept)."""

    @abstractmethod
    def get(self, storm_id: str) -> Storm | None:
        """The storm, None when none is kept. Raises StoredFormatError for one lagbot did not write."""

    @abstractmethod
    def members(self, storm_id: str) -> list[Member]:
        """What the storm's summary shows of each of its folded incidents."""

    @abstractmethod
    def live(self) -> list[str]:
        """The ids of the storms not finished, in order."""

    @abstractmethod
    def _commit(self, writes: StormWrites) -> None:
        """Write `writes` all or nothing."""

    def admit(self, channel: str, *, now: float) -> str | None:
        """A new incident in `channel`: the id of the storm it is folded into, None when it is posted as usual."""
        with self._lock:
            opens = self.opens(channel)
            current = self.get(opens.storm_id) if opens.storm_id is not None else None
            admission = admit(opens, current, channel=channel, now=now, config=self.config, new_id=self._new_id)
            storms = [] if admission.storm is None else [admission.storm]
            self._commit(StormWrites(opens={channel: admission.channel}, storms=storms))
            return admission.fold_into

    def fold(self, before: Incident | None, incident: Incident) -> None:
        """Record a folded incident as it is now; its storm's summary is due for an edit when what it shows changed."""
        assert incident.storm is not None
        if not member_changed(before, incident):
            return
        with self._lock:
            storm = self.get(incident.storm)
            writes = StormWrites(members=[(incident.storm, incident.id, Member.of(incident))])
            if storm is not None:
                writes.storms.append(replace(storm, dirty=True))
            self._commit(writes)

    def due(self, emit: Callable[[Show, StormSummary], None], *, now: float) -> int:
        """`emit` every live storm's summary that needs posting or editing now; returns how many.

        Each storm's state moves on after its summary was emitted (queued in the outbox), never before: a crash in
        between shows the summary again rather than never.
        """
        shown = 0
        with self._lock:
            for storm_id in self.live():
                try:
                    storm = self.get(storm_id)
                    opens = None if storm is None else self.opens(storm.channel)
                except StoredFormatError:  # unreadable: dropped, as an expired one
                    log.warning("unreadable storm dropped", extra={"storm": storm_id}, exc_info=True)
                    storm = opens = None
                if storm is None or opens is None:  # expired: nothing left to show
                    self._commit(StormWrites(dropped=[storm_id]))
                    continue
                after, show = next_show(storm, opens, now=now, config=self.config)
                if show is None and (after.is_on or after.dirty):
                    continue  # nothing to show, nothing that could finish it: its members are not read
                members = worst_first(self.members(storm_id))
                writes = StormWrites()
                if after.ended_at is not None and storm.ended_at is None:
                    writes.opens[storm.channel] = ended_in(opens, after)
                if after != storm:
                    writes.storms.append(after)
                if finished(after, members):
                    writes.dropped.append(storm_id)
                if show is not None:
                    emit(show, self.summary(after, members, now=now))
                    shown += 1
                self._commit(writes)
        return shown

    def summary(self, storm: Storm, members: Iterable[Member], *, now: float) -> StormSummary:
        return StormSummary(storm, worst_first(members), self.config.threshold, self.config.window,
                            self.config.worst, now)  # fmt: skip


class RedisStorms(Storms):
    """The storms in Redis (lagbot.core.keys), each step's writes in one transaction."""

    def __init__(self, client: redis.Redis, config: StormConfig, *, new_id: Callable[[], str] = _new_storm_id) -> None:
        super().__init__(config, new_id=new_id)
        self._redis = client

    def opens(self, channel: str) -> ChannelOpens:
        return decode_opens(self._redis.get(redis_keys.storm_channel(channel)))

    def get(self, storm_id: str) -> Storm | None:
        raw = self._redis.get(redis_keys.storm(storm_id))
        return None if raw is None else decode_storm(raw)

    def members(self, storm_id: str) -> list[Member]:
        return [decode_member(raw) for raw in self._redis.hvals(redis_keys.storm_members(storm_id))]

    def live(self) -> list[str]:
        return sorted(text(i) for i in self._redis.smembers(redis_keys.STORMS))

    def _commit(self, writes: StormWrites) -> None:
        pipe = self._redis.pipeline(transaction=True)
        for channel, opens in writes.opens.items():
            pipe.set(redis_keys.storm_channel(channel), _encode(opens), ex=KEEP)
        for storm in writes.storms:
            pipe.set(redis_keys.storm(storm.id), _encode(storm), ex=KEEP)
            pipe.sadd(redis_keys.STORMS, storm.id)
        for storm_id, incident_id, member in writes.members:
            pipe.hset(redis_keys.storm_members(storm_id), incident_id, _encode(member))
            pipe.expire(redis_keys.storm_members(storm_id), KEEP)
        for storm_id in writes.dropped:
            pipe.srem(redis_keys.STORMS, storm_id)
        pipe.execute()


class MemoryStorms(Storms):
    """The storms in this process, each kept as its stored document (as Redis keeps it) for `KEEP` s on `clock`."""

    def __init__(
        self,
        config: StormConfig,
        *,
        new_id: Callable[[], str] = _new_storm_id,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(config, new_id=new_id)
        self._clock = clock
        self._opens: dict[str, tuple[float, str]] = {}
        self._storms: dict[str, tuple[float, str]] = {}
        self._members: dict[str, tuple[float, dict[str, str]]] = {}
        self._live: set[str] = set()

    def _fresh(self, until: float) -> bool:
        return self._clock() < until

    def opens(self, channel: str) -> ChannelOpens:
        until, raw = self._opens.get(channel, (0.0, ""))
        return decode_opens(raw if self._fresh(until) else None)

    def get(self, storm_id: str) -> Storm | None:
        until, raw = self._storms.get(storm_id, (0.0, ""))
        return decode_storm(raw) if self._fresh(until) else None

    def members(self, storm_id: str) -> list[Member]:
        until, kept = self._members.get(storm_id, (0.0, {}))
        return [decode_member(raw) for raw in kept.values()] if self._fresh(until) else []

    def live(self) -> list[str]:
        return sorted(self._live)

    def _commit(self, writes: StormWrites) -> None:
        until = self._clock() + KEEP
        encoded = (
            {channel: _encode(opens) for channel, opens in writes.opens.items()},
            {storm.id: _encode(storm) for storm in writes.storms},
            [(storm_id, incident_id, _encode(member)) for storm_id, incident_id, member in writes.members],
        )  # everything encoded first: a failure writes nothing
        for channel, raw in encoded[0].items():
            self._opens[channel] = (until, raw)
        for storm_id, raw in encoded[1].items():
            self._storms[storm_id] = (until, raw)
            self._live.add(storm_id)
        for storm_id, incident_id, raw in encoded[2]:
            kept_until, kept = self._members.get(storm_id, (0.0, {}))
            kept = kept if self._fresh(kept_until) else {}
            self._members[storm_id] = (until, {**kept, incident_id: raw})
        self._live.difference_update(writes.dropped)
