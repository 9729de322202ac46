"""The window store: the last N observations of every watched group and of each of its partitions.

One interface, two implementations that pass the same contract tests (tests/unit/test_window_contract.py):
`MemoryWindowStore` for one-shot CLI use, `RedisWindowStore` for the bot (shared by replicas, survives
restarts).

Layout: one bounded list per group. Each entry is one cycle's observation of the group (state, member ids,
generation) with the samples of all its partitions, as versioned JSON. A partition's window is read out
of its group's entries, so appending a cycle costs one RPUSH+LTRIM+EXPIRE per group whatever the number
of partitions, and reading a group's window is one LRANGE. A partition that appears later (a new
partition) simply has fewer samples; one that is gone from the newest entry is gone from the window.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import redis

from bot.model import (
    ClusterSnapshot,
    GroupSample,
    GroupSnapshot,
    GroupState,
    GroupWindow,
    Member,
    PartitionSample,
    TopicPartition,
)

FORMAT_VERSION = 1


class StoredVersionError(Exception):
    """Stored state was written in a format version this code does not know; it is never guessed at."""


@dataclass(frozen=True, slots=True)
class _Entry:
    """One cycle's observation of one group, as stored."""

    at: float
    state: GroupState
    members: tuple[Member, ...]
    generation: int | None
    partitions: dict[TopicPartition, PartitionSample]


class WindowStore(ABC):
    """Keeps the last `samples` observations per group and partition.

    Contract:
    - `append` records one cycle of a cluster. A snapshot with `error` set, and a group with `error`
      set, record nothing (a failed read is not an observation). Per group, at most `samples` entries
      are kept, oldest dropped first. Appending snapshots out of order is the caller's mistake: entries
      are kept in append order.
    - `window` returns the group's window, oldest first, or None for a group never seen (or expired).
      Its `partitions` holds exactly the partitions of the newest entry.
    - A group not appended for `ttl` seconds (measured in snapshot time) expires.
    - Reading an entry written in an unknown format version raises StoredVersionError.
    """

    def __init__(self, *, samples: int, ttl: float) -> None:
        if samples < 1:
            raise ValueError("samples must be >= 1")
        self.samples = samples
        self.ttl = ttl

    @abstractmethod
    def append(self, snapshot: ClusterSnapshot) -> None:
        """Record one cycle of one cluster."""

    @abstractmethod
    def _entries(self, cluster: str, groups: list[str]) -> dict[str, list[_Entry]]:
        """The stored entries of each of `groups` (oldest first); absent groups are left out."""

    @abstractmethod
    def groups(self, cluster: str) -> list[str]:
        """The groups of `cluster` that have a window, sorted."""

    def window(self, cluster: str, group: str) -> GroupWindow | None:
        return self.windows(cluster, [group]).get(group)

    def windows(self, cluster: str, groups: Iterable[str]) -> dict[str, GroupWindow]:
        """Windows of many groups at once (one round trip for the Redis store)."""
        entries = self._entries(cluster, list(groups))
        return {group: _to_window(cluster, group, found) for group, found in entries.items() if found}


class MemoryWindowStore(WindowStore):
    """In-process store for one-shot use (`lagbot check`)."""

    def __init__(self, *, samples: int, ttl: float = 86_400.0) -> None:
        super().__init__(samples=samples, ttl=ttl)
        self._data: dict[tuple[str, str], deque[_Entry]] = {}

    def append(self, snapshot: ClusterSnapshot) -> None:
        if snapshot.error is not None:
            return
        for group in snapshot.groups.values():
            if group.error is None:
                key = (snapshot.cluster, group.group)
                self._data.setdefault(key, deque(maxlen=self.samples)).append(_entry(snapshot, group))
        self._expire(snapshot.cluster, snapshot.taken_at)

    def _expire(self, cluster: str, now: float) -> None:
        for key in [k for k, v in self._data.items() if k[0] == cluster and v[-1].at <= now - self.ttl]:
            del self._data[key]

    def _entries(self, cluster: str, groups: list[str]) -> dict[str, list[_Entry]]:
        return {g: list(self._data[(cluster, g)]) for g in groups if (cluster, g) in self._data}

    def groups(self, cluster: str) -> list[str]:
        return sorted(g for c, g in self._data if c == cluster)


class RedisWindowStore(WindowStore):
    """Redis store: a bounded list per group (RPUSH + LTRIM + EXPIRE), an index of groups per cluster.

    Each list has a sequence number, incremented in the same MULTI as every append. The store keeps a
    decoded copy of each list it has read or written, tagged with that number; a read fetches only the
    numbers (one pipelined GET each) and decodes a list again only when its number moved on without us,
    e.g. after another replica appended. Redis stays the source of truth.
    """

    def __init__(self, client: redis.Redis, *, samples: int, ttl: float = 86_400.0, prefix: str = "lagbot") -> None:
        super().__init__(samples=samples, ttl=ttl)
        self._redis = client
        self._prefix = prefix
        self._cache: dict[str, tuple[list[_Entry], int]] = {}

    def _list_key(self, cluster: str, group: str) -> str:
        return f"{self._prefix}:window:{cluster}:{group}"

    @staticmethod
    def _seq_key(list_key: str) -> str:
        return f"{list_key}:seq"

    def _index_key(self, cluster: str) -> str:
        return f"{self._prefix}:window-groups:{cluster}"

    def append(self, snapshot: ClusterSnapshot) -> None:
        if snapshot.error is not None:
            return
        ttl = max(1, int(self.ttl))
        index = self._index_key(snapshot.cluster)
        cutoff = snapshot.taken_at - self.ttl
        # Groups not appended for `ttl` seconds of snapshot time expire with their lists, not only from the
        # index: the lists' own Redis TTL runs on wall-clock time and would keep serving their windows.
        expired = {_text(name) for name in self._redis.zrangebyscore(index, "-inf", cutoff)}
        pipe = self._redis.pipeline(transaction=True)
        appended: list[tuple[str, _Entry]] = []
        for group in snapshot.groups.values():
            if group.error is not None:
                continue
            expired.discard(group.group)
            key = self._list_key(snapshot.cluster, group.group)
            entry = _entry(snapshot, group)
            pipe.rpush(key, encode_entry(entry))
            pipe.ltrim(key, -self.samples, -1)
            pipe.expire(key, ttl)
            pipe.incr(self._seq_key(key))
            pipe.expire(self._seq_key(key), ttl)
            pipe.zadd(index, {group.group: snapshot.taken_at})
            appended.append((key, entry))
        pipe.zremrangebyscore(index, "-inf", cutoff)
        for name in sorted(expired):
            key = self._list_key(snapshot.cluster, name)
            pipe.delete(key, self._seq_key(key))
            self._cache.pop(key, None)
        results = pipe.execute()
        for i, (key, entry) in enumerate(appended):
            self._remember(key, entry, int(results[6 * i + 3]))

    def _remember(self, key: str, entry: _Entry, seq: int) -> None:
        """Extend our decoded copy if our append directly followed it; otherwise forget it (reload on read)."""
        cached = self._cache.get(key)
        if cached is not None and cached[1] == seq - 1:
            self._cache[key] = ([*cached[0], entry][-self.samples :], seq)
        elif seq == 1:
            self._cache[key] = ([entry], seq)
        else:
            self._cache.pop(key, None)

    def _entries(self, cluster: str, groups: list[str]) -> dict[str, list[_Entry]]:
        keys = [self._list_key(cluster, group) for group in groups]
        pipe = self._redis.pipeline(transaction=False)
        for key in keys:
            pipe.get(self._seq_key(key))
        found: dict[str, list[_Entry]] = {}
        stale: list[tuple[str, str]] = []
        for group, key, seq in zip(groups, keys, pipe.execute(), strict=True):
            cached = self._cache.get(key)
            if cached is not None and seq is not None and cached[1] == int(seq):
                found[group] = cached[0]
            else:
                stale.append((group, key))
        found.update(self._load(stale))
        return found

    def _load(self, stale: list[tuple[str, str]]) -> dict[str, list[_Entry]]:
        """Read and decode whole lists with their sequence numbers (atomically) and remember them."""
        if not stale:
            return {}
        pipe = self._redis.pipeline(transaction=True)
        for _, key in stale:
            pipe.lrange(key, 0, -1)
            pipe.get(self._seq_key(key))
        answers = pipe.execute()
        loaded: dict[str, list[_Entry]] = {}
        for i, (group, key) in enumerate(stale):
            raw_list, seq = answers[2 * i], answers[2 * i + 1]
            self._cache.pop(key, None)
            if raw_list:
                loaded[group] = [decode_entry(raw) for raw in raw_list]
                if seq is not None:
                    self._cache[key] = (loaded[group], int(seq))
        return loaded

    def groups(self, cluster: str) -> list[str]:
        names = self._redis.zrange(self._index_key(cluster), 0, -1)
        return sorted(_text(n) for n in names)


def _text(name: object) -> str:
    return name.decode() if isinstance(name, bytes) else str(name)


# ---------------------------------------------------------------------------------------------------
# Entries and their JSON form
# ---------------------------------------------------------------------------------------------------


def _entry(snapshot: ClusterSnapshot, group: GroupSnapshot) -> _Entry:
    at = snapshot.taken_at
    partitions = {
        tp: PartitionSample(at, committed, snapshot.log_end[tp], snapshot.log_start.get(tp, 0))
        for tp, committed in group.committed.items()
        if tp in snapshot.log_end
    }
    return _Entry(
        at=snapshot.taken_at,
        state=group.state,
        members=group.members,
        generation=group.generation,
        partitions=partitions,
    )


def encode_entry(entry: _Entry) -> str:
    """Versioned JSON of one entry: members with their assignments, partitions grouped by topic."""
    topics: dict[str, list[list[int | None]]] = {}
    for (topic, partition), sample in sorted(entry.partitions.items()):
        topics.setdefault(topic, []).append([partition, sample.committed, sample.log_end, sample.log_start])
    document = {
        "v": FORMAT_VERSION,
        "at": entry.at,
        "state": entry.state.value,
        "generation": entry.generation,
        "members": [[m.member_id, m.client_id, m.host, [[t, p] for t, p in m.assignment]] for m in entry.members],
        "topics": topics,
    }
    return json.dumps(document, separators=(",", ":"))


def decode_entry(raw: bytes | str) -> _Entry:
    document: dict[str, Any] = json.loads(raw)
    version = document.get("v")
    if version != FORMAT_VERSION:
        raise StoredVersionError(f"window entry has format version {version!r}; this lagbot reads {FORMAT_VERSION}")
    members = tuple(
        Member(member_id=m[0], client_id=m[1], host=m[2], assignment=tuple((t, p) for t, p in m[3]))
        for m in document["members"]
    )
    at = document["at"]
    partitions = {
        (topic, row[0]): PartitionSample(at, row[1], row[2], row[3])
        for topic, rows in document["topics"].items()
        for row in rows
    }
    return _Entry(
        at=at,
        state=GroupState(document["state"]),
        members=members,
        generation=document["generation"],
        partitions=partitions,
    )


def _to_window(cluster: str, group: str, entries: list[_Entry]) -> GroupWindow:
    newest = entries[-1]
    series: dict[TopicPartition, list[PartitionSample]] = {tp: [] for tp in sorted(newest.partitions)}
    for entry in entries:  # one pass over the entries: this runs for every group every cycle
        for tp, sample in entry.partitions.items():
            found = series.get(tp)
            if found is not None:
                found.append(sample)
    partitions = {tp: tuple(samples) for tp, samples in series.items()}
    latest = GroupSnapshot(
        group=group,
        state=newest.state,
        members=newest.members,
        committed={tp: sample.committed for tp, sample in newest.partitions.items()},
        generation=newest.generation,
    )
    return GroupWindow(
        cluster=cluster,
        group=group,
        samples=tuple(
            GroupSample(e.at, e.state, tuple(sorted(m.member_id for m in e.members)), e.generation) for e in entries
        ),
        partitions=partitions,
        latest=latest,
    )
