"""Soak: `lagbot run` watching healthy groups on Apache Kafka for --minutes must open no incident and post nothing.

The workloads are the quiet property test's (tests/support/healthy.py: manual commits, auto-commit at its 5 s
cadence, transactions with `read_committed`, at 1 to 2,000 msg/s over 1-12 partitions, 1-4 members), both seeds at
once (eight groups), running for the whole soak. One real `lagbot run` replica watches them with lagbot's default
thresholds and evaluation, a check every --interval seconds, a real redis-server and the Slack emulator. At the end
it prints the checks done, the incidents in Redis and every Slack call the emulator received, and exits 1 when any
incident or Slack post was made, or when the bot made fewer than half the checks its interval allows.

    .venv/bin/python bench/soak_healthy.py [--minutes 10] [--interval 10]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from lagbot.core import keys
from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from tests.support.bot_process import BotProcess
from tests.support.healthy import running, workloads

TOKEN = "xoxb-soak"
CHANNEL = "C0SOAK"
SEEDS = (22, 23)


def config(bootstrap: str, redis_url: str, slack: SlackEmulator, groups: list[str], interval: float) -> dict[str, Any]:
    """Defaults everywhere but where the services are, which groups, and how often to check."""
    return {
        "clusters": [
            {
                "name": "soak",
                "bootstrap_servers": bootstrap,
                "groups": {"include": ["|".join(groups)]},
                "check_interval": interval,
            }
        ],
        "redis_url": redis_url,
        "slack": {"api_url": slack.api_url, "default_channel": CHANNEL},
    }


def taken_at(bot: BotProcess) -> float | None:
    """When the bot's latest check of the cluster was taken, as /healthz says (None while it says nothing)."""
    stamp = ((bot.health() or {}).get("checks") or {}).get("soak")
    return float(stamp) if isinstance(stamp, int | float) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="how long the bot watches (default 10)")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between checks (default 10)")
    args = parser.parse_args(argv)
    works = [w for seed in SEEDS for w in workloads(seed)]
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        broker = stack.enter_context(ApacheKafka().start())
        redis_server = stack.enter_context(EmbeddedRedis().start())
        slack = stack.enter_context(SlackEmulator(token=TOKEN).start())
        run = stack.enter_context(running(broker.bootstrap, works, f"soak-{os.getpid()}"))
        run.checking.set()  # the 'then idle' workloads stop writing now: their lag stays 1 per partition, the markers
        for work, group in zip(works, run.groups, strict=True):
            print(f"{group}: {work.rate:g} msg/s, {work.partitions} partition(s), {work.members} member(s), "
                  f"{work.mode}")  # fmt: skip
        bot = BotProcess(Path(tmp), config(broker.bootstrap, redis_server.url, slack, run.groups, args.interval),
                         token=TOKEN, name="soak")  # fmt: skip
        try:
            bot.wait_ready()
            started = time.monotonic()
            ends, said = started + args.minutes * 60.0, started
            checks: set[float] = set()
            while time.monotonic() < ends and bot.running:
                time.sleep(2.0)
                checks.add(taken_at(bot) or 0.0)
                if time.monotonic() - said >= 60.0:
                    said = time.monotonic()
                    print(f"{(said - started) / 60:5.1f} min: {len(checks - {0.0})} checks, "
                          f"{len(slack.calls)} Slack call(s)", flush=True)  # fmt: skip
            alive = bot.running
        finally:
            bot.stop()
        client = redis.Redis.from_url(redis_server.url)
        incidents = sorted(k.decode() for k in client.scan_iter(keys.INCIDENTS_PATTERN))
        calls = Counter(c.method for c in slack.calls)
    print(f"\nsoak: {args.minutes:g} min, a check every {args.interval:g} s, {len(works)} healthy groups")
    print(f"bot alive at the end: {alive}; checks seen: {len(checks - {0.0})}")
    print(f"incidents in Redis: {len(incidents)} {incidents}")
    print(f"Slack calls: {sum(calls.values())} {dict(calls)}")
    posts = sum(n for method, n in calls.items() if method != "auth.test")
    expected = args.minutes * 60.0 / args.interval
    return 0 if alive and len(checks - {0.0}) >= expected / 2 and not incidents and posts == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
