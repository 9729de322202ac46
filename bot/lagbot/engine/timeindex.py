"""The broker's own history: Kafka's time index, asked with ListOffsets by timestamp, and its answers read.

For a timestamp T, ListOffsets answers per partition the earliest offset whose timestamp is at or after T: the
log end as it stood at T (the messages before it were all written before T). One batched request per timestamp
covers every partition at once (`offsets_at`). Each answer is read as an `IndexPoint` (`point`): the log end at a
past moment, or None where the partition has no data that old. A partition whose oldest retained message is newer
than now - h (the answer is its log start) has no data that old, said so, never guessed. That answer comes with the
timestamp of the oldest retained record, when the log end was the log start, exactly (`BaselineCache.born`): a young
topic's whole short history, its baseline (lagbot.engine.burst).

`BaselineCache` asks a horizon again only when it has moved on (by a tenth of itself), not every cycle, and answers
it from the log ends the bot itself read where it can. What the points add to a verdict (baseline produce rates,
lag in seconds from the first check) is lagbot.engine.index_figures, one partition at a time, and
lagbot.engine.index_tables, as arrays once per cycle.
Nothing here reads a clock: `now` is an argument. The proof is tests/engine/test_time_index.py.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import wait
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient, OffsetSpec

from lagbot.core.defaults import HISTORY_HORIZONS
from lagbot.core.model import TopicPartition
from lagbot.engine.list_offsets import ask_offsets

HORIZONS = HISTORY_HORIZONS
"""The default horizons in seconds: the last 1, 5, 15 and 60 minutes."""
REASK_SHARE = 0.1
"""A horizon is asked again once `now` moved on by this share of it (6 s for 1 min, 6 min for 60 min)."""

OffsetsAt = Callable[[Sequence[TopicPartition], Sequence[float]], list[Mapping[TopicPartition, int]]]
"""(partitions, timestamps in seconds) -> per timestamp, each partition's answer: the earliest offset written at or
after that time, or -1 when nothing was written since. A partition the broker did not answer for is left out
(unknown). An answer that is an `Answers` also says when each offset's record was written."""


class Answers(dict[TopicPartition, int]):
    """One timestamp's ListOffsets answers (`OffsetsAt`), with the timestamp the broker gave with each offset: the
    time its record was written, in seconds (`written_at`; left out where the broker gave none)."""

    def __init__(self, offsets: Mapping[TopicPartition, int], written_at: Mapping[TopicPartition, float]) -> None:
        super().__init__(offsets)
        self.written_at = dict(written_at)


def offsets_at(admin: AdminClient, timeout: float) -> OffsetsAt:
    """ListOffsets by timestamp through `admin`: per timestamp, every partition (in chunks: lagbot.engine.list_offsets),
    the requests of all the timestamps in flight together."""

    def ask(tps: Sequence[TopicPartition], ats: Sequence[float]) -> list[Mapping[TopicPartition, int]]:
        if not tps:
            return [{} for _ in ats]
        asked = [ask_offsets(admin, tps, OffsetSpec.for_timestamp(int(at * 1000)), timeout) for at in ats]
        wait([future for futures in asked for future in futures.values()], timeout=timeout + 1.0)
        found: list[Mapping[TopicPartition, int]] = []
        for futures in asked:
            answered = {
                (tp.topic, tp.partition): future.result()
                for tp, future in futures.items()
                if future.done() and future.exception() is None
            }
            offsets = {tp: int(info.offset) for tp, info in answered.items()}
            times = {
                tp: info.timestamp / 1000 for tp, info in answered.items() if info.offset >= 0 and info.timestamp >= 0
            }
            found.append(Answers(offsets, times))
        return found

    return ask


@dataclass(frozen=True, slots=True)
class IndexPoint:
    """The log end of one partition at one past moment, from the time index."""

    at: float
    log_end: int | None
    """None: no data that old (the oldest retained message is newer than `at`), or the broker did not answer."""
    horizon: float = 0.0
    """The horizon (seconds before the check) this point was asked for."""


def point(at: float, answered: int | None, log_end: int, log_start: int, horizon: float = 0.0) -> IndexPoint:
    """Read one ListOffsets-by-timestamp answer about time `at` (asked for `horizon`).

    No answer (None): unknown. No offset (-1): nothing was written since `at`, so the log end then was
    today's. The log start (or below): the oldest retained message is already at or after `at`, and whether
    anything came before it (deleted by retention, or never written) the broker cannot say: no data that old.
    """
    if answered is None:
        return IndexPoint(at, None, horizon)
    if answered < 0:
        return IndexPoint(at, log_end, horizon)
    if answered <= log_start:
        return IndexPoint(at, None, horizon)
    return IndexPoint(at, answered, horizon)


class BaselineCache:
    """Index points per horizon, asked again only when the horizon has moved on (`REASK_SHARE` of itself).

    A horizon is first answered from the log ends the bot itself read (`saw`, each cycle's snapshot) when some were
    read near enough to now - horizon (by less than `REASK_SHARE` of the horizon, either side): with a check
    every minute, the 1, 5 and 15 minute horizons come from earlier cycles and only older ones are asked of the
    broker. A log end read at time T is what the time index answers for T (the next message's offset, which was
    written after T), or -1 when nothing was written since (see `history`); measured at 100,000
    group-partitions, asking one horizon of 5,000 partitions cost 0.28 s, two or three of them every cycle.
    """

    def __init__(self, ask: OffsetsAt, horizons: Sequence[float] = HORIZONS) -> None:
        if not horizons or any(h <= 0 for h in horizons):
            raise ValueError("horizons must be positive seconds")
        self.ask = ask
        self.horizons = tuple(sorted(horizons))
        self.requests = 0
        self._asked: dict[float, tuple[float, Mapping[TopicPartition, int], frozenset[TopicPartition]]] = {}
        self._from_seen: set[float] = set()
        """Horizons whose answers are log ends the bot read (`saw`), not the broker's."""
        self._written: dict[float, Mapping[TopicPartition, float]] = {}
        """Per horizon asked of the broker, when the record at each answered offset was written (`Answers`)."""
        self._seen: deque[_Seen] = deque()

    def saw(self, at: float, log_end: Mapping[TopicPartition, int]) -> None:
        """Keep the log ends read at `at` (a cycle's snapshot) while a horizon could take them: as arrays, the
        partitions shared with the last kept ones when they are the same."""
        from array import array

        tps = tuple(log_end)
        if self._seen and self._seen[-1].tps == tps:
            tps = self._seen[-1].tps
        self._seen.append(_Seen(at, tps, array("q", log_end.values())))
        oldest = at - self.horizons[-1] * (1 + REASK_SHARE)
        while self._seen and self._seen[0].at < oldest:
            self._seen.popleft()

    def answers(
        self, tps: Sequence[TopicPartition], now: float
    ) -> dict[float, tuple[float, Mapping[TopicPartition, int | None]]]:
        """Per horizon: (the time asked about, each partition's answer), from log ends the bot read where it can,
        asking the broker only for the rest (the horizons asked, all at once)."""
        due = []
        for horizon in self.horizons:
            cached = self._asked.get(horizon)
            stale = cached is None or now - horizon - cached[0] >= REASK_SHARE * horizon
            new = cached is not None and not cached[2].issuperset(tps)
            if (stale or new) and not self._answer_from_seen(horizon, tps, now):
                due.append(horizon)
        if due:
            ats = [now - horizon for horizon in due]
            for horizon, at, found in zip(due, ats, self.ask(tps, ats), strict=True):
                self._asked[horizon] = (at, dict(found), frozenset(tps))
                self._written[horizon] = found.written_at if isinstance(found, Answers) else {}
                self._from_seen.discard(horizon)
            self.requests += len(due)
        return {h: self._asked[h][:2] for h in self.horizons}

    def _answer_from_seen(self, horizon: float, tps: Sequence[TopicPartition], now: float) -> bool:
        """Answer `horizon` with the log ends read nearest to now - horizon, if they were read within
        `REASK_SHARE` of it (either side: a check every minute starts a little before or after the minute) and
        cover `tps`."""
        wanted = now - horizon
        near = min(self._seen, key=lambda seen: abs(seen.at - wanted), default=None)
        if near is None or abs(near.at - wanted) >= REASK_SHARE * horizon or near.at >= now:
            return False
        if not set(near.tps).issuperset(tps):
            return False
        self._asked[horizon] = (near.at, dict(zip(near.tps, near.ends, strict=True)), frozenset(tps))
        self._written.pop(horizon, None)
        self._from_seen.add(horizon)
        return True

    def history(
        self,
        tps: Sequence[TopicPartition],
        now: float,
        log_end: Mapping[TopicPartition, int],
        log_start: Mapping[TopicPartition, int],
    ) -> dict[TopicPartition, tuple[IndexPoint, ...]]:
        """Each partition's index points, oldest first (one per horizon)."""
        answers = self.answers(tps, now)
        return {
            tp: tuple(
                point(at, self._answered(h, found.get(tp), log_end[tp]), log_end[tp], log_start.get(tp, 0), h)
                for h in reversed(self.horizons)
                for at, found in (answers[h],)
            )
            for tp in tps
            if tp in log_end
        }

    def born(
        self, tps: Sequence[TopicPartition], log_start: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, float]:
        """When each partition's oldest retained record was written, of the partitions whose history is shorter than
        a horizon asked (its answer was the log start: "no data that old"), from the timestamp the broker gave with
        that answer. At that time the log end was the log start, exactly: what the partition holds was all written
        since (lagbot.engine.burst compares a young topic's window with it). Partitions without such an answer are
        left out."""
        found: dict[TopicPartition, float] = {}
        for horizon in self.horizons:
            asked, written = self._asked.get(horizon), self._written.get(horizon, {})
            if asked is None or not written:
                continue
            for tp in tps:
                offset, at = asked[1].get(tp), written.get(tp)
                if offset is not None and at is not None and offset == log_start.get(tp, 0):
                    found[tp] = at
        return found

    def _answered(self, horizon: float, found: int | None, log_end: int) -> int | None:
        """The time index's answer: a log end read then (`saw`) is -1 when nothing was written since."""
        if horizon in self._from_seen and found is not None and found >= log_end:
            return -1
        return found


@dataclass(frozen=True, slots=True)
class _Seen:
    """The log ends of `tps` read at `at` (`BaselineCache.saw`)."""

    at: float
    tps: tuple[TopicPartition, ...]
    ends: Sequence[int]
