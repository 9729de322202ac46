"""The window store: the last N observations of every watched group and of each of its partitions.

One interface, two implementations that pass the same contract tests (tests/engine/test_window_contract.py):
`MemoryWindowStore` for one-shot CLI use, `RedisWindowStore` for the bot (shared by replicas, survives
restarts).

Layout: one bounded list per group. Each entry is one cycle's observation of the group (state, member ids,
generation) with the samples of all its partitions, as versioned JSON (lagbot.engine.window_entries: the entry, its
JSON, and the window read out of a group's entries). A partition's window is read out of its group's entries, so
appending a cycle costs one RPUSH+LTRIM+EXPIRE per group whatever the number of partitions, and reading a group's
window is one LRANGE. A partition that appears later (a new partition) simply has fewer samples; one that is gone
from the newest entry is gone from the window.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the Redis client is given to the store
    import redis

from lagbot.core import keys as redis_keys
from lagbot.core.model import ClusterSnapshot, GroupWindow
from lagbot.engine.window_entries import Entry, decode_entry, encode_entry, entry_of, to_window

log = logging.getLogger(__name__)


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
    def _entries(self, cluster: str, groups: list[str]) -> dict[str, list[Entry]]:
        """The stored entries of each of `groups` (oldest first); absent groups are left out."""

    @abstractmethod
    def groups(self, cluster: str) -> list[str]:
        """The groups of `cluster` that have a window, sorted."""

    def window(self, cluster: str, group: str) -> GroupWindow | None:
        return self.windows(cluster, [group]).get(group)

    def windows(self, cluster: str, groups: Iterable[str]) -> dict[str, GroupWindow]:
        """Windows of many groups at once (one round trip for the Redis store)."""
        entries = self._entries(cluster, list(groups))
        return {group: to_window(cluster, group, found) for group, found in entries.items() if found}

    def private_copy(self, cluster: str, groups: Iterable[str]) -> MemoryWindowStore:
        """An in-memory store holding a copy of these groups' windows: a one-off sample appended to it
        (a `/lag <group>` check) judges against the shared history without ever writing to it."""
        copy = MemoryWindowStore(samples=self.samples, ttl=self.ttl)
        for group, entries in self._entries(cluster, list(groups)).items():
            copy._data[(cluster, group)] = deque(entries, maxlen=self.samples)
        return copy


class MemoryWindowStore(WindowStore):
    """In-process store for one-shot use (`lagbot check`).

    `arrays=False` keeps no offset arrays (`Entry.columns` None): windows are then judged sample by sample,
    to the same verdicts, and numpy is never imported. `lagbot check` takes a few samples once, for which
    importing numpy costs more than the array route saves.
    """

    def __init__(self, *, samples: int, ttl: float = 86_400.0, arrays: bool = True) -> None:
        super().__init__(samples=samples, ttl=ttl)
        self.arrays = arrays
        self._data: dict[tuple[str, str], deque[Entry]] = {}

    def append(self, snapshot: ClusterSnapshot) -> None:
        if snapshot.error is not None:
            return
        for group in snapshot.groups.values():
            if group.error is None:
                entries = self._data.setdefault((snapshot.cluster, group.group), deque(maxlen=self.samples))
                entries.append(entry_of(snapshot, group, like=entries[-1] if entries else None, arrays=self.arrays))
        self._expire(snapshot.cluster, snapshot.taken_at)

    def _expire(self, cluster: str, now: float) -> None:
        for key in [k for k, v in self._data.items() if k[0] == cluster and v[-1].at <= now - self.ttl]:
            del self._data[key]

    def _entries(self, cluster: str, groups: list[str]) -> dict[str, list[Entry]]:
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
        self._cache: dict[str, tuple[list[Entry], int]] = {}
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
        appended: list[tuple[str, Entry]] = []
        keys, args = [index], [str(self.samples), str(ttl), repr(snapshot.taken_at)]
        for group in snapshot.groups.values():
            if group.error is not None:
                continue
            expired.discard(group.group)
            key = self._list_key(snapshot.cluster, group.group)
            cached = self._cache.get(key)
            entry = entry_of(snapshot, group, like=cached[0][-1] if cached else None)
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

    def _remember(self, key: str, entry: Entry, seq: int) -> None:
        """Extend our decoded copy if our append directly followed it; otherwise forget it (reload on read)."""
        cached = self._cache.get(key)
        if cached is not None and cached[1] == seq - 1:
            self._cache[key] = ([*cached[0], entry][-self.samples :], seq)
        elif seq == 1:
            self._cache[key] = ([entry], seq)
        else:
            self._cache.pop(key, None)

    def _entries(self, cluster: str, groups: list[str]) -> dict[str, list[Entry]]:
        keys = [self._list_key(cluster, group) for group in groups]
        seqs = self._redis.mget([self._seq_key(key) for key in keys]) if keys else []
        found: dict[str, list[Entry]] = {}
        stale: list[tuple[str, str]] = []
        for group, key, seq in zip(groups, keys, seqs, strict=True):
            cached = self._cache.get(key)
            if cached is not None and seq is not None and _is_count(seq) and cached[1] == int(seq):
                found[group] = cached[0]
            else:
                stale.append((group, key))
        found.update(self._load(stale))
        return found

    def _load(self, stale: list[tuple[str, str]]) -> dict[str, list[Entry]]:
        """Read and decode whole lists with their sequence numbers (atomically) and remember them."""
        if not stale:
            return {}
        pipe = self._redis.pipeline(transaction=True)
        for _, key in stale:
            pipe.lrange(key, 0, -1)
            pipe.get(self._seq_key(key))
        answers = pipe.execute(raise_on_error=False)
        loaded: dict[str, list[Entry]] = {}
        for i, (group, key) in enumerate(stale):
            raw_list, seq = answers[2 * i], answers[2 * i + 1]
            self._cache.pop(key, None)
            if isinstance(raw_list, Exception) or isinstance(seq, Exception) or not _is_count(seq):
                # a key of another type (an older lagbot's): this group has no window until its next append
                # replaces it; every other group is read as usual
                log.warning("window unreadable", extra={"key": key})
                continue
            if raw_list:
                entries: list[Entry] = []
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
