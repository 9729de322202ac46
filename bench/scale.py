"""Benchmark: `lagbot run`'s check cycle at 10,000 and 100,000 group-partitions on Apache Kafka: time, requests, memory.

For each size, groups of P partitions sharing topics (default 50 partitions, 20 groups per topic: 200 groups for
10,000 group-partitions, 2,000 groups for 100,000; bench/estate.py) on one Apache Kafka 4.1 broker and one
redis-server. The cycle runs in a child process set up as `lagbot run` sets its check loop up: the Redis window
store (30 samples), the bot's collector thresholds (`lagbot.engine.check.tune_gc`), each cycle with the collector
paused as the bot's loop runs it (`collector_paused`). Its windows are filled first (one collected snapshot appended
at the 29 earlier cycles of a bot checking every minute, the time index asked and shown each of them as the bot
would have: every window full, the steady state), then it times real cycles (collect + append + evaluate +
diagnose) back to back, on a clock that starts each a minute after the last (`Cadence`): the time index's horizons
fall due as often as in `lagbot run`. It prints:
- seconds per cycle (median, min), split into collect + append and read windows + judge;
- the broker requests of a cycle (librdkafka's statistics): the checker's own client (cluster-wide requests), and
  every request of one collect, the per-group ones its reader child sends included (counted on a client that reads
  the groups itself);
- the child's resident memory after the cycles (VmRSS), its peak during the timed cycles (VmHWM, reset after the
  fill) and its peak while the windows were filled (29 snapshots appended at once: not a steady state), with full
  windows;
- Redis: MEMORY USAGE of every window list, per group-partition, and the estate that fits 1 GB at that rate.
Offsets do not move between cycles, so every lagging partition runs every rule to its end (the worst case).
Prints the machine's load average (the machine is shared). Results are recorded in bench/README.md.

    .venv/bin/python bench/scale.py [--sizes 10000,100000] [--partitions 50] [--cycles 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

WINDOW = 30
GIB = 1 << 30


class Cadence:
    """The clock of a bot checking every `interval` seconds, for cycles run back to back: within a cycle it runs
    as the wall clock; each `next_cycle` starts the next one `interval` after the last began. So the time index
    and the windows see what `lagbot run` shows them (its horizons due as often, its samples as far apart), while
    the benchmark does not wait between cycles."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._start = time.time()
        self._cycles = 0
        self._cycle_began = time.time()

    def next_cycle(self) -> None:
        self._cycles += 1
        self._cycle_began = time.time()

    def __call__(self) -> float:
        return self._start + self._cycles * self.interval + (time.time() - self._cycle_began)


def child(options: dict[str, Any]) -> dict[str, Any]:
    """The check loop of `lagbot run`, measured: runs in its own process so that its memory is its own."""
    import redis
    from check_cycle import GcClock, RequestCounter, breakdown
    from confluent_kafka.admin import AdminClient

    from lagbot.core.config import ClusterConfig, build_settings
    from lagbot.engine.check import Checker, collector_paused, tune_gc
    from lagbot.engine.collector import ClusterAdmin
    from lagbot.engine.window import RedisWindowStore

    tune_gc()
    cluster = {"name": "scale", "bootstrap_servers": options["bootstrap"], "groups": {"include": [options["match"]]}}
    settings = build_settings({"clusters": [cluster], "window": {"samples": WINDOW}}, source="bench")
    client = redis.Redis.from_url(options["redis_url"])
    store = RedisWindowStore(client, samples=WINDOW, ttl=settings.window.ttl)
    counter = RequestCounter()
    admins: list[AdminClient] = []

    def factory(config: ClusterConfig) -> AdminClient:
        admin = ClusterAdmin({**config.client_config(), "statistics.interval.ms": 100, "stats_cb": counter})
        admins.append(admin)
        return admin

    clock = Cadence(settings.clusters[0].check_interval)
    checker = Checker(settings, store, clock=clock, admin_factory=factory)
    started = time.perf_counter()
    snapshot = checker.sample()["scale"]
    assert snapshot.error is None, snapshot.error
    back = range(WINDOW - 1, 0, -1)  # fill the windows: the same offsets, seen at earlier cycles, oldest first
    earlier = [dataclasses.replace(snapshot, taken_at=snapshot.taken_at - n * clock.interval) for n in back]
    for seen in earlier:
        store.append(seen)
    for seen in [*earlier, snapshot]:  # what the time index was asked, and saw, at those cycles
        checker.history(seen)
    clock.next_cycle()
    checker.cycle()
    fill = time.perf_counter() - started
    fill_peak = int(_status("self")["VmHWM"].split()[0]) / 1024
    _reset_peak()  # from here VmHWM is the timed cycles' own peak: the steady state's, not the fill's
    if options.get("freeze"):
        gc.freeze()
    seconds, requests, timed = [], {}, GcClock()
    phases: list[tuple[float, float]] = []  # (collect and append, judge) of each timed cycle
    list_offsets: list[int] = []  # ListOffsets requests of each timed cycle: 2, plus the time index's horizons asked
    groups = 0
    with timed.running():  # the collector's time in and between the cycles (it resumes after each)
        for _ in range(options["cycles"]):
            before = counter.snapshot(admins[0])
            clock.next_cycle()
            with collector_paused():  # as the bot's loop runs a cycle (lagbot.service.bot `check`)
                begun = time.perf_counter()
                snapshots = checker.sample()
                collected = time.perf_counter()
                report = checker.evaluate(snapshots)
                seconds.append(time.perf_counter() - begun)
                del snapshots  # as `checker.cycle()` (what `lagbot run` calls) keeps no snapshot after judging it
                phases.append((collected - begun, time.perf_counter() - collected))
            if options.get("freeze"):
                gc.freeze()  # an experiment, not what `lagbot run` does: see --gc-freeze
            requests = dict(counter.snapshot(admins[0]) - before)
            list_offsets.append(breakdown(_counter(requests)).get("ListOffsets", 0))
            assert not report.cluster_errors, report.cluster_errors
            groups = len(report.verdicts)
    partitions = sum(len(v.partitions) for v in report.verdicts)
    full = min(len(w.samples) for w in store.windows("scale", [v.group for v in report.verdicts]).values())
    status = _status("self")
    reader = admins[0].offsets.child_pid  # committed offsets and descriptions are read by this child process
    reader_status = _status(str(reader)) if reader is not None else {"VmRSS": "0 kB"}
    whole = _requests_of_a_whole_collect(settings)  # after the memory is read: its client and snapshot are extra
    keys = list(client.scan_iter(match="lagbot:window:scale:*", count=1000))
    window_bytes = sum(int(client.memory_usage(key, samples=0) or 0) for key in keys)
    return {
        "groups": groups,
        "group_partitions": partitions,
        "samples_per_window": full,
        "fill_seconds": fill,
        "seconds": seconds,
        "phases": phases,
        "requests": requests,
        "requests_breakdown": breakdown(_counter(requests)),
        "list_offsets": list_offsets,
        "whole_collect_requests": whole,
        "gc_seconds": timed.seconds,
        "gc_full": timed.full,
        "rss_mib": int(status["VmRSS"].split()[0]) / 1024,
        "peak_rss_mib": int(status["VmHWM"].split()[0]) / 1024,
        "fill_peak_rss_mib": fill_peak,
        "reader_rss_mib": int(reader_status["VmRSS"].split()[0]) / 1024,
        "window_keys": len(keys),
        "window_bytes": window_bytes,
        "gc_objects": len(gc.get_objects()),
        "frozen": gc.get_freeze_count(),
    }


def _requests_of_a_whole_collect(settings: Any) -> dict[str, int]:
    """Every request of one collect, the per-group ones included: the checker's own client sends only the
    cluster-wide ones (its reader child sends the rest, unseen by its statistics), so one more collect is made
    by a client that reads the groups itself (`isolate_group_reads=False`, as `lagbot check` does): the same
    requests, all counted. Its second collect is counted (the first also connects and learns the cluster)."""
    from check_cycle import RequestCounter, breakdown

    from lagbot.engine.collector import ClusterAdmin, collect

    counter = RequestCounter()
    cluster = settings.clusters[0]
    config = {**cluster.client_config(), "statistics.interval.ms": 100, "stats_cb": counter}
    admin = ClusterAdmin(config, isolate_group_reads=False)
    collect(admin, cluster)
    before = counter.snapshot(admin)
    snapshot = collect(admin, cluster)
    assert snapshot.error is None, snapshot.error
    counted = counter.snapshot(admin) - before
    return {"total": counted["total"], **breakdown(counted)}


def _reset_peak() -> None:
    """Reset this process's VmHWM to its current resident size (Linux: `clear_refs` 5)."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")


def _status(pid: str) -> dict[str, str]:
    text = Path(f"/proc/{pid}/status").read_text()
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _counter(values: dict[str, int]) -> Any:
    from collections import Counter

    return Counter(values)


def run_child(options: dict[str, Any]) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--child", json.dumps(options)]
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    if completed.returncode != 0:
        raise SystemExit(f"the measured process failed:\n{completed.stderr[-3000:]}")
    return dict(json.loads(completed.stdout.strip().splitlines()[-1]))


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="group-partitions, comma-separated")
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--groups-per-topic", type=int, default=20)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument(
        "--gc-freeze",
        action="store_true",
        help="experiment: gc.freeze() after the fill and after each cycle (the bot does not do this)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return

    import redis
    from estate import build_estate

    from lagbot.devkit.apache_kafka import ApacheKafka, pinned_version
    from lagbot.devkit.embedded import EmbeddedRedis

    print(f"load average before: {load()} ({os.cpu_count()} cores)", flush=True)
    results = []
    with ApacheKafka().start() as broker, EmbeddedRedis().start() as redis_server:
        print(f"Apache Kafka {pinned_version()} on {broker.bootstrap}, redis-server on {redis_server.url}", flush=True)
        for size in (int(s) for s in args.sizes.split(",")):
            groups = size // args.partitions
            prefix = f"s{size}"
            started = time.perf_counter()
            estate = build_estate(broker.bootstrap, prefix, groups, args.partitions, args.groups_per_topic)
            print(
                f"{size}: {groups} groups x {args.partitions} partitions over {len(estate.topics)} topics, "
                f"set up in {time.perf_counter() - started:.1f} s; load {load()}",
                flush=True,
            )
            redis.Redis.from_url(redis_server.url).flushdb()
            options = {
                "bootstrap": broker.bootstrap,
                "redis_url": redis_server.url,
                "match": f"{prefix}-g.*",
                "cycles": args.cycles,
                "freeze": args.gc_freeze,
            }
            measured = run_child(options)
            assert measured["group_partitions"] == estate.group_partitions, measured["group_partitions"]
            assert measured["samples_per_window"] == WINDOW, measured["samples_per_window"]
            results.append(measured)
            print(f"  measured; load {load()}", flush=True)
    print(f"load average after:  {load()}")
    report(results)


def report(results: list[dict[str, Any]]) -> None:
    print()
    header = (
        f"{'group-partitions':>16} {'groups':>6} {'cycle s median':>14} {'min':>6} {'requests':>8} "
        f"{'RSS MiB':>8} {'cycle peak':>10} {'fill peak':>9} {'reader MiB':>10} {'Redis B/gp':>10} "
        f"{'fits 1 GiB':>12} {'gc s':>6}"
    )
    print(header)
    for r in results:
        per_gp = r["window_bytes"] / r["group_partitions"]
        print(
            f"{r['group_partitions']:16,d} {r['groups']:6d} {statistics.median(r['seconds']):14.3f} "
            f"{min(r['seconds']):6.3f} {r['requests'].get('total', 0):8d} {r['rss_mib']:8.1f} "
            f"{r['peak_rss_mib']:10.1f} {r['fill_peak_rss_mib']:9.1f} {r['reader_rss_mib']:10.1f} {per_gp:10.1f} "
            f"{int(GIB / per_gp):12,d} "
            f"{r['gc_seconds']:6.3f}"
        )
    for r in results:
        print(
            f"{r['group_partitions']:,} group-partitions: cycles {[round(s, 3) for s in r['seconds']]}, "
            f"windows filled in {r['fill_seconds']:.1f} s, requests by type {r['requests_breakdown']}, "
            f"{r['window_keys']} window lists, {r['window_bytes'] / (1 << 20):.1f} MiB in Redis "
            f"({r['window_bytes'] / r['groups'] / 1024:.1f} KiB a group of {r['group_partitions'] // r['groups']}), "
            f"{r['gc_full']} full collections; all requests of a collect {r['whole_collect_requests']}; "
            f"collect + append s {[round(c, 3) for c, _ in r['phases']]}, "
            f"read windows + judge s {[round(j, 3) for _, j in r['phases']]}, "
            f"ListOffsets requests (2 + the time index's horizons asked) {r['list_offsets']}"
        )
    if len(results) >= 2:
        small, big = results[0], results[-1]
        ratio = big["group_partitions"] / small["group_partitions"]
        cycle = statistics.median(big["seconds"]) / statistics.median(small["seconds"])
        print(
            f"{ratio:.0f}x the group-partitions: cycle {cycle:.2f}x, "
            f"requests {big['requests'].get('total', 0) / max(1, small['requests'].get('total', 0)):.2f}x, "
            f"RSS {big['rss_mib'] / small['rss_mib']:.2f}x"
        )


if __name__ == "__main__":
    main()
