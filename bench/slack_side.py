"""Benchmark: the Slack side of `lagbot run` at 100,000 group-partitions (2,000 groups x 50 partitions).

On Apache Kafka 4.1, a redis-server and the Slack emulator (lagbot.devkit.emulator), in one run:

1. The estate (bench/estate.py: groups reading shared topics, known lag on every partition), then the state a
   running bot keeps in Redis, written by the product's own stores: every group's window filled (one collected
   snapshot appended at 29 earlier times through `RedisWindowStore`, as bench/scale.py does) and the digest's
   history (`history.record` of the judged report once a minute over --history-minutes).
2. A real `lagbot run` process (HTTP mode) on that state. Once its first check has opened the estate's incidents
   and delivered them (the steady state), slash commands signed as Slack signs them, sent by the emulator:
   `/lag top`, `/lag <group>` (a different group each time), `/lag digest`. For each: the ack (the HTTP answer to
   the signed POST) and the first reply (the emulator recording the response_url post, or the digest's upload).
   Then, each round, `/lag top` to the follower again with the leader's stored summary (lagbot.service.summary)
   taken away for that one command: the follower judges every stored window, as every replica but the leader did
   before the summary (the before and after of that change, side by side in one run).
3. The digest built in this process as the bot builds it (`Bot.digest` without the post: every stored verdict,
   the routed incidents, the audit, `compose_digest` with its chart).
4. A check cycle while Slack is slow: the emulator answers chat.postMessage 429 with Retry-After --slow-seconds
   (slack_sdk waits it out, twice). Side by side on fresh cluster names (each first check opens incidents, so
   each has Slack work): `Bot.check(cluster)` (delivering inline, what the scheduler's check job ran before) and
   the scheduler's check job now (`scheduled_check`: queued, the outbox job delivers on its own thread).

Targets (issue 15, target 4): ack + first reply <= 1 s; a digest of 2,000 groups built in <= 5 s; a check cycle
never waits on Slack delivery. Prints medians of --repeat, each figure beside its target, and the load average.

    .venv/bin/python bench/slack_side.py [--groups 2000] [--partitions 50] [--repeat 3] [--history-minutes 1440]
                                         [--commands-only]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redis

from lagbot.core.config import Settings, build_settings
from lagbot.devkit.apache_kafka import ApacheKafka, pinned_version
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from lagbot.engine.check import Checker
from lagbot.engine.window import RedisWindowStore
from lagbot.service.bot import Bot
from lagbot.service.history import make_history
from lagbot.service.scheduler import build_scheduler
from lagbot.service.slack_api import slack_client
from lagbot.service.summary import summary_key
from lagbot.slack.presenter import SlackPresenter
from lagbot.slack.wiring import digest_config_for
from tests.support.bot_process import SIGNING_SECRET, BotProcess, wait_for

TOKEN = "xoxb-bench-slack"
CHANNEL = "C0BENCH"
CLUSTER = "estate"
CHECK_EVERY = 30.0


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def config(bootstrap: str, redis_url: str, slack: SlackEmulator, clusters: dict[str, str]) -> dict[str, Any]:
    """The bot's configuration: `clusters` maps a cluster name to its group pattern (all on the one broker)."""
    return {
        "clusters": [
            {"name": name, "bootstrap_servers": bootstrap, "groups": {"include": [match]}, "check_interval": 3600}
            for name, match in clusters.items()
        ],
        # The estate's lag is 0 to 19 messages a partition: at 10 most groups are in an incident, as in a bad hour.
        "thresholds": {"warn": {"messages": 10}, "critical": {"messages": 10**9}, "page": {"messages": 10**10}},
        "redis_url": redis_url,
        "slack": {
            "api_url": slack.api_url,
            "default_channel": CHANNEL,
            "command_limits": {"per_user": 1000, "per_channel": 1000, "digests": 100},
        },
    }


def fill_state(settings: Settings, client: redis.Redis, history_minutes: int) -> None:
    """Windows (30 samples) of every cluster and the first one's digest history, through the product's stores."""
    store = RedisWindowStore(client, samples=settings.window.samples, ttl=settings.window.ttl)
    checker = Checker(settings, store)
    snapshots = checker.sample()
    for snapshot in snapshots.values():
        assert snapshot.error is None, snapshot.error
        for back in range(settings.window.samples - 1, 0, -1):
            store.append(dataclasses.replace(snapshot, taken_at=snapshot.taken_at - back * CHECK_EVERY))
    first = settings.clusters[0].name
    report = checker.evaluate({first: snapshots[first]})
    history = make_history(settings.digest.history, client)
    for minute in range(history_minutes, 0, -1):
        history.record(dataclasses.replace(report, taken_at=report.taken_at - minute * 60.0))


def first_reply(slack: SlackEmulator, key: str) -> float:
    """When the emulator recorded the first post to the response URL `key` (epoch seconds)."""
    calls = [c for c in slack.calls_to("response_url") if c.args.get("key") == key]
    return calls[0].at


def slash(slack: SlackEmulator, url: str, text: str, user: str) -> tuple[float, float, str]:
    """(ack seconds, first reply seconds, response key) of one signed slash command."""
    sent = time.time()
    status, _, key = slack.slash_command(url, SIGNING_SECRET, text=text, user=user, channel=CHANNEL)
    acked = time.time() - sent
    assert status == 200, status
    wait_for(f"the reply to /lag {text}", lambda: slack.responses.get(key), timeout=120, every=0.01)
    return acked, first_reply(slack, key) - sent, key


def digest_by_command(slack: SlackEmulator, url: str, user: str) -> tuple[float, float, float]:
    """(ack, the digest message posted, its chart uploaded) for `/lag digest` in the digest channel."""
    posts = len(slack.calls_to("chat.postMessage"))
    uploads = len(slack.calls_to("files.completeUploadExternal"))
    sent = time.time()
    status, _, _ = slack.slash_command(url, SIGNING_SECRET, text="digest", user=user, channel=CHANNEL)
    acked = time.time() - sent
    assert status == 200, status
    wait_for("the digest", lambda: len(slack.calls_to("files.completeUploadExternal")) > uploads, timeout=120)
    [posted] = [c for c in slack.calls_to("chat.postMessage")[posts:] if "lag digest" in str(c.args.get("text"))]
    return acked, posted.at - sent, slack.calls_to("files.completeUploadExternal")[uploads].at - sent


def commands(
    replicas: dict[str, BotProcess], slack: SlackEmulator, groups: list[str], repeat: int, client: redis.Redis
) -> dict[str, list[float]]:
    """`/lag top`, `/lag <group>` and `/lag digest` sent to each replica in turn, `repeat` rounds; then `/lag top`
    to the follower once more without the leader's stored summary (the key taken away for that command and put
    back): how every replica but the leader answered before the summary, in the same run."""
    figures: dict[str, list[float]] = {}
    summary = summary_key(CLUSTER)
    for i in range(repeat):
        for role, bot in [*replicas.items(), ("follower, no summary", replicas["follower"])]:
            if role == "follower, no summary":
                stored, ttl = client.get(summary), client.pttl(summary)
                assert stored is not None, "the leader stored no summary"
                client.delete(summary)
                acked, replied, key = slash(slack, bot.events_url, "top", f"U0BENCH{i}")
                client.set(summary, stored, px=ttl)
                figures.setdefault(f"/lag top ack, {role}", []).append(acked)
                figures.setdefault(f"/lag top reply, {role}", []).append(replied)
                continue
            group = groups[(i * 397 + len(role)) % len(groups)]
            for name, text in (("/lag top", "top"), ("/lag <group>", group)):
                acked, replied, key = slash(slack, bot.events_url, text, f"U0BENCH{i}")
                figures.setdefault(f"{name} ack, {role}", []).append(acked)
                figures.setdefault(f"{name} reply, {role}", []).append(replied)
                answer = str(slack.responses[key][0].get("text", ""))
                assert (group if name == "/lag <group>" else "sl-g") in answer, answer[:300]
            if role == "leader":
                acked, posted, uploaded = digest_by_command(slack, bot.events_url, f"U0BENCH{i}")
                figures.setdefault("/lag digest ack, leader", []).append(acked)
                figures.setdefault("/lag digest message posted, leader", []).append(posted)
                figures.setdefault("/lag digest chart uploaded, leader", []).append(uploaded)
        print(f"  commands, round {i + 1}: " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in figures.items()), flush=True)
    return figures


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def digest_builds(settings: Settings, client: redis.Redis, slack: SlackEmulator, repeat: int) -> dict[str, list[float]]:
    """`Bot.digest` (every verdict, the routed incidents, the audit, the history, the chart, posted to the emulator),
    timed: on the leader (verdicts from its last check) and on a fresh replica (judged from the stored windows,
    which is also what every replica did before)."""
    config = digest_config_for(settings, CHANNEL)
    leader = Bot.on_redis(settings, client, slack_client(TOKEN, slack.api_url), SlackPresenter())
    assert leader.leadership.tick()
    leader.check(CLUSTER, deliver=False)
    figures: dict[str, list[float]] = {"digest built, leader": [], "digest built, follower": []}
    for _ in range(repeat):
        figures["digest built, leader"].append(timed(partial(leader.digest, config)))
        follower = Bot.on_redis(settings, client, slack_client(TOKEN, slack.api_url), SlackPresenter())
        figures["digest built, follower"].append(timed(partial(follower.digest, config)))
    leader.leadership.resign()
    return figures


CYCLE_KINDS = ("job, Slack answering", "job, Slack slow", "inline delivery, Slack slow")


def cycles_with_slow_slack(
    settings: Settings, client: redis.Redis, slack: SlackEmulator, clusters: list[str], slow: int
) -> dict[str, list[float]]:
    """Checks that each open incidents (Slack work): the scheduler's check job with Slack answering and with Slack
    slow, and `Bot.check` delivering inline (what the job ran before) with Slack slow; round robin."""
    bot = Bot.on_redis(settings, client, slack_client(TOKEN, slack.api_url), SlackPresenter())
    assert bot.leadership.tick()
    scheduler = build_scheduler(bot)  # not started: its check job is called as the scheduler calls it
    figures: dict[str, list[float]] = {kind: [] for kind in CYCLE_KINDS}
    for i, name in enumerate(clusters):
        kind = CYCLE_KINDS[i % len(CYCLE_KINDS)]
        if "slow" in kind:
            slack.fail("chat.postMessage", status=429, retry_after=slow, times=3)
        assert bot.leadership.tick()  # the lease, renewed as the scheduler's leadership job does
        job = scheduler.get_job(f"check:{name}")
        work = partial(bot.check, name) if kind.startswith("inline") else partial(job.func, *job.args)
        seconds = timed(work)
        opened = len(bot.incidents.changed_since(0.0))
        figures[kind].append(seconds)
        print(f"  {name}: {kind}: {seconds:.2f} s ({opened} incidents open); load {load()}", flush=True)
        slack.fail("chat.postMessage", status=429, retry_after=0, times=0)
        # Everything queued goes out before the next check (not measured): the delivery thread the job woke, or
        # this one; so the next check meets the slow Slack itself, not a deliverer still holding the outbox.
        wait_for("an empty outbox", lambda: not bot.deliver().pending, timeout=600, every=0.5)
    return figures


def median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--groups-per-topic", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--history-minutes", type=int, default=1440)
    parser.add_argument("--slow-seconds", type=int, default=10)
    parser.add_argument(
        "--commands-only", action="store_true", help="only the slash commands (no digest builds, no slow-Slack cycles)"
    )
    args = parser.parse_args()
    from estate import build_estate

    print(f"load average before: {load()} ({os.cpu_count()} cores)", flush=True)
    cycle_clusters = [f"cycle{i}" for i in range(len(CYCLE_KINDS) * args.repeat)]
    with (
        ApacheKafka().start() as broker,
        EmbeddedRedis().start() as redis_server,
        SlackEmulator(token=TOKEN).start() as slack,
        tempfile.TemporaryDirectory() as tmp,
    ):
        print(f"Apache Kafka {pinned_version()} on {broker.bootstrap}, redis-server on {redis_server.url}", flush=True)
        started = time.perf_counter()
        estate = build_estate(broker.bootstrap, "sl", args.groups, args.partitions, args.groups_per_topic)
        print(f"estate: {len(estate.groups)} groups, {estate.group_partitions:,} group-partitions, "
              f"set up in {time.perf_counter() - started:.1f} s; load {load()}", flush=True)  # fmt: skip
        client = redis.Redis.from_url(redis_server.url)
        # The cycle part checks 200 of the groups (sl-g100 to sl-g299) under fresh names: each first check opens
        # their incidents, so each has Slack work; the estate's size does not change what it shows.
        clusters = {CLUSTER: "sl-g.*"} | {name: "sl-g[12][0-9]{2}" for name in cycle_clusters}
        settings = build_settings(config(broker.bootstrap, redis_server.url, slack, clusters), source="bench")
        started = time.perf_counter()
        fill_state(settings, client, args.history_minutes)
        print(f"state filled in {time.perf_counter() - started:.1f} s: windows of {settings.window.samples} samples, "
              f"{args.history_minutes} minutes of history; load {load()}", flush=True)  # fmt: skip

        running = config(broker.bootstrap, redis_server.url, slack, {CLUSTER: "sl-g.*"})
        leader = BotProcess(Path(tmp), running, token=TOKEN, name="leader")
        follower: BotProcess | None = None
        try:
            leader.wait_ready(timeout=120)
            started = time.perf_counter()
            wait_for("the first check", lambda: (leader.health() or {}).get("checks", {}).get(CLUSTER),
                     timeout=600, every=0.5)  # fmt: skip
            # Its incidents are queued once the check has judged, then delivered on the delivery thread.
            wait_for("the first check's messages", lambda: slack.channel(CHANNEL) and (h := leader.health())
                     and not h["outbox"]["pending"], timeout=900, every=0.5)  # fmt: skip
            roots = len(slack.channel(CHANNEL))
            print(f"first check + delivery of {roots} incidents in {time.perf_counter() - started:.1f} s; "
                  f"load {load()}", flush=True)  # fmt: skip
            follower = BotProcess(Path(tmp), running, token=TOKEN, name="follower")
            assert follower.wait_ready(timeout=120)["leader"] is False
            figures = commands({"leader": leader, "follower": follower}, slack, estate.groups, args.repeat, client)
        finally:
            leader.stop()
            if follower is not None:
                follower.stop()
        if args.commands_only:
            print(f"load average after: {load()}")
            report(figures, estate.group_partitions, len(estate.groups), args.slow_seconds)
            return
        figures |= digest_builds(build_settings(running, source="bench"), client, slack, args.repeat)
        print(f"  digest built: {figures['digest built, leader']} (leader), {figures['digest built, follower']} "
              f"(follower); load {load()}", flush=True)  # fmt: skip
        figures |= cycles_with_slow_slack(settings, client, slack, cycle_clusters, args.slow_seconds)
    print(f"load average after: {load()}")
    report(figures, estate.group_partitions, len(estate.groups), args.slow_seconds)


def report(figures: dict[str, list[float]], group_partitions: int, groups: int, slow: int) -> None:
    rounds = len(figures["/lag top ack, leader"])
    print(f"\n{groups:,} groups, {group_partitions:,} group-partitions; medians of {rounds}")
    print(f"{'figure (seconds)':<42} {'median':>7} {'min':>7} {'max':>7} {'target':>7} {'/ target':>8}")
    for name, values in figures.items():
        target = 5.0 if name.startswith("digest built") else 1.0 if " reply" in name else None
        ratio = f"{median(values) / target:8.2f}" if target else ""
        print(f"{name:<42} {median(values):7.3f} {min(values):7.3f} {max(values):7.3f} "
              f"{target or '':>7} {ratio:>8}")  # fmt: skip
    if not all(kind in figures for kind in CYCLE_KINDS):
        return
    answering, job, inline = (median(figures[kind]) for kind in CYCLE_KINDS)
    print(f"a check with its Slack work, Slack slow ({slow} s Retry-After, twice): the scheduler's job {job:.2f} s "
          f"vs {answering:.2f} s with Slack answering ({job / answering:.2f}x); delivering inline {inline:.2f} s "
          f"({inline / answering:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
