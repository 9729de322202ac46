"""Benchmark: one full check cycle (collect + evaluate + diagnose) against the naive per-partition approach.

Creates G groups x P partitions with committed offsets on the embedded broker, then in the same run:
- times full check cycles of lagbot (median of several) once the window is full (30 samples per partition,
  the steady state of a running bot), with the in-memory and the Redis window store;
- counts the broker requests of a cycle exactly, from librdkafka's statistics (per request type);
- repeats the cycle for a second set of groups with a quarter of the partitions, to show that the
  request count follows groups and brokers, not partitions;
- times the naive approach of the seed scripts: per group a consumer, per partition `committed()` and
  `get_watermark_offsets()` (two requests per partition).
Prints figures and ratios, and the time CPython's garbage collector took inside the timed cycles. The
process runs with the collector thresholds of `lagbot run` (`lagbot.engine.check.tune_gc`), or Python's defaults with
--gc python. With --delay-ms D the whole measurement is repeated against a second broker and redis-server
reached through bench/latency_proxy.py (D ms added each way), and both are printed side by side.
Results are recorded in bench/README.md.

    .venv/bin/python bench/check_cycle.py [--groups 500] [--partitions 20] [--cycles 5] [--gc bot|python]
                                          [--delay-ms 1]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lagbot.core.config import ClusterConfig, Settings, build_settings
from lagbot.devkit.embedded import (
    EmbeddedBroker,
    EmbeddedRedis,
    _wait_for_port,
    exact_producer,
    free_port,
    produce,
    tansu_binary,
)
from lagbot.engine.check import Checker, tune_gc
from lagbot.engine.collector import ClusterAdmin
from lagbot.engine.window import MemoryWindowStore, RedisWindowStore, WindowStore

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


class GcClock:
    """Seconds CPython's cyclic garbage collector ran, and its full (oldest generation) collections."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        self.seconds += time.perf_counter() - self._started
        self.full += info["generation"] == 2

    @contextmanager
    def running(self) -> Iterator[Self]:
        gc.callbacks.append(self)
        try:
            yield self
        finally:
            gc.callbacks.remove(self)


@dataclass
class Cycles:
    """The timed cycles of one configuration."""

    seconds: list[float]
    requests: Counter[str]
    groups: int
    gc_seconds: float
    """Collector time inside the timed cycles, all of them together."""
    gc_full: int
    """Full collections inside the timed cycles."""
    gc_full_warmup: int
    """Full collections during the warm-up cycles (the window filling)."""

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def time_cycles(settings: Settings, store: WindowStore, cycles: int) -> Cycles:
    """Seconds per full cycle, the requests of the last cycle by type, the groups judged and the collector's share."""
    counter = RequestCounter()
    admins: list[AdminClient] = []

    def factory(cluster: ClusterConfig) -> AdminClient:
        admin = ClusterAdmin({**cluster.client_config(), "statistics.interval.ms": 100, "stats_cb": counter})
        admins.append(admin)
        return admin

    checker = Checker(settings, store, admin_factory=factory)
    # Warm-up until the window is full: the steady state of a running bot (every rule sees N samples).
    with GcClock().running() as warmup:
        for _ in range(settings.window.samples):
            checker.cycle()
    seconds: list[float] = []
    requests: Counter[str] = Counter()
    groups = 0
    timed = GcClock()
    for _ in range(cycles):
        before = counter.snapshot(admins[0])
        with timed.running():
            started = time.perf_counter()
            report = checker.cycle()
            seconds.append(time.perf_counter() - started)
        requests = counter.snapshot(admins[0]) - before
        groups = len(report.verdicts)
        assert not report.cluster_errors, report.cluster_errors
    return Cycles(seconds, requests, groups, timed.seconds, timed.full, warmup.full)


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


class DelayedBroker(EmbeddedBroker):
    """The embedded broker advertising a proxy's port, so that every client connection goes through it."""

    def __init__(self, advertised_port: int) -> None:
        super().__init__()
        self.advertised_port = advertised_port

    def start(self, timeout: float = 20.0) -> Self:
        self.port = free_port()
        argv = [
            tansu_binary(),
            "broker",
            "--listener-url",
            f"tcp://127.0.0.1:{self.port}",
            "--advertised-listener-url",
            f"tcp://127.0.0.1:{self.advertised_port}",
            "--storage-engine",
            "memory://tansu/",
        ]
        self._spawn(argv, timeout)
        return self


@contextmanager
def latency_proxy(target: int, delay_ms: float, listen: int | None = None) -> Iterator[int]:
    """bench/latency_proxy.py in front of 127.0.0.1:`target`; yields the port it listens on."""
    port = listen or free_port()
    script = Path(__file__).resolve().parent / "latency_proxy.py"
    argv = [sys.executable, str(script), "--listen", str(port), "--target", str(target), "--delay-ms", str(delay_ms)]
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
    try:
        _wait_for_port(port, process, "latency proxy", 10.0)
        yield port
    finally:
        process.terminate()
        process.wait(10)


@dataclass
class Measured:
    memory: Cycles
    in_redis: Cycles
    fewer: Cycles
    naive_seconds: float
    naive_calls: int


def measure(args: Any, small: int, delay_ms: float) -> Measured:
    """Set up the groups, then time the cycles and the naive approach; through the latency proxy if delay_ms."""
    if not delay_ms:
        with EmbeddedBroker().start() as broker, EmbeddedRedis().start() as redis_server:
            return measure_on(args, small, broker.bootstrap, redis_server.url)
    proxy_port = free_port()
    with (
        DelayedBroker(proxy_port).start() as broker,
        EmbeddedRedis().start() as redis_server,
        latency_proxy(broker.port, delay_ms, listen=proxy_port),
        latency_proxy(redis_server.port, delay_ms) as redis_port,
    ):
        direct, proxied = round_trip_ms(redis_server.url), round_trip_ms(f"redis://127.0.0.1:{redis_port}/0")
        print(f"round trip (Redis PING, median of 200): direct {direct:.3f} ms, through the proxy {proxied:.3f} ms")
        return measure_on(args, small, f"127.0.0.1:{proxy_port}", f"redis://127.0.0.1:{redis_port}/0")


def round_trip_ms(url: str) -> float:
    """Median round trip of a Redis PING, in ms: what the proxy really adds (asyncio timers overshoot a little)."""
    client = redis.Redis.from_url(url)
    client.ping()
    times = []
    for _ in range(200):
        started = time.perf_counter()
        client.ping()
        times.append(time.perf_counter() - started)
    client.close()
    return statistics.median(times) * 1000


def measure_on(args: Any, small: int, bootstrap: str, redis_url: str) -> Measured:
    print(f"setting up {args.groups} groups x {args.partitions} partitions (and x {small}) ...", flush=True)
    t0 = time.perf_counter()
    big_groups = setup(bootstrap, "big", args.groups, args.partitions)
    setup(bootstrap, "small", args.groups, small)
    print(f"setup took {time.perf_counter() - t0:.1f} s", flush=True)

    memory = time_cycles(settings_for(bootstrap, "big"), MemoryWindowStore(samples=WINDOW), args.cycles)
    client = redis.Redis.from_url(redis_url)
    in_redis = time_cycles(settings_for(bootstrap, "big"), RedisWindowStore(client, samples=WINDOW), args.cycles)
    fewer = time_cycles(settings_for(bootstrap, "small"), MemoryWindowStore(samples=WINDOW), args.cycles)
    naive_seconds, naive_calls = naive(bootstrap, big_groups, args.partitions)
    return Measured(memory, in_redis, fewer, naive_seconds, naive_calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument(
        "--gc",
        choices=["bot", "python"],
        default="bot",
        help="collector thresholds: those `lagbot run` sets (lagbot.engine.check.tune_gc) or Python's defaults",
    )
    parser.add_argument("--delay-ms", type=float, default=0.0, help="also measure through a proxy adding this each way")
    args = parser.parse_args()
    small = max(1, args.partitions // 4)
    if args.gc == "bot":
        tune_gc()
    print(f"collector thresholds {gc.get_threshold()} ({args.gc})", flush=True)

    results = {"loopback": measure(args, small, 0.0)}
    if args.delay_ms:
        results[f"+{args.delay_ms:g} ms each way"] = measure(args, small, args.delay_ms)
    for name, measured in results.items():
        report(args, small, name, measured)
    if len(results) > 1:
        side_by_side(args, small, results)


def report(args: Any, small: int, name: str, m: Measured) -> None:
    gp = args.groups * args.partitions
    print()
    print(f"== {name}")
    print(f"{'what':58} {'median s':>9} {'min s':>7} {'requests':>9} {'gc s/cycle':>11} {'full gc':>8}")
    rows = [
        (f"lagbot cycle, memory window ({args.groups} x {args.partitions} = {gp} group-partitions)", m.memory),
        (f"lagbot cycle, Redis window  ({args.groups} x {args.partitions})", m.in_redis),
        (f"lagbot cycle, memory window ({args.groups} x {small})", m.fewer),
    ]
    for label, cycles in rows:
        assert cycles.groups == args.groups, (label, cycles.groups)
        gc_per_cycle = cycles.gc_seconds / len(cycles.seconds)
        full = f"{cycles.gc_full}/{len(cycles.seconds)}"
        print(
            f"{label:58} {cycles.median:9.3f} {min(cycles.seconds):7.3f} {cycles.requests['total']:9d} "
            f"{gc_per_cycle:11.3f} {full:>8}"
        )
    print(f"{'naive: committed() + watermarks per partition':58} {m.naive_seconds:9.3f} {'':>7} {m.naive_calls:9d}")
    warmup = f"{m.memory.gc_full_warmup}, {m.in_redis.gc_full_warmup}"
    print(f"full collections while the windows filled (memory, Redis): {warmup}")
    print()
    print(f"speed-up over naive (memory window): {m.naive_seconds / m.memory.median:.1f}x")
    print(f"speed-up over naive (Redis window):  {m.naive_seconds / m.in_redis.median:.1f}x")
    print(f"requests per cycle by type ({args.partitions} partitions): {breakdown(m.memory.requests)}")
    print(f"requests per cycle by type ({small} partitions):  {breakdown(m.fewer.requests)}")
    big, little = m.memory.requests["total"], m.fewer.requests["total"]
    print(
        f"requests, {args.partitions} vs {small} partitions per group: {big} vs {little} "
        f"(ratio {big / max(1, little):.2f}; partitions ratio {args.partitions / small:.0f})"
    )


def side_by_side(args: Any, small: int, results: dict[str, Measured]) -> None:
    names = list(results)
    print()
    print(f"{'median seconds':40}" + "".join(f"{n:>24}" for n in names))
    rows = [
        (f"lagbot cycle, memory ({args.groups} x {args.partitions})", lambda m: m.memory.median),
        (f"lagbot cycle, Redis ({args.groups} x {args.partitions})", lambda m: m.in_redis.median),
        (f"lagbot cycle, memory ({args.groups} x {small})", lambda m: m.fewer.median),
        ("naive", lambda m: m.naive_seconds),
        ("speed-up, memory window (x)", lambda m: m.naive_seconds / m.memory.median),
        ("speed-up, Redis window (x)", lambda m: m.naive_seconds / m.in_redis.median),
    ]
    for label, value in rows:
        print(f"{label:40}" + "".join(f"{value(results[n]):24.3f}" for n in names))


if __name__ == "__main__":
    main()
