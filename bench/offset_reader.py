"""What reading committed offsets from a child process (`lagbot.engine.offset_reader`) costs, side by side with the
in-process AdminClient it replaces and with a short-lived Consumer per group (the other crash-free path).

Starts Apache Kafka (lagbot.devkit.apache_kafka), creates `--groups` groups each with committed offsets on one
partition of each of `--topics` topics, then times, in one run:

- **in-process admin**: DescribeGroups + ListConsumerGroupOffsets of every group from this process's
  AdminClient, all in flight together (the old path: crashes on a coordinator error, librdkafka 2.16);
- **offset reader**: the same two requests for every group through `OffsetReader.read` (the child process),
  plus the JSON round trip; the child's start is timed apart (once per bot, and after a crash);
- **consumer per group**: for `--sample` groups, a Consumer with that group.id, `committed()` of its known
  partitions, `close()`: the per-group cost, times the number of groups.

    .venv/bin/python bench/offset_reader.py --groups 2000 --topics 5 --cycles 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import wait
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.engine.offset_reader import OffsetReader


def seed(admin: AdminClient, groups: list[str], topics: list[str]) -> None:
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
        future.result(30)
    for start in range(0, len(groups), 200):
        futures = []
        for group in groups[start : start + 200]:
            request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, 0, 7) for t in topics])
            futures += list(admin.alter_consumer_group_offsets([request]).values())
        for future in futures:
            future.result(60)


def in_process(admin: AdminClient, groups: list[str]) -> None:
    described = admin.describe_consumer_groups(groups, request_timeout=30)
    fetched = [admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)])[g] for g in groups]
    wait([*described.values(), *fetched], timeout=60)
    assert all(f.result().topic_partitions for f in fetched)


def through_reader(reader: OffsetReader, groups: list[str]) -> None:
    answers = reader.read(groups, 30)
    assert all(not isinstance(a.committed, str) and a.committed for a in answers.values())


def consumer_each(bootstrap: str, groups: list[str], topics: list[str]) -> None:
    for group in groups:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            assert all(tp.offset == 7 for tp in consumer.committed([TopicPartition(t, 0) for t in topics], 30))
        finally:
            consumer.close()


def child_rss_mb(reader: OffsetReader) -> float:
    status = Path(f"/proc/{reader.child_pid}/status").read_text()
    [kb] = [line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(kb) / 1024


def timed(run: object, cycles: int) -> float:
    samples = []
    for _ in range(cycles):
        started = time.perf_counter()
        run()  # type: ignore[operator]
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--topics", type=int, default=5)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--sample", type=int, default=50, help="groups timed with a consumer each")
    options = parser.parse_args()
    groups = [f"bench-group-{i:05d}" for i in range(options.groups)]
    topics = [f"bench-topic-{i}" for i in range(options.topics)]
    with ApacheKafka() as kafka:
        kafka.start()
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
        seed(admin, groups, topics)
        reader = OffsetReader({"bootstrap.servers": kafka.bootstrap})
        started = time.perf_counter()
        through_reader(reader, groups[:1])
        child_start = time.perf_counter() - started
        in_proc = timed(lambda: in_process(admin, groups), options.cycles)
        child = timed(lambda: through_reader(reader, groups), options.cycles)
        per_consumer = timed(lambda: consumer_each(kafka.bootstrap, groups[: options.sample], topics), 1)
        per_consumer *= len(groups) / options.sample
        rss = child_rss_mb(reader)
        reader.close()
    print(f"{options.groups} groups x {options.topics} partitions, median of {options.cycles} cycles (Apache Kafka)")
    print(f"  in-process admin (crashes)  {in_proc:7.3f} s/cycle")
    print(f"  offset reader (child)       {child:7.3f} s/cycle   x{child / in_proc:.2f} of in-process")
    print(f"  consumer per group          {per_consumer:7.3f} s/cycle   x{per_consumer / in_proc:.1f} of in-process")
    print(f"  offset reader child start   {child_start:7.3f} s (once, and after each crash)")
    print(f"  reader child RSS            {rss:7.0f} MB (after the cycles)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
