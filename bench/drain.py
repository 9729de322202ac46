"""Benchmark: the emergency drain against the partition ceiling, in one run.

A backlog of N messages (default 1,000,000) of 200 bytes on 3 partitions, 90% of it on partition 0
(key skew), is produced once on the embedded broker. Then, per repetition, side by side:

(a) one consumer-group consumer draining it: the ceiling the seed incidents hit, since a partition is
    read by one consumer of a group at most. It does the drain's own work, as well as one consumer
    can: `consume()` batches of 10,000 (never more than are left: a batch it cannot fill waits out its
    timeout), the same Arrow rows, Parquet written with pyarrow (one file
    per 100,000 messages), offsets committed after each file, librdkafka's defaults otherwise.
    Timed from its first message (the group join excluded);
(a*) the same consumer with the one librdkafka setting the drain's reader changes
    (`fetch.queue.backoff.ms` 5 instead of 1,000): the strongest single consumer we could write;
(a0) the same consumer doing no work at all (`poll()` per message, auto-commit, defaults);
(b) the drain remediation on Spark `local[2]`: pre-flight, the job reading ranges of `--chunk`
    offsets (the hot partition by many tasks), Parquet written by the tasks (pyarrow, the default
    for a local path), manifest, offsets committed. Timed with the SparkSession already up (warm);
    the first run, which pays for the JVM and the Python workers, is reported apart (cold);
(b') the same with Spark's own Parquet writer (`writer: spark`, what Hadoop URLs use);
(c) a raw fetch loop: one consumer assigned to the three partitions, `consume()` in batches of 10,000,
    counting only, with the reader's fetch setting: what one reader gets from the broker here.

Prints messages/s (median of the repetitions, min and max) and the ratios b/a, b/a*, b'/a and b/c. Results are
recorded in bench/README.md.

    .venv/bin/python bench/drain.py [--messages 1000000] [--chunk 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lagbot.core.config import build_settings
from lagbot.devkit.embedded import EmbeddedBroker
from lagbot.engine.check import Checker
from lagbot.engine.window import MemoryWindowStore
from lagbot.remediations.drain.context import DrainContext
from lagbot.remediations.drain.job import spark_session
from lagbot.remediations.drain.params import DrainParams
from lagbot.remediations.drain.plan import OffsetRange
from lagbot.remediations.drain.remediation import DrainRemediation
from lagbot.remediations.drain.sinks import FETCH_TUNING, record_batch

TOPIC = "user-events"
VALUE = b"v" * 200
SHARE = {0: 0.90, 1: 0.05, 2: 0.05}


def produce_backlog(bootstrap: str, total: int) -> dict[int, int]:
    """The backlog, batched, then one lone message per partition (the embedded broker's exact log end)."""
    counts = {p: round(total * share) for p, share in SHARE.items()}
    counts[0] += total - sum(counts.values())
    batching = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000})
    for partition, n in counts.items():
        for i in range(n - 1):
            _send(batching, partition, i)
    assert batching.flush(120) == 0, "backlog not delivered"
    lone = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for partition, n in counts.items():
        _send(lone, partition, n - 1)
        assert lone.flush(30) == 0
    return counts


def _send(producer: Producer, partition: int, i: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            producer.produce(TOPIC, key=str(i).encode(), value=VALUE, partition=partition)
            producer.poll(0)
            return
        except BufferError:
            if time.monotonic() > deadline:
                raise
            producer.poll(0.05)


def commit_zero(admin: AdminClient, group: str) -> None:
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(TOPIC, p, 0) for p in SHARE])
    admin.alter_consumer_group_offsets([request])[group].result(30)


def group_drainer(bootstrap: str, group: str, total: int, out: Path, extra: dict[str, Any] | None = None) -> float:
    """(a), (a*): seconds for one group consumer to write the backlog to Parquet, committing after each file."""
    import pyarrow.parquet as pq

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 6000,
         "auto.offset.reset": "earliest", "enable.auto.commit": False, **(extra or {})}
    )  # fmt: skip
    consumer.subscribe([TOPIC])
    seen, pending, files, deadline, started = 0, [], 0, time.monotonic() + 900, None
    while seen < total and time.monotonic() < deadline:
        messages = [m for m in consumer.consume(min(10_000, total - seen), 1.0) if m.error() is None]
        if messages and started is None:
            started = time.perf_counter()
        for partition in {m.partition() for m in messages}:
            mine = [m for m in messages if m.partition() == partition]
            pending.append(record_batch(OffsetRange(TOPIC, partition, 0, 0), mine))
        seen += len(messages)
        if sum(b.num_rows for b in pending) >= 100_000 or (seen >= total and pending):
            pq.write_table(pa_table(pending), out / f"part-{files:05d}.parquet")
            files, pending = files + 1, []
            consumer.commit(asynchronous=False)
    elapsed = time.perf_counter() - (started or time.perf_counter())
    consumer.close()
    assert seen == total, f"group drainer read {seen} of {total}"
    return elapsed


def pa_table(batches: list[Any]) -> Any:
    import pyarrow as pa

    return pa.Table.from_batches(batches)


def group_consumer(bootstrap: str, group: str, total: int) -> float:
    """(a0): seconds from the first message to the last of a plain poll-per-message group consumer."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 6000, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([TOPIC])
    seen, first, deadline = 0, None, time.monotonic() + 900
    while seen < total and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is None or message.error() is not None:
            continue
        if first is None:
            first = time.perf_counter()
        seen += 1
    elapsed = time.perf_counter() - (first or time.perf_counter())
    consumer.close()
    assert seen == total, f"group consumer read {seen} of {total}"
    return elapsed


def raw_fetch(bootstrap: str, counts: dict[int, int]) -> float:
    """(c): seconds for one consumer to fetch every message by assignment, counting only."""
    settings = {"bootstrap.servers": bootstrap, "group.id": "bench-raw", "enable.auto.commit": False}
    consumer = Consumer({**settings, **FETCH_TUNING})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in counts])
    total, seen, deadline = sum(counts.values()), 0, time.monotonic() + 900
    started = time.perf_counter()
    while seen < total and time.monotonic() < deadline:
        seen += sum(1 for m in consumer.consume(min(10_000, total - seen), 1.0) if m.error() is None)
    elapsed = time.perf_counter() - started
    consumer.close()
    assert seen == total, f"raw fetch read {seen} of {total}"
    return elapsed


def spark_drain(
    bootstrap: str, admin: AdminClient, spark: Any, group: str, chunk: int, total: int, writer: str = "auto"
) -> float:
    """(b), (b'): seconds for the whole remediation (plan read from the broker before the clock starts)."""
    commit_zero(admin, group)
    settings = build_settings(
        {"clusters": [{"name": "bench", "bootstrap_servers": bootstrap, "groups": {"include": [group]}}]},
        source="bench",
    )
    [verdict] = Checker(settings, MemoryWindowStore(samples=2, ttl=60)).run(1, 0).verdicts
    sink = Path(tempfile.mkdtemp(prefix="lagbot-drain-bench-"))
    try:
        params = DrainParams(sink=str(sink), master="local[2]", chunk=chunk, writer=writer)
        plan = DrainRemediation().plan(verdict, params, now=time.time())
        context = DrainContext(admin=admin, kafka_config={"bootstrap.servers": bootstrap}, spark=spark)
        started = time.perf_counter()
        outcome = DrainRemediation().execute(plan, context)
        elapsed = time.perf_counter() - started
        assert outcome.ok and outcome.data["messages"] == total, outcome.detail
        return elapsed
    finally:
        shutil.rmtree(sink, ignore_errors=True)


ROLES = ("this process", "broker", "spark jvm", "python workers")


def cpu_seconds() -> dict[str, float]:
    """CPU seconds used so far (user + system, every thread) by the processes of the run, by role (Linux /proc).

    "this process" is the consumer in (a), (a*), (a0), (c) and the Spark driver's Python side in (b).
    """
    tick, me, used = os.sysconf("SC_CLK_TCK"), os.getpid(), dict.fromkeys(ROLES, 0.0)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # the process ended meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()
        seconds = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        name = stat.split("(", 1)[1].rsplit(")", 1)[0]
        if int(pid) == me:
            used["this process"] += seconds
        elif "tansu" in command:
            used["broker"] += seconds
        elif name == "java":
            used["spark jvm"] += seconds
        elif "pyspark" in command:
            used["python workers"] += seconds
    return used


def timed(cores: dict[str, list[dict[str, float]]], key: str, run: Callable[[], float]) -> float:
    """`run()`'s seconds, and the cores each role kept busy meanwhile appended to `cores[key]`."""
    before = cpu_seconds()
    seconds = run()
    after = cpu_seconds()
    cores.setdefault(key, []).append({role: (after[role] - before[role]) / seconds for role in ROLES})
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with EmbeddedBroker().start() as broker:
        bootstrap = broker.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(TOPIC, len(SHARE), 1)]).values():
            future.result(30)
        started = time.perf_counter()
        counts = produce_backlog(bootstrap, args.messages)
        total = sum(counts.values())
        print(f"backlog: {total:,} messages of {len(VALUE)} B, per partition {counts} "
              f"(produced in {time.perf_counter() - started:.1f} s)")  # fmt: skip

        started = time.perf_counter()
        spark = spark_session("local[2]", app_name="lagbot-drain-bench")
        session_seconds = time.perf_counter() - started
        cold = spark_drain(bootstrap, admin, spark, "bench-cold", args.chunk, total)
        times: dict[str, list[float]] = {"a": [], "a*": [], "a0": [], "b": [], "b'": [], "c": []}
        cores: dict[str, list[dict[str, float]]] = {}
        for rep in range(args.repeat):
            for key, extra in (("a", None), ("a*", FETCH_TUNING)):
                out = Path(tempfile.mkdtemp(prefix="lagbot-drain-bench-a-"))
                run = partial(group_drainer, bootstrap, f"bench-{key}-{rep}", total, out, extra)
                times[key].append(timed(cores, key, run))
                shutil.rmtree(out, ignore_errors=True)
            times["a0"].append(timed(cores, "a0", partial(group_consumer, bootstrap, f"bench-a0-{rep}", total)))
            for key, writer in (("b", "auto"), ("b'", "spark")):
                run = partial(spark_drain, bootstrap, admin, spark, f"bench-{writer}-{rep}", args.chunk, total, writer)
                times[key].append(timed(cores, key, run))
            times["c"].append(timed(cores, "c", partial(raw_fetch, bootstrap, counts)))
            print(f"  repetition {rep + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()))
        spark.stop()

    rates = {k: [total / s for s in v] for k, v in times.items()}
    median = {k: statistics.median(v) for k, v in rates.items()}
    labels = {
        "a": "(a) one group consumer draining to Parquet",
        "a*": "(a*) the same, fetch.queue.backoff.ms 5",
        "a0": "(a0) one group consumer, poll() only, no work",
        "b": f"(b) Spark drain, local[2], chunk {args.chunk:,} (warm)",
        "b'": "(b') the same, Spark's Parquet writer",
        "c": "(c) raw fetch loop, one consumer, batches",
    }
    print(f"\n{'':52} {'median msg/s':>13} {'min':>10} {'max':>10}")
    for key, label in labels.items():
        print(f"{label:52} {median[key]:13,.0f} {min(rates[key]):10,.0f} {max(rates[key]):10,.0f}")
    print(f"{'(b) first run in a fresh session (cold)':52} {total / cold:13,.0f}   "
          f"session start {session_seconds:.1f} s, drain {cold:.1f} s")  # fmt: skip
    print(f"\ncores kept busy (median), of 2 here: {', '.join(ROLES)}, total")
    busy = {k: {role: statistics.median(c[role] for c in v) for role in ROLES} for k, v in cores.items()}
    for key, label in labels.items():
        print(
            f"{label:52} " + " ".join(f"{busy[key][role]:5.2f}" for role in ROLES) + f"  {sum(busy[key].values()):5.2f}"
        )
    ratios = {f"{x}/{y}": median[x] / median[y] for x, y in (("b", "a"), ("b", "a*"), ("b'", "a"), ("b", "c"))}
    print("\n" + "   ".join(f"ratio {name}: {value:.2f}x" for name, value in ratios.items()))
    result = {
        "messages": total,
        "chunk": args.chunk,
        "median_msgs_per_s": {k: round(v) for k, v in median.items()},
        "cold_seconds": round(cold, 2),
        "session_seconds": round(session_seconds, 2),
        "ratios": {name: round(value, 2) for name, value in ratios.items()},
        "cores": {k: {role: round(v, 2) for role, v in roles.items()} for k, roles in busy.items()},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
