"""The drain over transactional writes on Apache Kafka: aborted records never reach the sink.

Apache Kafka keeps an aborted transaction's records in the log and lists them (with the abort marker) for
read_committed readers to drop; every commit or abort marker takes an offset no reader sees. The drain must
write only committed records, read its ranges past both kinds of gaps, and leave the group exactly at the
log end. Every offset expected comes from the producer's delivery reports and is read back from the broker
and from the Parquet files (with pyarrow).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition

from lagbot.remediations.drain.job import spark_session
from tests.conftest import Kafka, Names
from tests.support.bot_process import wait_for
from tests.support.drain_rig import DRAIN, context, make_plan, manifest_at, parquet_rows, verdict_of
from tests.support.group_commits import committed

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = spark_session("local[2]", app_name="lagbot-drain-transaction-tests")
    yield session
    session.stop()


class Transactions:
    """One transactional producer; `write` returns the offsets the broker gave the records (delivery reports)."""

    def __init__(self, bootstrap: str, transactional_id: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
        self.producer.init_transactions(30)

    def write(self, topic: str, partition: int, count: int, *, commit: bool) -> list[int]:
        offsets: list[int] = []
        value = b"committed" if commit else b"aborted"
        self.producer.begin_transaction()
        for i in range(count):
            self.producer.produce(
                topic,
                key=f"k{i}".encode(),
                value=value,
                partition=partition,
                on_delivery=lambda _error, message: offsets.append(message.offset()),
            )
        assert self.producer.flush(30) == 0
        if commit:
            self.producer.commit_transaction(30)
        else:
            self.producer.abort_transaction(30)
        return offsets


def log_ends(kafka: Kafka, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka.admin import OffsetSpec

    futures = kafka.admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)})
    return {tp.partition: future.result(15).offset for tp, future in futures.items()}


@pytest.mark.parametrize("isolation", [None, "read_uncommitted"])
def test_aborted_records_never_reach_the_sink_and_the_group_ends_at_the_log_end(
    kafka: Kafka, names: Names, spark: Any, tmp_path: Path, isolation: str | None
) -> None:
    """Also when the cluster's client settings ask for read_uncommitted: the drain's readers override it."""
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    tx = Transactions(kafka.bootstrap, names("tx"))
    kept0 = tx.write(topic, 0, 5, commit=True)  # offsets 0..4, commit marker at 5
    aborted0 = tx.write(topic, 0, 5, commit=False)  # 6..10, abort marker at 11
    kept0 += tx.write(topic, 0, 5, commit=True)  # 12..16, commit marker at 17
    kept1 = tx.write(topic, 1, 3, commit=True)  # 0..2, commit marker at 3
    aborted1 = tx.write(topic, 1, 4, commit=False)  # 4..7, abort marker at 8: the log ends on aborted records
    assert (kept0, aborted0) == ([0, 1, 2, 3, 4, 12, 13, 14, 15, 16], [6, 7, 8, 9, 10])
    assert (kept1, aborted1) == ([0, 1, 2], [4, 5, 6, 7])
    # The coordinator writes the markers after it answered the commit or abort: waited for, not assumed.
    wait_for("the transaction markers", lambda: log_ends(kafka, topic, 2) == {0: 18, 1: 9}, timeout=15)
    kafka.commit(group, {(topic, 0): 0, (topic, 1): 0})
    sink = tmp_path / "drained"

    plan = make_plan(kafka, group, str(sink), chunk=4)  # [8, 12) of partition 0 holds only aborted records
    assert plan.after["commit"] == {f"{topic}/0": 18, f"{topic}/1": 9}
    lines: list[str] = []
    cluster_settings = {"bootstrap.servers": kafka.bootstrap}
    if isolation is not None:
        cluster_settings["isolation.level"] = isolation
    outcome = DRAIN.execute(plan, context(kafka, spark, lines, kafka_config=cluster_settings))

    assert outcome.ok, outcome.detail
    rows = parquet_rows(sink)
    assert sorted((r["partition"], r["offset"]) for r in rows) == [(0, o) for o in kept0] + [(1, o) for o in kept1]
    assert {r["value"] for r in rows} == {b"committed"}
    ranges = manifest_at(sink, group, plan).ranges
    assert [(r.partition, r.start, r.end, r.count) for r in ranges] == [
        (0, 0, 4, 4),
        (0, 4, 8, 1),  # 4; 5 is the commit marker, 6 and 7 aborted
        (0, 8, 12, 0),  # aborted records and the abort marker only
        (0, 12, 16, 4),
        (0, 16, 18, 1),  # 16; 17 is the commit marker, the log end
        (1, 0, 4, 3),
        (1, 4, 8, 0),
        (1, 8, 9, 0),  # the abort marker: the last offset before the log end
    ]
    assert committed(kafka, group, topic, 2) == {0: 18, 1: 9}
    assert [(p.partition, p.committed, p.log_end, p.lag) for p in verdict_of(kafka, group).partitions] == [
        (0, 18, 18, 0),
        (1, 9, 9, 0),
    ]
