"""What the drain's tests share: a topic filled with known messages, a plan and its context, reading back
offsets and the Parquet written."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.dataset as pads
from confluent_kafka import Producer

from lagbot.core.config import build_settings
from lagbot.core.model import GroupVerdict
from lagbot.engine.check import Checker
from lagbot.engine.window import MemoryWindowStore
from lagbot.remediations.base import Plan
from lagbot.remediations.drain.context import DrainContext
from lagbot.remediations.drain.params import DrainParams
from lagbot.remediations.drain.plan import Manifest
from lagbot.remediations.drain.remediation import DrainRemediation
from lagbot.remediations.executors.base import Executor
from tests.conftest import Kafka

DRAIN = DrainRemediation()


def fill(bootstrap: str, topic: str, counts: dict[int, int], value_size: int = 40) -> None:
    """`counts[p]` messages into partition p, batched, all acknowledged before it returns."""
    batching = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000})
    for partition, n in counts.items():
        for i in range(n):
            _produce(batching, topic, partition, i, value_size)
    assert batching.flush(60) == 0


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
        {"clusters": [{"name": "apache", "bootstrap_servers": kafka.bootstrap, "groups": {"include": [group]}}]},
        source="test",
    )
    report = Checker(settings, MemoryWindowStore(samples=2, ttl=60)).run(1, 0)
    [verdict] = [v for v in report.verdicts if v.group == group]
    return verdict


def context(kafka: Kafka, spark: Any, lines: list[str], executor: Executor | None = None, **given: Any) -> DrainContext:
    """A DrainContext on `kafka` and `spark`; `given` sets (or replaces) any other of its fields."""
    return DrainContext(
        executor=executor,
        admin=kafka.admin,
        progress=lines.append,
        **{"kafka_config": {"bootstrap.servers": kafka.bootstrap}, "spark": spark, **given},
    )


def make_plan(kafka: Kafka, group: str, sink: str, **params: Any) -> Plan:
    return DRAIN.plan(verdict_of(kafka, group), DrainParams(sink=sink, master="local[2]", **params), now=time.time())


def parquet_rows(sink: Path) -> list[dict[str, Any]]:
    """Every row of the dataset, read with pyarrow (hive partitioning), not with Spark."""
    if not sink.exists():
        return []
    table = pads.dataset(str(sink), format="parquet", partitioning="hive").to_table()
    return table.to_pylist()


def manifest_at(sink: Path, group: str, plan: Plan) -> Manifest:
    return Manifest.from_json((sink / "_lagbot" / f"drain-{group}-{plan.after['plan_id']}.json").read_text())


def exactly_once(rows: list[dict[str, Any]], expected: dict[int, range]) -> None:
    offsets = Counter((r["partition"], r["offset"]) for r in rows)
    assert set(offsets.values()) <= {1}, "an offset was written twice"
    assert set(offsets) == {(p, o) for p, span in expected.items() for o in span}
