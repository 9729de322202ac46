"""Benchmark: time from lag crossing the threshold on the broker to the Slack emulator receiving the alert.

Starts the embedded broker, a redis-server, the Slack emulator and a real `lagbot run` process with a
check interval of --interval seconds. Each trial creates a fresh topic and group that is caught up,
lets the bot see it healthy, then produces enough to cross the warn threshold and measures from the
producer's acknowledgement (the lag exists on the broker) to the emulator recording the root message.
Target: within one check interval + 2 s. Prints every trial, the median and the worst.

    .venv/bin/python bench/alert_latency.py [--interval 5] [--trials 8]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lagbot.devkit.embedded import EmbeddedBroker, EmbeddedRedis, exact_producer, produce
from lagbot.devkit.emulator import SlackEmulator
from tests.support.bot_process import BotProcess, wait_for

TOKEN = "xoxb-bench"
CHANNEL = "C0BENCH"


def config(broker: EmbeddedBroker, redis_server: EmbeddedRedis, slack: SlackEmulator, interval: float) -> dict:
    return {
        "clusters": [
            {
                "name": "bench",
                "bootstrap_servers": broker.bootstrap,
                "groups": {"include": ["bench-.*"]},
                "check_interval": interval,
            }
        ],
        "thresholds": {"warn": {"messages": 100}, "critical": {"messages": 10**9}, "page": {"messages": 10**10}},
        "redis_url": redis_server.url,
        "slack": {"api_url": slack.api_url, "default_channel": CHANNEL},
        "leader": {"lease_ttl": "6s"},
    }


def trial(admin: AdminClient, producer: object, slack: SlackEmulator, n: int, interval: float) -> float:
    topic, group = f"bench-topic-{n}", f"bench-{n}"
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(15)
    produce(producer, topic, 0, 1)
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 1)])
    for future in admin.alter_consumer_group_offsets([request]).values():
        future.result(15)
    # The bot sees the group healthy, then the lag appears at a random point of the check period, as in life.
    time.sleep(2 * interval + random.uniform(0, interval))
    before = len(slack.channel(CHANNEL))
    produce(producer, topic, 0, 200)
    crossed = time.time()
    wait_for("the alert", lambda: len(slack.channel(CHANNEL)) > before, timeout=interval * 4 + 30, every=0.05)
    posted = next(c.at for c in slack.calls_to("chat.postMessage") if group in str(c.args.get("text")))
    return posted - crossed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--trials", type=int, default=8)
    args = parser.parse_args()
    with (
        EmbeddedBroker().start() as broker,
        EmbeddedRedis().start() as redis_server,
        SlackEmulator(token=TOKEN).start() as slack,
        tempfile.TemporaryDirectory() as tmp,
    ):
        bot = BotProcess(Path(tmp), config(broker, redis_server, slack, args.interval), token=TOKEN)
        try:
            bot.wait_ready()
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            producer = exact_producer(broker.bootstrap)
            latencies = []
            random.seed(7)
            for n in range(args.trials):
                latency = trial(admin, producer, slack, n, args.interval)
                latencies.append(latency)
                print(f"trial {n + 1}: alert {latency:.2f} s after the lag crossed the threshold")
            del admin, producer  # closed before the broker stops, or librdkafka logs the disconnect
        finally:
            bot.stop()
    target = args.interval + 2.0
    print(f"check interval {args.interval:g} s, target <= {target:g} s")
    print(f"median {statistics.median(latencies):.2f} s, worst {max(latencies):.2f} s, best {min(latencies):.2f} s")
    print("MET" if max(latencies) <= target else "NOT MET")


if __name__ == "__main__":
    main()
