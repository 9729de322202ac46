"""Benchmark: five clusters checked by one leader on their own schedules, one of them behind a broker that answers
after 20 s, against the same four healthy clusters alone.

Four healthy clusters on Apache Kafka 4.1 (one broker; each cluster its own --groups groups of --partitions
partitions, its own AdminClient), each checked every --interval seconds; the fifth is the embedded broker
advertising the port of bench/latency_proxy.py, which holds every chunk 10 s each way (every answer comes 20 s
after its request; its request timeout is 120 s so the answers arrive). The real scheduler (lagbot.service.scheduler)
runs the real checks (`Bot`, the Redis window store, the Slack emulator) for --seconds, twice: the four healthy clusters
alone, then with the slow one. From APScheduler's job events it prints, per cluster: cycles completed, median
duration, median time between cycle starts, the worst lateness of a start against its schedule, and runs skipped
because the previous one was still running.

    .venv/bin/python bench/many_clusters.py [--groups 50] [--partitions 10] [--interval 5] [--seconds 60]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis
from apscheduler.events import EVENT_JOB_EXECUTED, EVENT_JOB_MAX_INSTANCES, EVENT_JOB_SUBMITTED

from lagbot.core.config import build_settings
from lagbot.devkit.apache_kafka import ApacheKafka, pinned_version
from lagbot.devkit.embedded import EmbeddedRedis, free_port
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.bot import Bot
from lagbot.service.scheduler import build_scheduler
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter

TOKEN = "xoxb-bench-clusters"
HEALTHY = ["c1", "c2", "c3", "c4"]
SLOW = "slow"
DELAY_MS = 10_000


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@dataclass
class Timeline:
    """Per check job: when each run was due, started and ended, and how many runs were skipped."""

    due: dict[str, list[float]] = field(default_factory=dict)
    started: dict[str, list[float]] = field(default_factory=dict)
    ended: dict[str, list[float]] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    skip_times: dict[str, list[float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def listen(self, event: Any) -> None:
        if not event.job_id.startswith("check:"):
            return
        name, now = event.job_id.removeprefix("check:"), time.time()
        with self.lock:
            if event.code == EVENT_JOB_SUBMITTED:
                self.due.setdefault(name, []).append(event.scheduled_run_times[-1].timestamp())
                self.started.setdefault(name, []).append(now)
            elif event.code == EVENT_JOB_EXECUTED:
                self.ended.setdefault(name, []).append(now)
            else:
                self.skipped[name] = self.skipped.get(name, 0) + 1
                self.skip_times.setdefault(name, []).append(now)


def run_phase(settings: Any, client: redis.Redis, slack: SlackEmulator, seconds: float) -> Timeline:
    client.flushdb()
    bot = Bot.on_redis(settings, client, slack_client(TOKEN, slack.api_url), SlackPresenter())
    scheduler = build_scheduler(bot)
    timeline = Timeline()
    scheduler.add_listener(timeline.listen, EVENT_JOB_SUBMITTED | EVENT_JOB_EXECUTED | EVENT_JOB_MAX_INSTANCES)
    scheduler.start()
    try:
        time.sleep(seconds)
    finally:
        scheduler.shutdown(wait=False)
    return timeline


def rows(timeline: Timeline, clusters: list[str]) -> list[tuple[str, int, float, float, float, float, int]]:
    """(cluster, cycles completed, median and longest duration, median gap between starts, worst lateness,
    skipped)."""
    out = []
    for name in clusters:
        started, ended, due = timeline.started.get(name, []), timeline.ended.get(name, []), timeline.due.get(name, [])
        durations = [e - s for s, e in zip(started, ended, strict=False)]
        gaps = [b - a for a, b in itertools.pairwise(started)]
        late = max((s - d for s, d in zip(started, due, strict=True)), default=float("nan"))
        median = statistics.median(durations) if durations else float("nan")
        gap = statistics.median(gaps) if gaps else float("nan")
        longest = max(durations, default=float("nan"))
        out.append((name, len(ended), median, longest, gap, late, timeline.skipped.get(name, 0)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    from check_cycle import DelayedBroker, latency_proxy
    from estate import build_estate

    print(f"load average before: {load()} ({os.cpu_count()} cores)", flush=True)
    proxy_port = free_port()
    with (
        ApacheKafka().start() as broker,
        DelayedBroker(proxy_port).start() as slow_broker,
        latency_proxy(slow_broker.port, DELAY_MS, listen=proxy_port),
        EmbeddedRedis().start() as redis_server,
        SlackEmulator(token=TOKEN).start() as slack,
    ):
        print(f"Apache Kafka {pinned_version()} on {broker.bootstrap}; the slow broker behind 127.0.0.1:{proxy_port} "
              f"({DELAY_MS / 1000:g} s each way)", flush=True)  # fmt: skip
        for name in HEALTHY:
            build_estate(broker.bootstrap, name, args.groups, args.partitions, 10)
        every = f"{args.interval:g}s"
        healthy = [
            {
                "name": n,
                "bootstrap_servers": broker.bootstrap,
                "groups": {"include": [f"{n}-g.*"]},
                "check_interval": every,
            }
            for n in HEALTHY
        ]
        slow = {"name": SLOW, "bootstrap_servers": f"127.0.0.1:{proxy_port}", "check_interval": every,
                "request_timeout": "120s"}  # fmt: skip
        base = {"redis_url": redis_server.url, "slack": {"api_url": slack.api_url}}
        client = redis.Redis.from_url(redis_server.url)
        phases = {}
        for label, clusters in (("healthy alone", healthy), ("with the slow cluster", [*healthy, slow])):
            settings = build_settings({**base, "clusters": clusters}, source="bench")
            print(f"{label}: {len(clusters)} clusters for {args.seconds:g} s; load {load()}", flush=True)
            phases[label] = run_phase(settings, client, slack, args.seconds)
        print(f"load average after: {load()}; {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    report(phases, args)


def report(phases: dict[str, Timeline], args: argparse.Namespace) -> None:
    print(f"\n{args.groups} groups x {args.partitions} partitions per healthy cluster, every {args.interval:g} s")
    print(
        f"{'phase':<22} {'cluster':<7} {'cycles':>6} {'duration s':>10} {'longest':>8} {'start gap s':>11} "
        f"{'late s':>7} {'skip':>5}  skipped at (s into the phase)"
    )
    medians: dict[str, list[tuple[float, float, int]]] = {}
    for label, timeline in phases.items():
        clusters = [*HEALTHY, SLOW] if SLOW in timeline.started else HEALTHY
        begun = min(t for times in timeline.due.values() for t in times)
        for name, cycles, duration, longest, gap, late, skipped in rows(timeline, clusters):
            at = [round(t - begun, 1) for t in timeline.skip_times.get(name, [])]
            print(f"{label:<22} {name:<7} {cycles:6d} {duration:10.3f} {longest:8.3f} {gap:11.3f} {late:7.3f} "
                  f"{skipped:5d}  {at}")  # fmt: skip
            if name != SLOW:
                medians.setdefault(label, []).append((duration, gap, cycles))
    alone, mixed = (medians[k] for k in phases)
    for what, index in (("duration", 0), ("gap between starts", 1), ("cycles", 2)):
        a, m = statistics.median(r[index] for r in alone), statistics.median(r[index] for r in mixed)
        print(f"healthy clusters' median {what}: alone {a:.3f}, with the slow cluster {m:.3f} ({m / a:.2f}x)")


if __name__ == "__main__":
    main()
