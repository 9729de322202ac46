"""Benchmark: what the lag history costs in Redis, per group per day, and the estate that fits 1 GiB.

Records a few groups' checks, one a minute, at a compressed clock (`taken_at` chosen, nothing waits) into the bot's
history (lagbot.service.rollups.make_tiered_history: minute points and 15-minute rollups) on a real redis-server,
then reads Redis's own accounting (MEMORY USAGE of every key the history made, and used_memory before and after):

- minute tier: bytes per group per day of points (1,440 points);
- rollup tier: bytes per group per day of rollups (96 rollups);
- a group's whole history at the settings' retentions (default 2 d of minutes + 30 d of rollups), and how many
  groups fit in 1 GiB of Redis at them;
- what recording one check costs for `--time-groups` groups, minute points alone against both tiers (medians).

    .venv/bin/python bench/history_bytes.py [--groups 20] [--days 3] [--lag-digits 7] [--time-groups 2000]

Group names are 24 characters; lags have `--lag-digits` digits (the members' size depends on them).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from lagbot.core.digest_config import HistoryConfig
from lagbot.core.model import GroupState, GroupVerdict, Severity, Status
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.engine.check import CheckReport
from lagbot.service.history import HistoryStore
from lagbot.service.rollups import make_tiered_history

START = 1_710_201_600.0  # a midnight (UTC)
DAY = 86_400.0
GIB = 1024**3


def verdict(group: str, lag: int) -> GroupVerdict:
    severity = Severity.WARN if lag > 50_000 else Severity.OK
    status = Status.WARN if severity is Severity.WARN else Status.OK
    return GroupVerdict("prod", group, GroupState.STABLE, status, severity, "", (), lag, lag / 97.0, None, None,
                        None, "steady")  # fmt: skip


def key_bytes(client: redis.Redis, pattern: str) -> tuple[int, int]:
    """(keys, bytes of MEMORY USAGE summed) of the keys matching `pattern`."""
    keys = list(client.scan_iter(match=pattern, count=1_000))
    return len(keys), sum(client.memory_usage(k, samples=0) or 0 for k in keys)


def record_ms(store: HistoryStore, verdicts: list[GroupVerdict], repeat: int) -> float:
    """Median milliseconds of recording one check of `verdicts` (a minute apart each time)."""
    times = []
    for i in range(repeat):
        report = CheckReport(START + 60 * i, verdicts, clusters=["prod"])
        started = time.perf_counter()
        store.record(report)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--lag-digits", type=int, default=7)
    parser.add_argument("--time-groups", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(11)
    names = [f"payments-consumer-{g:06d}" for g in range(args.groups)]
    top = 10**args.lag_digits - 1
    config = HistoryConfig(retention=args.days * DAY, rollup_retention=30 * DAY)  # keep everything recorded
    with EmbeddedRedis().start() as server:
        client = redis.Redis.from_url(server.url)
        store = make_tiered_history(config, client)
        before = int(client.info("memory")["used_memory"])
        for minute in range(int(args.days * DAY / 60)):
            at = START + 60 * minute
            report = [verdict(n, rng.randint(top // 10, top)) for n in names]
            store.record(CheckReport(at, report, clusters=["prod"]))
        after = int(client.info("memory")["used_memory"])
        point_keys, point_bytes = key_bytes(client, "lagbot:history*")
        rollup_keys, rollup_bytes = key_bytes(client, "lagbot:rollup*")
        encodings = {client.object("encoding", k) for k in client.scan_iter(match="lagbot:*", count=1_000)}
        many = [verdict(f"payments-consumer-{g:06d}", rng.randint(0, top)) for g in range(args.time_groups)]
        client.flushdb()
        alone_ms = record_ms(make_tiered_history(HistoryConfig(rollup_retention=0), client), many, args.repeat)
        client.flushdb()
        tiered_ms = record_ms(make_tiered_history(HistoryConfig(), client), many, args.repeat)

    group_days = args.groups * args.days
    per_day_points = point_bytes / group_days
    per_day_rollups = rollup_bytes / group_days
    defaults = HistoryConfig()
    whole = per_day_points * defaults.retention / DAY + per_day_rollups * defaults.rollup_retention / DAY
    minutes_30 = per_day_points * 30
    print(f"{args.groups} groups x {args.days} days, one check a minute, lags of {args.lag_digits} digits")
    print(f"minute tier: {point_keys} keys, {per_day_points:,.0f} B per group per day "
          f"({per_day_points / 1440:.1f} B a point)")  # fmt: skip
    print(f"rollup tier (15 min): {rollup_keys} keys, {per_day_rollups:,.0f} B per group per day "
          f"({per_day_rollups / 96:.1f} B a rollup)")  # fmt: skip
    print(f"encodings of the keys: {sorted(e.decode() for e in encodings)}; used_memory grew by "
          f"{(after - before) / group_days:,.0f} B per group per day (MEMORY USAGE: "
          f"{(point_bytes + rollup_bytes) / group_days:,.0f} B)")  # fmt: skip
    print(f"one group at the defaults (2 d of minutes + 30 d of rollups): {whole / 1024:,.0f} KiB; "
          f"{GIB / whole:,.0f} groups fit in 1 GiB")  # fmt: skip
    print(f"recording one check of {args.time_groups:,} groups: minute points alone {alone_ms:.0f} ms, "
          f"with the rollups {tiered_ms:.0f} ms (medians of {args.repeat})")  # fmt: skip
    print(f"for comparison, 30 d of minute points alone: {minutes_30 / 1024:,.0f} KiB a group; "
          f"{GIB / minutes_30:,.0f} groups in 1 GiB")  # fmt: skip


if __name__ == "__main__":
    main()
