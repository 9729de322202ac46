"""/metrics after a real check on Apache Kafka: exactly the offsets the test produced and committed."""

from __future__ import annotations

import pytest

from lagbot.engine.check import Checker
from lagbot.engine.window import MemoryWindowStore
from lagbot.service.metrics import Metrics
from tests.conftest import Kafka, Names
from tests.support.engine_rig import settings_for
from tests.support.metrics_parse import labels, samples

pytestmark = pytest.mark.integration


def test_metrics_of_a_real_check_read_back_the_broker_offsets(kafka: Kafka, names: Names) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 10)
    kafka.produce(topic, 1, 4)
    kafka.commit(group, {(topic, 0): 3, (topic, 1): 4})

    report = Checker(settings_for(kafka, group), MemoryWindowStore(samples=5)).run(2, 0.5)
    metrics = Metrics()
    metrics.observe_report(report)

    part = {p: labels(cluster_name="embedded", group=group, topic=topic, partition=str(p)) for p in (0, 1)}
    log = {p: labels(cluster_name="embedded", topic=topic, partition=str(p)) for p in (0, 1)}
    assert samples(metrics, "kafka_consumergroup_group_offset") == {part[0]: 3, part[1]: 4}
    assert samples(metrics, "kafka_partition_latest_offset") == {log[0]: 10, log[1]: 4}
    assert samples(metrics, "kafka_partition_earliest_offset") == {log[0]: 0, log[1]: 0}
    assert samples(metrics, "kafka_consumergroup_group_lag") == {part[0]: 7, part[1]: 0}
    assert samples(metrics, "kafka_consumergroup_group_sum_lag") == {labels(cluster_name="embedded", group=group): 7}
    assert samples(metrics, "kafka_consumergroup_group_max_lag") == {labels(cluster_name="embedded", group=group): 7}
    assert samples(metrics, "lagbot_cluster_up") == {labels(cluster_name="embedded"): 1}
    [(status_labels, value)] = samples(metrics, "lagbot_group_status").items()
    [verdict] = report.verdicts
    assert (dict(status_labels)["status"], value) == (verdict.status.name, int(verdict.status))
    known_seconds = {part[p.partition]: p.lag_seconds for p in verdict.partitions if p.lag_seconds is not None}
    assert samples(metrics, "kafka_consumergroup_group_lag_seconds") == known_seconds
