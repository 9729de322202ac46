"""Benchmark: the drain submitted to a Spark standalone cluster, beside the same submission to local[2].

A backlog of N messages (default 300,000) of 200 bytes on 3 partitions, 90% on partition 0, is produced once
on Apache Kafka (the test rig's KRaft broker, 127.0.0.1). Then, per repetition, side by side, each through the
drain remediation as the bot runs it for a non-local master (spark-submit in client mode, the job file,
Parquet written by the tasks, manifest, offsets committed), the group reset to 0 and the sink emptied before:

(l) `--master local[2]` through spark-submit: driver and tasks in one JVM;
(s) `--master spark://127.0.0.1:PORT`: a master and two workers (1 core, 1 GiB each) from pyspark's own
    spark-class, the tasks in the workers' executors.

Each time is the whole submission: JVM start, executors, job, commit. Prints seconds and messages/s (median,
min, max) and the ratio s/l. Results are recorded in bench/README.md.

    .venv/bin/python bench/drain_standalone.py [--messages 300000] [--chunk 50000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lagbot.core.config import build_settings
from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.engine.check import Checker
from lagbot.engine.window import MemoryWindowStore
from lagbot.remediations.drain.context import DrainContext
from lagbot.remediations.drain.params import DrainParams
from lagbot.remediations.drain.remediation import DrainRemediation
from lagbot.remediations.drain.settings import DrainSettings
from tests.support.spark_cluster import StandaloneCluster, loopback_env

TOPIC = "user-events"
GROUP = "bench-standalone"
VALUE = b"v" * 200
SHARE = {0: 0.90, 1: 0.05, 2: 0.05}
CONF = {"spark.ui.enabled": "false", "spark.executor.memory": "512m", "spark.cores.max": "2"}


def produce(bootstrap: str, total: int) -> None:
    counts = {p: round(total * share) for p, share in SHARE.items()}
    counts[0] += total - sum(counts.values())
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000})
    for partition, n in counts.items():
        for i in range(n):
            while True:
                try:
                    producer.produce(TOPIC, key=str(i).encode(), value=VALUE, partition=partition)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
    assert producer.flush(120) == 0, "backlog not delivered"


def reset(admin: AdminClient) -> None:
    """The group's offsets back to 0, retried while the broker answers per partition that its group
    coordinator is not ready (a fresh broker: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS)."""
    request = ConsumerGroupTopicPartitions(GROUP, [TopicPartition(TOPIC, p, 0) for p in SHARE])
    deadline = time.monotonic() + 60
    while True:
        done = admin.alter_consumer_group_offsets([request])[GROUP].result(30)
        errors = [tp.error for tp in done.topic_partitions if tp.error is not None]
        if not errors:
            return
        assert time.monotonic() < deadline, f"resetting {GROUP} failed for 60 s: {errors[0]}"
        time.sleep(0.5)


def drain_once(bootstrap: str, admin: AdminClient, master: str, sink: Path, chunk: int) -> tuple[float, float, int]:
    """Seconds of one whole drain (plan excluded), seconds of it before the job's first progress report
    (JVMs, executors, session), and the messages it drained."""
    reset(admin)
    shutil.rmtree(sink, ignore_errors=True)
    settings = build_settings(
        {"clusters": [{"name": "bench", "bootstrap_servers": bootstrap, "groups": {"include": [GROUP]}}]},
        source="bench",
    )
    report = Checker(settings, MemoryWindowStore(samples=2, ttl=60)).run(1, 0)
    assert len(report.verdicts) == 1, f"group {GROUP}: {report.cluster_errors or 'not listed by the broker'}"
    [verdict] = report.verdicts
    params = DrainParams(sink=str(sink), master=master, chunk=chunk, slots=2)
    plan = DrainRemediation().plan(verdict, params, now=time.time())
    first: list[float] = []
    context = DrainContext(
        admin=admin,
        progress=lambda _line: None,
        kafka_config={"bootstrap.servers": bootstrap},
        drain_settings=DrainSettings(master=master, spark_conf=CONF),
        on_progress=lambda _p: first.append(time.perf_counter()),
    )  # fmt: skip
    started = time.perf_counter()
    outcome = DrainRemediation().execute(plan, context)
    elapsed = time.perf_counter() - started
    assert outcome.ok, outcome.detail
    return elapsed, (first[0] if first else started) - started, int(plan.after["offsets"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=300_000)
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    import os

    os.environ.update(loopback_env())
    work = Path(tempfile.mkdtemp(prefix="lagbot-bench-standalone-"))
    try:
        with ApacheKafka().start() as kafka, StandaloneCluster(work / "spark", workers=2, cores=1) as cluster:
            admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
            admin.create_topics([NewTopic(TOPIC, len(SHARE), 1)])[TOPIC].result(30)
            produce(kafka.bootstrap, args.messages)
            times: dict[str, list[float]] = {"local[2]": [], "standalone": []}
            jobs: dict[str, list[float]] = {"local[2]": [], "standalone": []}
            for _ in range(args.repeat):
                for label, master in (("local[2]", "local[2]"), ("standalone", cluster.url)):
                    seconds, startup, drained = drain_once(kafka.bootstrap, admin, master, work / "sink", args.chunk)
                    assert drained == args.messages, f"{label} drained {drained}"
                    times[label].append(seconds)
                    jobs[label].append(seconds - startup)
                    print(f"  {label:<11} {seconds:6.1f} s whole, {startup:5.1f} s to the first report, "
                          f"{drained / (seconds - startup):9,.0f} msg/s after it", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{args.messages:,} messages, chunk {args.chunk:,}, {args.repeat} repetition(s), whole submissions:")
    for label, values in times.items():
        median, job = statistics.median(values), statistics.median(jobs[label])
        print(f"  {label:<11} whole: median {median:6.1f} s, min {min(values):.1f}, max {max(values):.1f}; "
              f"from the first report: median {job:6.1f} s ({args.messages / job:9,.0f} msg/s)")  # fmt: skip
    for name, table in (("whole", times), ("from the first report", jobs)):
        ratio = statistics.median(table["standalone"]) / statistics.median(table["local[2]"])
        print(f"  standalone / local[2] time, {name}: {ratio:.2f}")


if __name__ == "__main__":
    main()
