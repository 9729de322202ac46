"""lagbot on a Kafka-protocol broker that is not Apache Kafka: the embedded Tansu (the pip user's `lagbot demo`).

The one place the suite runs on it: every other broker-facing test runs on Apache Kafka (tests/conftest.py).
Tansu reports the log end as the last batch's base offset + 1, so this test writes one message per batch.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lagbot.devkit.embedded import EmbeddedBroker, exact_producer, produce

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tansu() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker().start() as running:
        yield running


def test_check_on_the_embedded_broker_reads_exact_lag(tansu: EmbeddedBroker) -> None:
    admin = AdminClient({"bootstrap.servers": tansu.bootstrap})
    for future in admin.create_topics([NewTopic("smoke", 2, 1)]).values():
        future.result(15)
    producer = exact_producer(tansu.bootstrap)
    produce(producer, "smoke", 0, 9)
    produce(producer, "smoke", 1, 4)
    request = ConsumerGroupTopicPartitions(
        "smoke-group", [TopicPartition("smoke", 0, 3), TopicPartition("smoke", 1, 4)]
    )
    for future in admin.alter_consumer_group_offsets([request]).values():
        future.result(15)

    result = subprocess.run(
        [sys.executable, "-m", "lagbot.cli.main", "check", "-b", tansu.bootstrap, "--group", "smoke-group", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    [group] = json.loads(result.stdout)["groups"]
    assert (group["group"], group["state"], group["total_lag"]) == ("smoke-group", "Empty", 6)
    rows = [(p["partition"], p["committed"], p["log_end"], p["lag"]) for p in group["partitions"]]
    assert rows == [(0, 3, 9, 6), (1, 4, 4, 0)]
