"""The window store: the last N observations of every watched group and of each of its partitions.

One interface, two implementations that pass the same contract tests (tests/engine/test_window_contract.py):
`MemoryWindowStore` for one-shot CLI use, `RedisWindowStore` for the bot (shared by replicas, survives
restarts).

Layout: one bounded list per group. Each entry is one cycle's observation of the group (state, member ids,
generation) with the samples of all its partitions, as versioned JSON. A partition's window is read out
of its group's entries, so appending a cycle costs one RPUSH+LTRIM+EXPIRE per group whatever the number
of partitions, and reading a group's window is one LRANGE. A partition that appears later (a new
partition) simply has fewer samples; one that is gone from the newest entry is gone from the window.
"""

from __future__ import annotations

import itertools
import logging
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is loaded by the first entry with arrays; the Redis client is given to the store
    import numpy as np
    import redis
    from numpy.typing import NDArray

from lagbot.core import keys as redis_keys
from lagbot.core.model import (
    ClusterSnapshot,
    ColumnSamples,
    ColumnWindow,
    GroupSample,
    GroupSnapshot,
    GroupState,
    GroupWindow,
    Member,
    PartitionSample,
    TopicPartition,
    WindowColumns,
)
from lagbot.core.stored import decode, encode

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
_EXACT_LIMIT = 2**48
"""Offsets at or above this (or negative) keep a window off the array route, whose int64 sums of up to
2**14 partitions' lags must be exact (Python's ints never overflow)."""


@dataclass(frozen=True, slots=True)
class _Entry:
    """One cycle's observation of one group, as stored, with what reading a window needs ready-made.

    `tps` (the sorted partitions), the partitions' offsets (`columns`, or `samples` where there are no arrays)
    and `group_sample` are derived from the others when the entry is made (`_new_entry`), once, rather than at
    every read of the window. An entry with arrays keeps no PartitionSample objects: a bot holds 30 entries of
    every group, and one object per partition and entry (with its own `lag` int) was most of the windows'
    memory, and millions of objects for the cyclic garbage collector to walk (bench/README.md, `scale.py`).
    A window's samples are built from the arrays when they are read (`ColumnSamples`).
    """

    at: float
    state: GroupState
    members: tuple[Member, ...]
    generation: int | None
    tps: tuple[TopicPartition, ...]
    samples: tuple[PartitionSample, ...] | None
    """The samples in `tps` order; None when `columns` holds them."""
    group_sample: GroupSample
    columns: NDArray[np.int64] | None
    """Rows committed (-1 where None), log_end, log_start, one column per partition of `tps`; None when an offset
    is negative or too big for exact int64 arithmetic (or `arrays=False`), and then `samples` holds them."""


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
    - Reading an entry written in an unknown format version raises StoredFormatError.
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

    def private_copy(self, cluster: str, groups: Iterable[str]) -> MemoryWindowStore:
        """An in-memory store holding a copy of these groups' windows: a one-off sample appended to it
        (a `/lag <group>` check) judges against the shared history without ever writing to it."""
        copy = MemoryWindowStore(samples=self.samples, ttl=self.ttl)
        for group, entries in self._entries(cluster, list(groups)).items():
            copy._data[(cluster, group)] = deque(entries, maxlen=self.samples)
        return copy


class MemoryWindowStore(WindowStore):
    """In-process store for one-shot use (`lagbot check`).

    `arrays=False` keeps no offset arrays (`_Entry.columns` None): windows are then judged sample by sample,
    to the same verdicts, and numpy is never imported. `lagbot check` takes a few samples once, for which
    importing numpy costs more than the array route saves.
    """

    def __init__(self, *, samples: int, ttl: float = 86_400.0, arrays: bool = True) -> None:
        super().__init__(samples=samples, ttl=ttl)
        self.arrays = arrays
        self._data: dict[tuple[str, str], deque[_Entry]] = {}

    def append(self, snapshot: ClusterSnapshot) -> None:
        if snapshot.error is not None:
            return
        for group in snapshot.groups.values():
            if group.error is None:
                entries = self._data.setdefault((snapshot.cluster, group.group), deque(maxlen=self.samples))
                entries.append(_entry(snapshot, group, like=entries[-1] if entries else None, arrays=self.arrays))
        self._expire(snapshot.cluster, snapshot.taken_at)

    def _expire(self, cluster: str, now: float) -> None:
        for key in [k for k, v in self._data.items() if k[0] == cluster and v[-1].at <= now - self.ttl]:
            del self._data[key]

    def _entries(self, cluster: str, groups: list[str]) -> dict[str, list[_Entry]]:
        return {g: list(self._data[(cluster, g)]) for g in groups if (cluster, g) in self._data}

    def groups(self, cluster: str) -> list[str]:
        return sorted(g for c, g in self._data if c == cluster)


_APPEND_SCRIPT = """
-- One cycle's appends, one call instead of six commands per group. KEYS: the cluster's index, then the list
-- and the sequence key of each group. ARGV: samples kept, ttl, the snapshot time, then each group's name and
-- entry. Per group, the commands every lagbot appends with: RPUSH, LTRIM, EXPIRE, INCR of the sequence
-- number, EXPIRE, ZADD to the index. A key of the wrong type in the place of a list or a sequence number (left
-- by an older lagbot, whose keys a group name could collide with) is replaced rather than failing the whole
-- cycle: keys under lagbot's prefix are lagbot's own. Returns the new sequence numbers, in the groups' order,
-- and the names of the groups whose keys were replaced.
local samples, ttl, at = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local seqs, replaced = {}, {}
for i = 2, #KEYS, 2 do
  local list, seq, g = KEYS[i], KEYS[i + 1], i + 2
  local list_type, seq_type = redis.call('TYPE', list).ok, redis.call('TYPE', seq).ok
  local number = seq_type == 'string' and tonumber(redis.call('GET', seq)) or nil
  if (list_type ~= 'none' and list_type ~= 'list') or (seq_type ~= 'none' and number == nil) then
    redis.call('DEL', list, seq)
    replaced[#replaced + 1] = ARGV[g]
  end
  redis.call('RPUSH', list, ARGV[g + 1])
  redis.call('LTRIM', list, -samples, -1)
  redis.call('EXPIRE', list, ttl)
  seqs[#seqs + 1] = redis.call('INCR', seq)
  redis.call('EXPIRE', seq, ttl)
  redis.call('ZADD', KEYS[1], at, ARGV[g])
end
return {seqs, replaced}
"""


class RedisWindowStore(WindowStore):
    """Redis store: a bounded list per group (RPUSH + LTRIM + EXPIRE), an index of groups per cluster.

    Each list has a sequence number, incremented in the same MULTI as every append (a cycle's appends are
    one Lua script, `_APPEND_SCRIPT`: the same commands, one round trip and one command to pack). The store keeps a
    decoded copy of each list it has read or written, tagged with that number; a read fetches only the
    numbers (one MGET) and decodes a list again only when its number moved on without us,
    e.g. after another replica appended. Redis stays the source of truth.
    """

    def __init__(self, client: redis.Redis, *, samples: int, ttl: float = 86_400.0) -> None:
        super().__init__(samples=samples, ttl=ttl)
        self._redis = client
        self._cache: dict[str, tuple[list[_Entry], int]] = {}
        self._append_script = client.register_script(_APPEND_SCRIPT)

    @staticmethod
    def _list_key(cluster: str, group: str) -> str:
        return redis_keys.window(cluster, group)

    @staticmethod
    def _seq_key(list_key: str) -> str:
        return redis_keys.window_seq_of(list_key)

    @staticmethod
    def _index_key(cluster: str) -> str:
        return redis_keys.window_groups(cluster)

    def append(self, snapshot: ClusterSnapshot) -> None:
        if snapshot.error is not None:
            return
        ttl = max(1, int(self.ttl))
        index = self._index_key(snapshot.cluster)
        cutoff = snapshot.taken_at - self.ttl
        # Groups not appended for `ttl` seconds of snapshot time expire with their lists, not only from the
        # index: the lists' own Redis TTL runs on wall-clock time and would keep serving their windows.
        expired = {_text(name) for name in self._redis.zrangebyscore(index, "-inf", cutoff)}
        appended: list[tuple[str, _Entry]] = []
        keys, args = [index], [str(self.samples), str(ttl), repr(snapshot.taken_at)]
        for group in snapshot.groups.values():
            if group.error is not None:
                continue
            expired.discard(group.group)
            key = self._list_key(snapshot.cluster, group.group)
            cached = self._cache.get(key)
            entry = _entry(snapshot, group, like=cached[0][-1] if cached else None)
            keys += (key, self._seq_key(key))
            args += (group.group, encode_entry(entry))
            appended.append((key, entry))
        pipe = self._redis.pipeline(transaction=True)
        if appended:
            self._append_script(keys=keys, args=args, client=pipe)
        pipe.zremrangebyscore(index, "-inf", cutoff)
        for name in sorted(expired):
            key = self._list_key(snapshot.cluster, name)
            pipe.delete(key, self._seq_key(key))
            self._cache.pop(key, None)
        results = pipe.execute()
        seqs, replaced = results[0] if appended else ([], [])
        if replaced:
            log.warning(
                "window keys of another type replaced",
                extra={"cluster": snapshot.cluster, "groups": [_text(name) for name in replaced]},
            )
        for (key, entry), seq in zip(appended, seqs, strict=True):
            self._remember(key, entry, int(seq))

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
        seqs = self._redis.mget([self._seq_key(key) for key in keys]) if keys else []
        found: dict[str, list[_Entry]] = {}
        stale: list[tuple[str, str]] = []
        for group, key, seq in zip(groups, keys, seqs, strict=True):
            cached = self._cache.get(key)
            if cached is not None and seq is not None and _is_count(seq) and cached[1] == int(seq):
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
        answers = pipe.execute(raise_on_error=False)
        loaded: dict[str, list[_Entry]] = {}
        for i, (group, key) in enumerate(stale):
            raw_list, seq = answers[2 * i], answers[2 * i + 1]
            self._cache.pop(key, None)
            if isinstance(raw_list, Exception) or isinstance(seq, Exception) or not _is_count(seq):
                # a key of another type (an older lagbot's): this group has no window until its next append
                # replaces it; every other group is read as usual
                log.warning("window unreadable", extra={"key": key})
                continue
            if raw_list:
                entries: list[_Entry] = []
                for raw in raw_list:
                    entries.append(decode_entry(raw, like=entries[-1] if entries else None))
                loaded[group] = entries
                if seq is not None:
                    self._cache[key] = (loaded[group], int(seq))
        return loaded

    def groups(self, cluster: str) -> list[str]:
        names = self._redis.zrange(self._index_key(cluster), 0, -1)
        return sorted(_text(n) for n in names)


def _is_count(value: object) -> bool:
    """A sequence number as Redis returns it (bytes of digits), or none yet."""
    return value is None or (isinstance(value, bytes | str) and _text(value).isdigit())


def _text(name: object) -> str:
    return name.decode() if isinstance(name, bytes) else str(name)


# ---------------------------------------------------------------------------------------------------
# Entries and their JSON form
# ---------------------------------------------------------------------------------------------------


def _entry(
    snapshot: ClusterSnapshot, group: GroupSnapshot, *, like: _Entry | None = None, arrays: bool = True
) -> _Entry:
    at = snapshot.taken_at
    if arrays:  # the usual case: the arrays straight from the snapshot's offsets, no sample made
        log_end, log_start = snapshot.log_end, snapshot.log_start
        tps = _like(tuple(sorted(tp for tp in group.committed if tp in log_end)), like)
        committed = [group.committed[tp] for tp in tps]
        columns = _offset_columns(committed, [log_end[tp] for tp in tps], [log_start.get(tp, 0) for tp in tps])
        if columns is not None:
            return _made_entry(at, group.state, group.members, group.generation, tps, None, columns)
    partitions = {
        tp: PartitionSample(at, committed, snapshot.log_end[tp], snapshot.log_start.get(tp, 0))
        for tp, committed in group.committed.items()
        if tp in snapshot.log_end
    }
    return _new_entry(at, group.state, group.members, group.generation, partitions, like=like, arrays=False)


def _new_entry(
    at: float,
    state: GroupState,
    members: tuple[Member, ...],
    generation: int | None,
    partitions: dict[TopicPartition, PartitionSample],
    *,
    like: _Entry | None,
    arrays: bool = True,
) -> _Entry:
    """An entry with its derived parts. `like` is the group's previous entry (see `_like`)."""
    tps = _like(tuple(sorted(partitions)), like)
    samples = tuple([partitions[tp] for tp in tps])
    columns = _entry_columns(at, samples) if arrays else None
    return _made_entry(at, state, members, generation, tps, samples if columns is None else None, columns)


def _like(tps: tuple[TopicPartition, ...], like: _Entry | None) -> tuple[TopicPartition, ...]:
    """`tps`, or the previous entry's `like` equal tuple: entries with the same partitions share one `tps` tuple, so
    that a window sees at a glance (`is`) that its entries line up."""
    return like.tps if like is not None and like.tps == tps else tps


def _made_entry(
    at: float,
    state: GroupState,
    members: tuple[Member, ...],
    generation: int | None,
    tps: tuple[TopicPartition, ...],
    samples: tuple[PartitionSample, ...] | None,
    columns: NDArray[np.int64] | None,
) -> _Entry:
    group_sample = GroupSample(at, state, tuple(sorted(m.member_id for m in members)), generation)
    return _Entry(at, state, members, generation, tps, samples, group_sample, columns)


def _entry_columns(at: float, samples: tuple[PartitionSample, ...]) -> NDArray[np.int64] | None:
    """The entry's offsets as a 3 x partitions array (see `_Entry.columns`), or None unless `_offset_columns` takes
    them and every sample is at the entry's time."""
    if not samples or any(s.at != at for s in samples):
        return None
    return _offset_columns([s.committed for s in samples], [s.log_end for s in samples], [s.log_start for s in samples])


def _offset_columns(committed: list[int | None], log_end: list[int], log_start: list[int]) -> NDArray[np.int64] | None:
    """Rows committed (-1 where None), log end and log start as an int64 array, or None unless there are some and
    they are all integers (committed and log end from 0 to below _EXACT_LIMIT): numpy infers int64 only for ints; a
    float, an int too big for int64 or anything else gives another dtype."""
    import numpy as np

    if not committed:
        return None
    try:
        if any(c < 0 for c in committed if c is not None):  # -1 stands for None in the array
            return None
        columns = np.array([[-1 if c is None else c for c in committed], log_end, log_start])
    except (OverflowError, TypeError, ValueError):
        return None
    if columns.dtype != np.int64 or columns[1].min() < 0 or columns[:2].max() >= _EXACT_LIMIT:
        return None
    return columns


def _entry_rows(entry: _Entry) -> list[tuple[TopicPartition, int | None, int, int]]:
    """(partition, committed or None, log end, log start) of each partition of the entry, in `tps` order."""
    if entry.columns is None:
        assert entry.samples is not None
        return [(tp, s.committed, s.log_end, s.log_start) for tp, s in zip(entry.tps, entry.samples, strict=True)]
    committed, log_end, log_start = entry.columns.tolist()
    return [
        (tp, None if c < 0 else c, e, s) for tp, c, e, s in zip(entry.tps, committed, log_end, log_start, strict=True)
    ]


def _entry_committed(entry: _Entry) -> dict[TopicPartition, int | None]:
    """The committed offset (or None) of each partition of the entry, in `tps` order (`_entry_rows`'s second)."""
    if entry.columns is None:
        return {tp: committed for tp, committed, _, _ in _entry_rows(entry)}
    return dict(zip(entry.tps, [None if c < 0 else c for c in entry.columns[0].tolist()], strict=True))


def _entry_samples(entry: _Entry) -> tuple[PartitionSample, ...]:
    """The entry's samples in `tps` order: kept, or built from its arrays (see `_Entry`)."""
    if entry.samples is not None:
        return entry.samples
    at = entry.at
    return tuple([PartitionSample(at, c, e, s) for _, c, e, s in _entry_rows(entry)])


def encode_entry(entry: _Entry) -> str:
    """Versioned JSON of one entry: members with their assignments, partitions grouped by topic."""
    topics: dict[str, list[list[int | None]]] = {}
    for (topic, partition), committed, log_end, log_start in _entry_rows(entry):  # tps are sorted
        topics.setdefault(topic, []).append([partition, committed, log_end, log_start])
    document = {
        "at": entry.at,
        "state": entry.state.value,
        "generation": entry.generation,
        "members": [[m.member_id, m.client_id, m.host, [[t, p] for t, p in m.assignment]] for m in entry.members],
        "topics": topics,
    }
    return encode(FORMAT_VERSION, document, sort_keys=False)


def decode_entry(raw: bytes | str, *, like: _Entry | None = None) -> _Entry:
    document = decode("window entry", FORMAT_VERSION, raw)
    members = tuple(
        Member(member_id=m[0], client_id=m[1], host=m[2], assignment=tuple((t, p) for t, p in m[3]))
        for m in document["members"]
    )
    at, state, generation = document["at"], GroupState(document["state"]), document["generation"]
    made = _decoded_with_arrays(at, state, members, generation, document["topics"], like)
    if made is not None:
        return made
    partitions = {
        (topic, row[0]): PartitionSample(at, row[1], row[2], row[3])
        for topic, rows in document["topics"].items()
        for row in rows
    }
    return _new_entry(at, state, members, generation, partitions, like=like)


def _decoded_with_arrays(
    at: float,
    state: GroupState,
    members: tuple[Member, ...],
    generation: int | None,
    topics: dict[str, list[list[int | None]]],
    like: _Entry | None,
) -> _Entry | None:
    """The entry of a decoded document's `topics` ([partition, committed, log end, log start] rows per topic) with its
    arrays made straight from them, as `_entry` makes a snapshot's: no sample per partition (a replica that reads a
    window cold decodes 30 entries of every group). None when the rows are not in partition order without repeats
    (as `encode_entry` writes them) or the arrays cannot hold them (`_offset_columns`): the entry is then made of
    samples, as before."""
    tps: list[TopicPartition] = []
    committed: list[int | None] = []
    log_end: list[int] = []
    log_start: list[int] = []
    for topic, rows in topics.items():
        if rows:
            partitions, commits, ends, starts = zip(*rows, strict=True)
            tps += zip(itertools.repeat(topic), partitions)
            committed += commits
            log_end += ends
            log_start += starts
    found = tuple(tps)
    if like is not None and found == like.tps:
        found = like.tps  # the previous entry's, already found in order
    elif tps != sorted(set(tps)):
        return None
    columns = _offset_columns(committed, log_end, log_start)
    if columns is None:
        return None
    return _made_entry(at, state, members, generation, found, None, columns)


def _to_window(cluster: str, group: str, entries: list[_Entry]) -> GroupWindow:
    newest = entries[-1]
    latest = GroupSnapshot(
        group=group,
        state=newest.state,
        members=newest.members,
        committed=_entry_committed(newest),
        generation=newest.generation,
    )
    tps = newest.tps
    columns = None
    partitions: dict[TopicPartition, Sequence[PartitionSample]]
    if not all(e.tps is tps or e.tps == tps for e in entries):
        partitions = dict(_series(entries))
    elif tps and all(e.columns is not None for e in entries):
        # Every entry saw the same partitions and kept them as arrays (the usual case): each partition's samples
        # are a view over the entries' arrays, which makes a sample only when it is read. The evaluator judges
        # the plain partitions from the arrays alone (lagbot.engine.rows `PlainRows`), reading no sample of them.
        columns = _window_columns(entries)
        blocks = tuple(e.columns for e in entries if e.columns is not None)
        shared = ColumnWindow(columns.times, blocks, columns.log_end)
        partitions = {tp: ColumnSamples(shared, i) for i, tp in enumerate(tps)}
    else:
        # The same partitions, some entry without arrays: transposing the rows is one zip.
        partitions = dict(zip(tps, zip(*[_entry_samples(e) for e in entries], strict=True), strict=True))
    return GroupWindow(
        cluster=cluster,
        group=group,
        samples=tuple([e.group_sample for e in entries]),
        partitions=partitions,
        latest=latest,
        columns=columns,
    )


def _series(entries: list[_Entry]) -> dict[TopicPartition, tuple[PartitionSample, ...]]:
    """Each partition of the newest entry with its samples from every entry that has it, oldest first."""
    series: dict[TopicPartition, list[PartitionSample]] = {tp: [] for tp in entries[-1].tps}
    for entry in entries:
        for tp, sample in zip(entry.tps, _entry_samples(entry), strict=True):
            found = series.get(tp)
            if found is not None:
                found.append(sample)
    return {tp: tuple(samples) for tp, samples in series.items()}


def _window_columns(entries: list[_Entry]) -> WindowColumns:
    """The arrays of a window whose entries all have arrays of the same partitions (see WindowColumns)."""
    import numpy as np

    # samples x 2 rows x partitions -> 2 rows x partitions x samples; log start stays in the entries' arrays.
    stacked = np.array([e.columns[:2] for e in entries if e.columns is not None]).transpose(1, 2, 0)
    committed, log_end = stacked[0], stacked[1]
    known = committed >= 0
    np.maximum(committed, 0, out=committed)  # 0 where unknown, as WindowColumns holds it
    newest = entries[-1].columns
    assert newest is not None
    return WindowColumns(
        times=tuple(e.at for e in entries),
        tps=entries[-1].tps,
        committed=committed,
        log_end=log_end,
        known=known,
        last_log_start=newest[2],
    )
