"""Benchmark: the costs of the digest's side of the bot, in one run, medians side by side.

- recording one check into the lag history (memory vs a real redis-server), for G groups;
- Redis memory of one group's full history (48 h at one point a minute: 2,880 points);
- reading the history of the five worst groups for a digest;
- building the digest message of G groups, drawing the 24 h chart, rendering /metrics for G x P partitions.

    .venv/bin/python bench/digest.py [--groups 5000] [--partitions 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from lagbot.core.model import GroupState, GroupVerdict, PartitionVerdict, Severity, Status
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.engine.check import CheckReport
from lagbot.service.digest import IncidentSummary
from lagbot.service.history import HistoryStore, MemoryHistoryStore, RedisHistoryStore
from lagbot.service.metrics import Metrics
from lagbot.slack.digest import build_digest, chart_series, lag_chart, load_series, worst

NOW = 1_710_234_000.0
UTC = ZoneInfo("UTC")


def verdicts(groups: int, partitions: int) -> list[GroupVerdict]:
    found = []
    for g in range(groups):
        parts = tuple(
            PartitionVerdict(f"topic-{g % 50}", p, 1_000 * g, 1_000 * g + p, 0, p, float(p), False, Status.OK, "",
                             None, None, None)
            for p in range(partitions)
        )  # fmt: skip
        found.append(
            GroupVerdict("prod", f"group-{g:05}", GroupState.STABLE, Status(g % 5), Severity.OK, "", parts,
                         sum(range(partitions)), float(g % 600), None, None, None, "steady")
        )  # fmt: skip
    return found


def median_ms(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def record_cycles(store: HistoryStore, latest: list[GroupVerdict], repeat: int) -> float:
    at = iter(NOW + 60 * i for i in range(10_000))
    return median_ms(lambda: store.record(CheckReport(next(at), latest, clusters=["prod"])), repeat)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=5_000)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    latest = verdicts(args.groups, args.partitions)
    light = [GroupVerdict(v.cluster, v.group, v.state, v.status, v.severity, "", (), v.total_lag, v.max_lag_seconds,
                          None, None, None, "steady") for v in latest]  # fmt: skip
    with EmbeddedRedis().start() as server:
        client = redis.Redis.from_url(server.url)
        memory_ms = record_cycles(MemoryHistoryStore(), light, args.repeat)
        redis_store = RedisHistoryStore(client)
        redis_ms = record_cycles(redis_store, light, args.repeat)
        client.flushdb()

        full = RedisHistoryStore(client)
        one = light[:1]
        for minute in range(2_880):
            full.record(CheckReport(NOW - 48 * 3600 + 60 * (minute + 1), one, clusters=["prod"]))
        keys = client.keys("lagbot:history*")
        key_bytes = sum(client.memory_usage(key) or 0 for key in keys)
        points = sum(client.zcard(key) for key in keys if b"history:" in key)
        read_ms = median_ms(lambda: load_series(full, one * 5, now=NOW), args.repeat)

    incidents = [IncidentSummary("prod", v.group, NOW - 60, None, 1, "warn") for v in light]
    digest_ms = median_ms(
        lambda: build_digest(verdicts=light, series={}, incidents=incidents, remediations=[], now=NOW, tz=UTC),
        args.repeat,
    )
    day = {(v.cluster, v.group): [] for v in light}
    drawn = chart_series(worst(light), day, now=NOW)
    hourly = {k: [(NOW - 86_400 + 60 * i, i * (n + 1)) for i in range(1_441)] for n, k in enumerate(drawn)}
    chart_ms = median_ms(lambda: lag_chart(hourly, now=NOW, tz=UTC), args.repeat)
    png = lag_chart(hourly, now=NOW, tz=UTC)
    metrics = Metrics()
    report = CheckReport(NOW, latest, clusters=["prod"])
    first_ms = median_ms(lambda: (metrics.observe_report(report), metrics.render()), args.repeat)
    metrics_ms = median_ms(metrics.render, args.repeat)
    size = len(metrics.render())

    g, p = args.groups, args.partitions
    print(f"history.record of {g:,} groups: memory {memory_ms:.0f} ms, Redis {redis_ms:.0f} ms "
          f"(ratio {redis_ms / memory_ms:.1f}x)")  # fmt: skip
    print(f"one group's 48 h in Redis: {points:,} points, {key_bytes / 1024:.0f} KiB "
          f"({key_bytes / max(points, 1):.0f} B a point); 5 series for a digest read in {read_ms:.1f} ms")  # fmt: skip
    print(f"build_digest of {g:,} groups and {g:,} incidents: {digest_ms:.1f} ms")
    print(f"lag_chart of 5 x 1,441 points: {chart_ms:.0f} ms, {len(png) / 1024:.0f} KiB PNG")
    print(f"/metrics for {g:,} groups x {p} partitions: first scrape after a report {first_ms:.0f} ms, "
          f"later scrapes {metrics_ms:.1f} ms, {size / 1024 / 1024:.1f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
