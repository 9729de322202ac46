"""Benchmark: one full check cycle (collect + evaluate + diagnose) against the naive per-partition approach.

Creates G groups x P partitions with committed offsets on the embedded broker, then in the same run:
- times full check cycles of lagbot (median of several) once the window is full (30 samples per partition,
  the steady state of a running bot), with the in-memory and the Redis window store;
- counts the broker requests of a cycle exactly, from librdkafka's statistics (per request type);
- repeats the cycle for a second set of groups with a quarter of the partitions, to show that the
  request count follows groups and brokers, not partitions;
- times the naive approach of the seed scripts: per group a consumer, per partition `committed()` and
  `get_watermark_offsets()` (two requests per partition).
Prints figures and ratios. Results are recorded in bench/README.md.

    .venv/bin/python bench/check_cycle.py [--groups 500] [--partitions 20] [--cycles 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import wait
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bot.check import Checker
from bot.config import ClusterConfig, Settings, build_settings
from bot.embedded import EmbeddedBroker, EmbeddedRedis, exact_producer, produce
from bot.window import MemoryWindowStore, RedisWindowStore, WindowStore

GROUPS_PER_TOPIC = 20
WINDOW = 30  # samples per partition: the default of the bot
MESSAGES_PER_PARTITION = 3


class RequestCounter:
    """Broker requests sent by an AdminClient, from librdkafka's statistics callback.

    The total is each broker's `tx` (every request sent). librdkafka itemises only some request types
    in `req` (OffsetFetch and DescribeGroups are not among them), so the breakdown shows the itemised
    ones and puts the rest under "other".
    """

    def __init__(self) -> None:
        self.latest: Counter[str] = Counter()

    def __call__(self, stats_json: str) -> None:
        counts: Counter[str] = Counter()
        for broker in json.loads(stats_json).get("brokers", {}).values():
            counts.update({k: v for k, v in broker.get("req", {}).items() if v})
            counts["total"] += broker.get("tx", 0)
        self.latest = counts

    def snapshot(self, admin: AdminClient) -> Counter[str]:
        time.sleep(0.25)  # one statistics interval (100 ms) and a margin
        admin.poll(0)
        return Counter(self.latest)


def breakdown(requests: Counter[str]) -> dict[str, int]:
    itemised = {k: v for k, v in requests.items() if k != "total"}
    return {**dict(sorted(itemised.items())), "other": requests["total"] - sum(itemised.values())}


def setup(bootstrap: str, prefix: str, groups: int, partitions: int) -> list[str]:
    """Topics of `partitions` partitions, GROUPS_PER_TOPIC groups per topic, offsets committed."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [f"{prefix}-t{i}" for i in range((groups + GROUPS_PER_TOPIC - 1) // GROUPS_PER_TOPIC)]
    for future in admin.create_topics([NewTopic(t, partitions, 1) for t in topics]).values():
        future.result(30)
    producer = exact_producer(bootstrap)
    for topic in topics:
        for p in range(partitions):
            produce(producer, topic, p, MESSAGES_PER_PARTITION)
    names = [f"{prefix}-g{i}" for i in range(groups)]
    futures = []
    for i, group in enumerate(names):
        topic = topics[i // GROUPS_PER_TOPIC]
        offsets = [TopicPartition(topic, p, 1) for p in range(partitions)]
        futures += admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, offsets)]).values()
    wait(futures, timeout=120)
    for future in futures:
        future.result(0)
    return names


def settings_for(bootstrap: str, prefix: str) -> Settings:
    return build_settings(
        {
            "clusters": [{"name": "bench", "bootstrap_servers": bootstrap, "groups": {"include": [f"{prefix}-g.*"]}}],
            "window": {"samples": WINDOW},
        },
        source="bench",
    )


def time_cycles(settings: Settings, store: WindowStore, cycles: int) -> tuple[list[float], Counter[str], int]:
    """Seconds per full cycle, the requests of the last cycle by type, and the groups judged."""
    counter = RequestCounter()
    admins: list[AdminClient] = []

    def factory(cluster: ClusterConfig) -> AdminClient:
        admin = AdminClient({**cluster.client_config(), "statistics.interval.ms": 100, "stats_cb": counter})
        admins.append(admin)
        return admin

    checker = Checker(settings, store, admin_factory=factory)
    # Warm-up until the window is full: the steady state of a running bot (every rule sees N samples).
    for _ in range(settings.window.samples):
        checker.cycle()
    seconds: list[float] = []
    requests: Counter[str] = Counter()
    groups = 0
    for _ in range(cycles):
        before = counter.snapshot(admins[0])
        started = time.perf_counter()
        report = checker.cycle()
        seconds.append(time.perf_counter() - started)
        requests = counter.snapshot(admins[0]) - before
        groups = len(report.verdicts)
        assert not report.cluster_errors, report.cluster_errors
    return seconds, requests, groups


def naive(bootstrap: str, groups: list[str], partitions: int) -> tuple[float, int]:
    """The seed scripts' way: per group a consumer; per partition committed() and end offsets."""
    started = time.perf_counter()
    calls = 0
    for i, group in enumerate(groups):
        topic = f"{group.rsplit('-g', 1)[0]}-t{i // GROUPS_PER_TOPIC}"
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        for p in range(partitions):
            tp = TopicPartition(topic, p)
            committed = consumer.committed([tp], timeout=10)[0].offset
            _, high = consumer.get_watermark_offsets(tp, timeout=10)
            assert high - committed == MESSAGES_PER_PARTITION - 1
            calls += 2
        consumer.close()
    return time.perf_counter() - started, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--cycles", type=int, default=5)
    args = parser.parse_args()
    small = max(1, args.partitions // 4)

    with EmbeddedBroker().start() as broker, EmbeddedRedis().start() as redis_server:
        print(f"setting up {args.groups} groups x {args.partitions} partitions (and x {small}) ...", flush=True)
        t0 = time.perf_counter()
        big_groups = setup(broker.bootstrap, "big", args.groups, args.partitions)
        setup(broker.bootstrap, "small", args.groups, small)
        print(f"setup took {time.perf_counter() - t0:.1f} s", flush=True)

        memory = time_cycles(settings_for(broker.bootstrap, "big"), MemoryWindowStore(samples=WINDOW), args.cycles)
        client = redis.Redis.from_url(redis_server.url)
        in_redis = time_cycles(
            settings_for(broker.bootstrap, "big"), RedisWindowStore(client, samples=WINDOW), args.cycles
        )
        fewer = time_cycles(settings_for(broker.bootstrap, "small"), MemoryWindowStore(samples=WINDOW), args.cycles)
        naive_seconds, naive_calls = naive(broker.bootstrap, big_groups, args.partitions)

    report(args, small, memory, in_redis, fewer, naive_seconds, naive_calls)


def report(
    args: Any,
    small: int,
    memory: tuple[list[float], Counter[str], int],
    in_redis: tuple[list[float], Counter[str], int],
    fewer: tuple[list[float], Counter[str], int],
    naive_seconds: float,
    naive_calls: int,
) -> None:
    gp = args.groups * args.partitions
    print()
    print(f"{'what':58} {'median s':>9} {'min s':>7} {'requests':>9}")
    rows = [
        (f"lagbot cycle, memory window ({args.groups} x {args.partitions} = {gp} group-partitions)", memory),
        (f"lagbot cycle, Redis window  ({args.groups} x {args.partitions})", in_redis),
        (f"lagbot cycle, memory window ({args.groups} x {small})", fewer),
    ]
    for label, (seconds, requests, groups) in rows:
        assert groups == args.groups, (label, groups)
        print(f"{label:58} {statistics.median(seconds):9.3f} {min(seconds):7.3f} {requests['total']:9d}")
    print(f"{'naive: committed() + watermarks per partition':58} {naive_seconds:9.3f} {'':>7} {naive_calls:9d}")
    print()
    median = statistics.median(memory[0])
    print(f"speed-up over naive (memory window): {naive_seconds / median:.1f}x")
    print(f"speed-up over naive (Redis window):  {naive_seconds / statistics.median(in_redis[0]):.1f}x")
    print(f"requests per cycle by type ({args.partitions} partitions): {breakdown(memory[1])}")
    print(f"requests per cycle by type ({small} partitions):  {breakdown(fewer[1])}")
    big, little = memory[1]["total"], fewer[1]["total"]
    print(
        f"requests, {args.partitions} vs {small} partitions per group: {big} vs {little} "
        f"(ratio {big / max(1, little):.2f}; partitions ratio {args.partitions / small:.0f})"
    )


if __name__ == "__main__":
    main()
