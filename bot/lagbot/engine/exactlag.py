"""Exact lag in seconds: the timestamp of the first unconsumed record, read for the N partitions furthest behind.

The window (Kafka Lag Exporter's interpolation, lagbot.engine.rates) and the broker's time index
(lagbot.engine.index_figures) estimate when the first unconsumed message was written. Where reading that one record is
allowed (`evaluation.exact_lag_seconds` > 0, READ on the topic), its own timestamp says it exactly: lag in seconds
is `now` minus that timestamp, and `lag_seconds_method` is 'exact'.

Bounded: per cycle and cluster, at most N partitions (the worst: those with no figure yet, then the most
seconds behind, then the most messages behind), one short-lived consumer that is assigned all of them at their
committed offsets (no group join, no commit), polled until each gave one record or `exact_lag_timeout` ran out.
A partition that gave nothing by then (an authorisation error, a transaction still open, a slow broker) keeps
its estimate. `pick` and `with_exact` are pure; `first_timestamps` is the I/O.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from lagbot.core.model import GroupVerdict, PartitionVerdict, TopicPartition
from lagbot.engine.evaluate import group_lag_seconds

log = logging.getLogger(__name__)

EXACT = "exact"
READER_GROUP = "lagbot-exact-lag-seconds"
"""librdkafka needs a group id for any consumer; this one never joins (assign only) and never commits."""
FETCH_BYTES = 65_536
"""Bytes fetched per partition: one record is wanted, so a small fetch is enough."""

Position = tuple[TopicPartition, int]
"""A partition and the offset of its first unconsumed record (the group's committed offset)."""


def pick(verdicts: Iterable[GroupVerdict], n: int) -> list[Position]:
    """The positions of the N worst lagging partitions (unique partitions; the worst group's offset wins).

    Worst first: partitions whose lag in seconds is unknown (they gain the most), then the most seconds behind,
    then the most messages behind. Only partitions with a committed offset and lag above 0.
    """
    if n <= 0:
        return []
    lagging = [p for v in verdicts if v.error is None for p in v.partitions if p.committed is not None and p.lag]
    lagging.sort(key=lambda p: (p.lag_seconds is not None, -(p.lag_seconds or 0.0), -(p.lag or 0), p.tp))
    chosen: dict[TopicPartition, int] = {}
    for p in lagging:
        if len(chosen) == n:
            break
        if p.tp not in chosen and p.committed is not None:
            chosen[p.tp] = p.committed
    return list(chosen.items())


def with_exact(verdict: GroupVerdict, written_at: Mapping[Position, float], now: float) -> GroupVerdict:
    """The verdict with exact figures where the first unconsumed record of a partition was read.

    `written_at` maps (partition, offset read from) to the record's timestamp in seconds. A partition of this group
    uses it only when the offset is its own committed offset (another group may read the same partition elsewhere).
    """
    if not written_at:
        return verdict
    partitions = tuple(_exact(p, written_at, now) for p in verdict.partitions)
    if partitions == verdict.partitions:
        return verdict
    return replace(verdict, partitions=partitions, max_lag_seconds=group_lag_seconds(partitions))


def _exact(p: PartitionVerdict, written_at: Mapping[Position, float], now: float) -> PartitionVerdict:
    if p.committed is None or not p.lag:
        return p
    at = written_at.get((p.tp, p.committed))
    if at is None:
        return p
    return p.with_lag_seconds(max(0.0, now - at), False, EXACT)


def first_timestamps(
    client_config: Mapping[str, Any], positions: Sequence[Position], timeout: float
) -> dict[Position, float]:
    """The timestamp (seconds) of the first record at or after each position, read by one short-lived consumer.

    read_committed, as a consumer of a transactional topic reads: the first record returned is the first one the
    group will read (control records and aborted transactions are skipped). Bounded by `timeout`; errors are logged
    and leave the partitions concerned out.
    """
    if not positions:
        return {}
    wanted = dict(positions)
    found: dict[Position, float] = {}
    try:
        consumer = Consumer(
            {
                **client_config,
                "group.id": READER_GROUP,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed",
                "auto.offset.reset": "error",  # a committed offset retention already deleted: no figure, not another's
                "max.partition.fetch.bytes": FETCH_BYTES,
                "logger": logging.getLogger("librdkafka"),
            }
        )
    except (KafkaException, ValueError, TypeError) as exc:
        log.warning("exact lag seconds: no reader for this cluster: %s", exc)
        return found
    try:
        consumer.assign([KafkaTopicPartition(t, p, offset) for (t, p), offset in positions])
        deadline = time.monotonic() + timeout
        while wanted and (left := deadline - time.monotonic()) > 0:
            message = consumer.poll(min(left, 0.2))
            if message is None:
                continue
            tp = (message.topic() or "", message.partition() or 0)
            if message.error() is not None:
                log.info("exact lag seconds: %s-%s not read: %s", tp[0], tp[1], message.error())
                continue
            offset, (kind, millis) = wanted.get(tp), message.timestamp()
            if offset is None or (message.offset() or 0) < offset:
                continue
            del wanted[tp]
            consumer.pause([KafkaTopicPartition(*tp)])
            if millis >= 0 and kind != TIMESTAMP_NOT_AVAILABLE:
                found[(tp, offset)] = millis / 1000.0
    except KafkaException as exc:
        log.warning("exact lag seconds: the reader failed: %s", exc)
    finally:
        consumer.close()
    return found
