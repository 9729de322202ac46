"""/metrics from a hand-made report, read back with prometheus_client's own parser: exact samples."""

from __future__ import annotations

from lagbot.core.model import Severity, Status
from lagbot.engine.check import CheckReport
from lagbot.service.metrics import CONTENT_TYPE, Metrics
from tests.support.metrics_parse import labels, samples
from tests.support.verdict_factory import partition, unreadable, verdict

T0 = 1_700_000_000.0


def orders_and_billing() -> CheckReport:
    """orders reads two topics (one partition never committed); billing shares orders/0; audit is unreadable."""
    orders = verdict(
        "orders",
        total_lag=1_250,
        lag_seconds=42.5,
        status=Status.STALL,
        severity=Severity.CRITICAL,
        partitions=(
            partition("orders", 0, committed=1_000, log_end=2_000, log_start=10, lag_seconds=42.5, status=Status.STALL),
            partition("orders", 1, committed=300, log_end=550, lag_seconds=3.0),
            partition("orders", 2, committed=None, log_end=70, log_start=5),
            partition("refunds", 0, committed=9, log_end=9, lag_seconds=0.0),
        ),
    )
    billing = verdict(
        "billing",
        total_lag=0,
        lag_seconds=None,
        partitions=(partition("orders", 0, committed=2_000, log_end=2_000, log_start=10),),
    )
    return CheckReport(
        taken_at=T0,
        verdicts=[orders, billing, unreadable("audit", cluster="staging")],
        cluster_errors={"staging": "cluster 'staging' unreachable"},
        clusters=["prod", "staging"],
    )


def observed() -> Metrics:
    metrics = Metrics()
    metrics.observe_report(orders_and_billing())
    return metrics


def test_partition_lag_offsets_and_seconds_known_values_only() -> None:
    metrics = observed()
    p = "cluster_name"
    assert samples(metrics, "kafka_consumergroup_group_lag") == {
        labels(**{p: "prod"}, group="orders", topic="orders", partition="0"): 1_000,
        labels(**{p: "prod"}, group="orders", topic="orders", partition="1"): 250,
        labels(**{p: "prod"}, group="orders", topic="refunds", partition="0"): 0,
        labels(**{p: "prod"}, group="billing", topic="orders", partition="0"): 0,
    }  # orders/2 has no committed offset: its lag is unknown, so it is not exported at all
    assert samples(metrics, "kafka_consumergroup_group_offset") == {
        labels(**{p: "prod"}, group="orders", topic="orders", partition="0"): 1_000,
        labels(**{p: "prod"}, group="orders", topic="orders", partition="1"): 300,
        labels(**{p: "prod"}, group="orders", topic="refunds", partition="0"): 9,
        labels(**{p: "prod"}, group="billing", topic="orders", partition="0"): 2_000,
    }
    assert samples(metrics, "kafka_consumergroup_group_lag_seconds") == {
        labels(**{p: "prod"}, group="orders", topic="orders", partition="0"): 42.5,
        labels(**{p: "prod"}, group="orders", topic="orders", partition="1"): 3.0,
        labels(**{p: "prod"}, group="orders", topic="refunds", partition="0"): 0.0,
    }


def test_partition_offsets_once_per_partition() -> None:
    metrics = observed()
    assert samples(metrics, "kafka_partition_latest_offset") == {
        labels(cluster_name="prod", topic="orders", partition="0"): 2_000,
        labels(cluster_name="prod", topic="orders", partition="1"): 550,
        labels(cluster_name="prod", topic="orders", partition="2"): 70,
        labels(cluster_name="prod", topic="refunds", partition="0"): 9,
    }
    assert samples(metrics, "kafka_partition_earliest_offset") == {
        labels(cluster_name="prod", topic="orders", partition="0"): 10,
        labels(cluster_name="prod", topic="orders", partition="1"): 0,
        labels(cluster_name="prod", topic="orders", partition="2"): 5,
        labels(cluster_name="prod", topic="refunds", partition="0"): 0,
    }


def test_group_aggregates() -> None:
    metrics = observed()
    orders, billing = labels(cluster_name="prod", group="orders"), labels(cluster_name="prod", group="billing")
    assert samples(metrics, "kafka_consumergroup_group_max_lag") == {orders: 1_000, billing: 0}
    assert samples(metrics, "kafka_consumergroup_group_sum_lag") == {orders: 1_250, billing: 0}
    assert samples(metrics, "kafka_consumergroup_group_max_lag_seconds") == {orders: 42.5}
    assert samples(metrics, "kafka_consumergroup_group_topic_sum_lag") == {
        labels(cluster_name="prod", group="orders", topic="orders"): 1_250,
        labels(cluster_name="prod", group="orders", topic="refunds"): 0,
        labels(cluster_name="prod", group="billing", topic="orders"): 0,
    }


def test_status_severity_and_cluster_up() -> None:
    metrics = observed()
    assert samples(metrics, "lagbot_group_status") == {
        labels(cluster_name="prod", group="orders", status="STALL"): 2,
        labels(cluster_name="prod", group="billing", status="OK"): 0,
        labels(cluster_name="staging", group="audit", status="ERR"): 5,
    }
    assert samples(metrics, "lagbot_group_severity") == {
        labels(cluster_name="prod", group="orders", severity="critical"): 2,
        labels(cluster_name="prod", group="billing", severity="ok"): 0,
        labels(cluster_name="staging", group="audit", severity="ok"): 0,
    }
    assert samples(metrics, "lagbot_cluster_up") == {labels(cluster_name="prod"): 1, labels(cluster_name="staging"): 0}
    assert samples(metrics, "lagbot_last_check_timestamp_seconds") == {(): T0}
    assert samples(metrics, "lagbot_groups") == {
        labels(status="OK"): 1, labels(status="WARN"): 0, labels(status="STALL"): 1,
        labels(status="REWIND"): 0, labels(status="STOP"): 0, labels(status="ERR"): 1,
    }  # fmt: skip
    assert samples(metrics, "lagbot_check_cycles_total") == {(): 1}


def test_the_newest_report_replaces_the_old_one_and_vanished_groups_vanish() -> None:
    metrics = observed()
    assert len(samples(metrics, "kafka_consumergroup_group_sum_lag")) == 2  # rendered (and kept) before the next
    later = CheckReport(T0 + 60, [verdict("billing", total_lag=7, partitions=(
        partition("orders", 0, committed=2_000, log_end=2_007),))], clusters=["prod"])  # fmt: skip
    metrics.observe_report(later)
    assert samples(metrics, "kafka_consumergroup_group_sum_lag") == {labels(cluster_name="prod", group="billing"): 7}
    assert samples(metrics, "lagbot_cluster_up") == {labels(cluster_name="prod"): 1}
    assert samples(metrics, "lagbot_check_cycles_total") == {(): 2}


def test_check_durations_and_slack_errors() -> None:
    metrics = observed()
    assert samples(metrics, "lagbot_slack_errors_total") == {}  # the report's part is now rendered and kept
    for seconds in (0.2, 0.3, 7.0):
        metrics.observe_check_duration("prod", seconds)
    metrics.slack_error("chat.postMessage", "ratelimited")
    metrics.slack_error("chat.postMessage", "ratelimited")
    metrics.slack_error("files.completeUploadExternal", "file_not_found")

    buckets = samples(metrics, "lagbot_check_duration_seconds_bucket")
    assert buckets[labels(cluster_name="prod", le="0.1")] == 0
    assert buckets[labels(cluster_name="prod", le="0.25")] == 1
    assert buckets[labels(cluster_name="prod", le="0.5")] == 2
    assert buckets[labels(cluster_name="prod", le="5.0")] == 2
    assert buckets[labels(cluster_name="prod", le="10.0")] == 3
    assert buckets[labels(cluster_name="prod", le="+Inf")] == 3
    assert samples(metrics, "lagbot_check_duration_seconds_count") == {labels(cluster_name="prod"): 3}
    assert samples(metrics, "lagbot_check_duration_seconds_sum") == {labels(cluster_name="prod"): 7.5}
    assert samples(metrics, "lagbot_slack_errors_total") == {
        labels(method="chat.postMessage", error="ratelimited"): 2,
        labels(method="files.completeUploadExternal", error="file_not_found"): 1,
    }
    assert samples(metrics, "kafka_consumergroup_group_sum_lag") == samples(
        observed(), "kafka_consumergroup_group_sum_lag"
    )


def test_before_any_report_the_families_are_declared_without_samples() -> None:
    metrics = Metrics()
    text = metrics.render().decode()
    assert "# TYPE kafka_consumergroup_group_lag gauge" in text
    assert samples(metrics, "kafka_consumergroup_group_lag") == {}
    assert samples(metrics, "lagbot_cluster_up") == {}
    assert samples(metrics, "lagbot_check_cycles_total") == {(): 0}


def test_registries_are_separate_and_the_content_type_is_the_text_format() -> None:
    first, second = observed(), Metrics()
    assert samples(second, "kafka_consumergroup_group_sum_lag") == {}
    assert samples(first, "kafka_consumergroup_group_sum_lag") != {}
    assert CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"


def test_label_values_are_escaped() -> None:
    metrics = Metrics()
    odd = 'we"ird\\group\nname'
    metrics.observe_report(CheckReport(T0, [verdict(odd, total_lag=3)], clusters=["prod"]))
    assert samples(metrics, "kafka_consumergroup_group_sum_lag") == {labels(cluster_name="prod", group=odd): 3}
