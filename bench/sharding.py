"""Benchmark + simulation: a check cycle of 1,000,000 group-partitions split over N workers, from costs measured
in the same run.

1. Measured: the real check (`Checker` with the Redis window store of 30 samples, windows full, `tune_gc` as
   `lagbot run` sets it) on Apache Kafka 4.1, at two small sizes (--sizes, groups of --partitions partitions, 20
   groups a topic). Per size, medians of --cycles of this process's CPU seconds (and wall seconds, printed):
   the collect (the broker requests; librdkafka's threads included) and the rest (append, windows, evaluate,
   diagnose). A straight line through the two sizes gives, per cycle, a fixed cost and a cost per
   group-partition for each part: what one core spends, the limit of one process (one interpreter).
2. The single-process ceiling: the group-partitions one process checks within 60 s at the measured costs.
3. Simulated: an estate of --total group-partitions in --clusters clusters of unequal sizes (the largest holds
   a third; sizes fall off as 1/rank), groups of --partitions partitions, split over N workers (a) by cluster
   (each worker checks whole clusters, the biggest first onto the least loaded worker) and (b) by cluster, then by
   group hash (every cluster's groups spread over all workers by a hash of the group name: each worker pays
   every cluster's fixed cost and its share of the groups). A worker's cycle is the sum over its clusters of
   fixed + per-group-partition costs (one process per worker, one core each); the cycle is the slowest worker's.

    .venv/bin/python bench/sharding.py [--sizes 100,400] [--partitions 50] [--cycles 3] [--total 1000000]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis

from lagbot.core.config import build_settings
from lagbot.devkit.apache_kafka import ApacheKafka, pinned_version
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.engine.check import Checker, tune_gc
from lagbot.engine.window import RedisWindowStore

WORKERS = (1, 2, 4, 8, 16, 32)
MINUTE = 60.0


@dataclasses.dataclass(frozen=True)
class Costs:
    """Seconds per cycle: fixed + per group-partition, for the collect and for the rest (judging)."""

    collect_fixed: float
    collect_per_gp: float
    judge_fixed: float
    judge_per_gp: float

    def cycle(self, group_partitions: float) -> float:
        return self.collect_fixed + self.judge_fixed + group_partitions * (self.collect_per_gp + self.judge_per_gp)

    def ceiling(self, seconds: float = MINUTE) -> float:
        """Group-partitions one process checks within `seconds`."""
        return (seconds - self.collect_fixed - self.judge_fixed) / (self.collect_per_gp + self.judge_per_gp)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


Measured = tuple[int, float, float, float, float]
"""(group-partitions, median collect CPU s, median judge CPU s, median collect wall s, median judge wall s)"""


def measure(bootstrap: str, redis_url: str, prefix: str, cycles: int) -> Measured:
    """The real check, windows full: CPU seconds of this process (all its threads, librdkafka's included) and of
    its offset reader child (which sends the per-group requests), and wall seconds, for the collect and for the
    judging. The model uses CPU: on this shared machine the wall time
    of a small cycle is mostly waiting for a core, which would hide how the cost grows."""
    settings = build_settings(
        {"clusters": [{"name": prefix, "bootstrap_servers": bootstrap, "groups": {"include": [f"{prefix}-g.*"]}}]},
        source="bench",
    )
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    store = RedisWindowStore(client, samples=settings.window.samples, ttl=settings.window.ttl)
    checker = Checker(settings, store)
    first = checker.sample()[prefix]
    assert first.error is None, first.error
    for back in range(settings.window.samples - 1, 0, -1):
        store.append(dataclasses.replace(first, taken_at=first.taken_at - back * 30.0))
    checker.evaluate({prefix: first})
    collect, judge, collect_cpu, judge_cpu, gp = [], [], [], [], 0
    reader = checker.admin(prefix).offsets  # the child process that sends the per-group requests
    for _ in range(cycles):
        started, own, child = time.perf_counter(), time.process_time(), _cpu_of(reader.child_pid)
        snapshots = checker.sample()
        collected, own_collected, child_collected = time.perf_counter(), time.process_time(), _cpu_of(reader.child_pid)
        report = checker.evaluate(snapshots)
        collect.append(collected - started)
        judge.append(time.perf_counter() - collected)
        collect_cpu.append(own_collected - own + child_collected - child)
        judge_cpu.append(time.process_time() - own_collected)
        gp = sum(len(v.partitions) for v in report.verdicts)
    median = statistics.median
    return gp, median(collect_cpu), median(judge_cpu), median(collect), median(judge)


def _cpu_of(pid: int | None) -> float:
    """CPU seconds (user + system) a process has used so far; 0 for none."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fit(small: Measured, big: Measured) -> Costs:
    (n1, c1, j1, _, _), (n2, c2, j2, _, _) = small, big
    c_slope, j_slope = (c2 - c1) / (n2 - n1), (j2 - j1) / (n2 - n1)
    return Costs(max(0.0, c1 - c_slope * n1), c_slope, max(0.0, j1 - j_slope * n1), j_slope)


def estate(total: int, clusters: int) -> list[int]:
    """Group-partitions per cluster: the biggest holds about a third, sizes fall off as 1/rank."""
    weights = [1.0 / rank for rank in range(1, clusters + 1)]
    return [round(total * w / sum(weights)) for w in weights]


def by_cluster(sizes: list[int], workers: int, costs: Costs) -> float:
    """Whole clusters per worker, the biggest first onto the least loaded one: the slowest worker's cycle."""
    loads = [0.0] * workers
    for size in sorted(sizes, reverse=True):
        i = loads.index(min(loads))
        loads[i] += costs.cycle(size)
    return max(loads)


def by_group_hash(sizes: list[int], workers: int, costs: Costs, partitions: int) -> float:
    """Every cluster's groups spread over the workers by a hash of their name: the slowest worker's cycle."""
    loads = [0.0] * workers
    for c, size in enumerate(sizes):
        shares = [0] * workers
        for g in range(size // partitions):
            digest = hashlib.blake2b(f"cluster{c}/group{g}".encode(), digest_size=8).digest()
            shares[int.from_bytes(digest, "big") % workers] += partitions
        for w in range(workers):
            loads[w] += costs.cycle(shares[w]) if shares[w] else 0.0
    return max(loads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,400", help="groups at the two measured sizes")
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--total", type=int, default=1_000_000)
    parser.add_argument("--clusters", type=int, default=10)
    args = parser.parse_args()
    from estate import build_estate

    tune_gc()
    print(f"load average before: {load()} ({os.cpu_count()} cores)", flush=True)
    measured = []
    with ApacheKafka().start() as broker, EmbeddedRedis().start() as redis_server:
        print(f"Apache Kafka {pinned_version()} on {broker.bootstrap}", flush=True)
        for groups in (int(s) for s in args.sizes.split(",")):
            prefix = f"sh{groups}"
            build_estate(broker.bootstrap, prefix, groups, args.partitions, 20)
            measured.append(measure(broker.bootstrap, redis_server.url, prefix, args.cycles))
            gp, collect, judge, collect_wall, judge_wall = measured[-1]
            print(f"measured {gp:,} group-partitions, medians of {args.cycles}: collect {collect:.3f} CPU s "
                  f"({collect_wall:.3f} s wall), judge {judge:.3f} CPU s ({judge_wall:.3f} s wall); load {load()}",
                  flush=True)  # fmt: skip
    print(f"load average after: {load()}")
    costs = fit(measured[0], measured[-1])
    print(f"\nCPU per cycle (one core): collect {costs.collect_fixed:.3f} s + {costs.collect_per_gp * 1e6:.1f} us/gp, "
          f"judge {costs.judge_fixed:.3f} s + {costs.judge_per_gp * 1e6:.1f} us/gp")  # fmt: skip
    ceiling = costs.ceiling()
    verdict = "below" if ceiling < args.total else "above"
    print(f"single-process ceiling: {ceiling:,.0f} group-partitions per {MINUTE:g} s cycle ({verdict} "
          f"{args.total:,}); one process would take {costs.cycle(args.total):.1f} s for {args.total:,}")  # fmt: skip
    (n1, _, _, cw1, jw1), (n2, _, _, cw2, jw2) = measured[0], measured[-1]
    wall = Costs(0.0, 0.0, 0.0, ((cw2 + jw2) - (cw1 + jw1)) / (n2 - n1))
    print(f"by wall-clock time on this machine at this load: {wall.judge_per_gp * 1e6:.1f} us/gp, ceiling "
          f"{wall.ceiling():,.0f} group-partitions per {MINUTE:g} s")  # fmt: skip
    sizes = estate(args.total, args.clusters)
    print(f"\nsimulated estate: {args.total:,} group-partitions in {args.clusters} clusters {sizes}, "
          f"groups of {args.partitions} partitions")  # fmt: skip
    print(f"{'workers':>7} {'by cluster s':>13} {'+ group hash s':>15} {'ideal s':>8} {'hash / ideal':>12}")
    for n in WORKERS:
        whole = by_cluster(sizes, n, costs)
        hashed = by_group_hash(sizes, n, costs, args.partitions)
        ideal = costs.cycle(args.total) / n
        print(f"{n:7d} {whole:13.2f} {hashed:15.2f} {ideal:8.2f} {hashed / ideal:12.2f}")


if __name__ == "__main__":
    main()
