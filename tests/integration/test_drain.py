"""The drain against the embedded broker and real Spark (local[2]): exactly once, offsets, failures, pause.

Every offset asserted was produced by the test and read back from the broker or from the Parquet
files (with pyarrow, not with the Spark that wrote them). Backlogs are produced with a batching
producer, then ONE message per partition alone, because the embedded broker reports the log end as
the last batch's base offset + 1 (measured: 99,982 instead of 100,000 after batching; exact after a
lone last message); product code knows nothing of this.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.dataset as pads
import pytest
from confluent_kafka import Producer

from bot.check import Checker
from bot.config import build_settings
from bot.model import GroupVerdict
from bot.window import MemoryWindowStore
from remediations.base import ExecutionContext, Plan
from remediations.drain import DrainParams, DrainRemediation, committed_offsets
from remediations.drain_job import JobProgress, spark_session
from remediations.drain_plan import Manifest
from tests.conftest import Kafka, Names

pytestmark = pytest.mark.integration

DRAIN = DrainRemediation()


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = spark_session("local[2]", app_name="lagbot-drain-tests")
    yield session
    session.stop()


def fill(bootstrap: str, topic: str, counts: dict[int, int], value_size: int = 40) -> None:
    """`counts[p]` messages into partition p: all but the last batched, the last alone (exact log end)."""
    batching = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000})
    for partition, n in counts.items():
        for i in range(n - 1):
            _produce(batching, topic, partition, i, value_size)
    assert batching.flush(60) == 0
    lone = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for partition, n in counts.items():
        _produce(lone, topic, partition, n - 1, value_size)
        assert lone.flush(30) == 0


def _produce(producer: Producer, topic: str, partition: int, i: int, value_size: int) -> None:
    value = f"{partition}:{i}:".encode().ljust(value_size, b"x")
    headers = [("n", str(i).encode())] if i % 2 == 0 else None
    deadline = time.monotonic() + 30
    while True:
        try:
            producer.produce(topic, key=f"k{i}".encode(), value=value, partition=partition, headers=headers)
            producer.poll(0)
            return
        except BufferError:
            assert time.monotonic() < deadline, "producer queue stayed full"
            producer.poll(0.1)


def verdict_of(kafka: Kafka, group: str) -> GroupVerdict:
    """The collector's verdict of one group, read from the broker (one sample: offsets only)."""
    settings = build_settings(
        {"clusters": [{"name": "embedded", "bootstrap_servers": kafka.bootstrap, "groups": {"include": [group]}}]},
        source="test",
    )
    report = Checker(settings, MemoryWindowStore(samples=2, ttl=60)).run(1, 0)
    [verdict] = [v for v in report.verdicts if v.group == group]
    return verdict


def context(kafka: Kafka, spark: Any, lines: list[str], **extra: Any) -> ExecutionContext:
    return ExecutionContext(
        admin=kafka.admin,
        progress=lines.append,
        extra={"kafka_config": {"bootstrap.servers": kafka.bootstrap}, "spark": spark, **extra},
    )


def make_plan(kafka: Kafka, group: str, sink: str, **params: Any) -> Plan:
    return DRAIN.plan(verdict_of(kafka, group), DrainParams(sink=sink, master="local[2]", **params), now=time.time())


def committed(kafka: Kafka, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    offsets = committed_offsets(kafka.admin, group, [(topic, p) for p in range(partitions)])
    return {p: offsets[(topic, p)] for p in range(partitions)}


def parquet_rows(sink: Path) -> list[dict[str, Any]]:
    """Every row of the dataset, read with pyarrow (hive partitioning), not with Spark."""
    if not sink.exists():
        return []
    table = pads.dataset(str(sink), format="parquet", partitioning="hive").to_table()
    return table.to_pylist()


def test_drains_a_hot_partition_exactly_once_then_advances_the_offsets(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 3)
    counts = {0: 80_000, 1: 10_000, 2: 10_000}  # 100,000 messages, partition 0 hot
    fill(kafka.bootstrap, topic, counts)
    start = {0: 0, 1: 2_500, 2: 10_000}  # partition 2 is caught up: nothing to drain there
    kafka.commit(group, {(topic, p): o for p, o in start.items()})
    sink = tmp_path / "drained"

    plan = make_plan(kafka, group, str(sink), chunk=10_000)
    assert plan.after["tasks"] == 8 + 1  # the hot partition is read by 8 tasks, partition 1 by one
    assert plan.after["offsets"] == 80_000 + 7_500
    assert plan.after["commit"] == {f"{topic}/0": 80_000, f"{topic}/1": 10_000}
    seen: list[JobProgress] = []
    lines: list[str] = []
    outcome = DRAIN.execute(Plan.from_json(plan.to_json()), context(kafka, spark, lines, on_progress=seen.append))

    assert outcome.ok, outcome.detail
    rows = parquet_rows(sink)
    per_partition = Counter((r["topic"], r["partition"]) for r in rows)
    assert per_partition == {(topic, 0): 80_000, (topic, 1): 7_500}
    offsets = Counter((r["partition"], r["offset"]) for r in rows)
    assert set(offsets.values()) == {1}  # every offset exactly once
    assert set(offsets) == {(0, o) for o in range(80_000)} | {(1, o) for o in range(2_500, 10_000)}
    sample = next(r for r in rows if r["partition"] == 1 and r["offset"] == 4_242)
    assert (sample["key"], sample["value"][:7], sample["headers"]) == (b"k4242", b"1:4242:", [
        {"key": "n", "value": b"4242"}
    ])  # fmt: skip
    assert len({r["offset_range"] for r in rows if r["partition"] == 0}) == 8

    assert committed(kafka, group, topic, 3) == {0: 80_000, 1: 10_000, 2: 10_000}
    manifest = Manifest.from_json((sink / "_lagbot" / f"drain-{group}-{plan.after['plan_id']}.json").read_text())
    assert manifest.complete and manifest.messages == 87_500
    assert [(r.partition, r.start, r.end, r.count, r.first_offset, r.last_offset) for r in manifest.ranges][:2] == [
        (0, 0, 10_000, 10_000, 0, 9_999),
        (0, 10_000, 20_000, 10_000, 10_000, 19_999),
    ]
    assert manifest.total_bytes == sum(len(r["key"]) + len(r["value"]) for r in rows)
    assert seen[-1].ranges_done == seen[-1].ranges_total == 9 and seen[-1].messages == 87_500
    assert any(line.startswith(f"draining {group}: 9/9 ranges") for line in lines)
    assert outcome.data["committed"] == {f"{topic}/0": 80_000, f"{topic}/1": 10_000}
