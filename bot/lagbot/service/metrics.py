"""Prometheus exposition of the latest check: lag per group and partition, named as the exporters name it.

The `kafka_*` metrics carry Kafka Lag Exporter's names and label names (`cluster_name`, `group`, `topic`,
`partition`), so its Grafana dashboards and alert rules work on lagbot unchanged; its member labels
(`member_host`, `consumer_id`, `client_id`) are left out so that a rebalance does not start new series.
The `lagbot_*` metrics are lagbot's own: its judgement (status, severity) and its health (cluster
reachable, check durations and cycles, Slack errors).

Everything lives in a `Metrics` object with its own CollectorRegistry (never the process-global one),
so several bots (or tests) in one process do not mix. The per-group metrics are rendered from the
latest CheckReport at scrape time: a group that vanished from the report vanishes from /metrics.
Unknown values (no committed offset, lag in seconds not yet known) are omitted, never exported as 0.

Status and severity are numbers, with their name as a label too (`status="STALL"`):
status OK=0, WARN=1, STALL=2, REWIND=3, STOP=4, ERR=5; severity ok=0, warn=1, critical=2, page=3.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest

from lagbot.core.model import GroupVerdict, Status
from lagbot.engine.check import CheckReport

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""The Content-Type of `Metrics.render()`: Prometheus text format 0.0.4, which every Prometheus reads."""

CLUSTER = "cluster_name"
PARTITION_LABELS = [CLUSTER, "group", "topic", "partition"]
GROUP_LABELS = [CLUSTER, "group"]
CHECK_DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0)


class ReportCollector:
    """Renders the per-group and per-partition metrics of the latest CheckReport at each scrape."""

    def __init__(self) -> None:
        self._report: CheckReport | None = None

    def update(self, report: CheckReport) -> None:
        self._report = report  # one reference swap: a scrape sees the old report or the new one, whole

    def collect(self) -> Iterator[Metric]:
        report = self._report
        verdicts = report.verdicts if report is not None else []
        yield from partition_families(verdicts)
        yield from group_families(verdicts)
        yield from offset_families(verdicts)
        yield cluster_up_family(report)
        yield last_check_family(report)


def partition_families(verdicts: Iterable[GroupVerdict]) -> list[GaugeMetricFamily]:
    """Committed offset, lag and lag in seconds per group and partition (unknowns omitted)."""
    offset = GaugeMetricFamily(
        "kafka_consumergroup_group_offset", "Committed offset of the group on the partition.", labels=PARTITION_LABELS
    )
    lag = GaugeMetricFamily(
        "kafka_consumergroup_group_lag", "Log-end offset minus committed offset (messages).", labels=PARTITION_LABELS
    )
    lag_seconds = GaugeMetricFamily(
        "kafka_consumergroup_group_lag_seconds",
        "Estimated age of the oldest unread message (seconds; a lower bound when older than the window).",
        labels=PARTITION_LABELS,
    )
    for v in verdicts:
        for p in v.partitions:
            labels = [v.cluster, v.group, p.topic, str(p.partition)]
            if p.committed is not None:
                offset.add_metric(labels, p.committed)
            if p.lag is not None:
                lag.add_metric(labels, p.lag)
            if p.lag_seconds is not None:
                lag_seconds.add_metric(labels, p.lag_seconds)
    return [offset, lag, lag_seconds]


def group_families(verdicts: Iterable[GroupVerdict]) -> list[GaugeMetricFamily]:
    """Per group: max, sum and per-topic sum of lag, max lag in seconds, lagbot's status and severity."""
    max_lag = GaugeMetricFamily(
        "kafka_consumergroup_group_max_lag", "Highest partition lag of the group (messages).", labels=GROUP_LABELS
    )
    sum_lag = GaugeMetricFamily(
        "kafka_consumergroup_group_sum_lag", "Total lag of the group (messages).", labels=GROUP_LABELS
    )
    topic_sum = GaugeMetricFamily(
        "kafka_consumergroup_group_topic_sum_lag",
        "Total lag of the group on one topic (messages).",
        labels=[*GROUP_LABELS, "topic"],
    )
    max_seconds = GaugeMetricFamily(
        "kafka_consumergroup_group_max_lag_seconds", "Highest lag in seconds of the group.", labels=GROUP_LABELS
    )
    status = GaugeMetricFamily(
        "lagbot_group_status",
        "lagbot's status of the group: OK=0, WARN=1, STALL=2, REWIND=3, STOP=4, ERR=5.",
        labels=[*GROUP_LABELS, "status"],
    )
    severity = GaugeMetricFamily(
        "lagbot_group_severity",
        "lagbot's severity of the group: ok=0, warn=1, critical=2, page=3.",
        labels=[*GROUP_LABELS, "severity"],
    )
    for v in verdicts:
        labels = [v.cluster, v.group]
        known = [p.lag for p in v.partitions if p.lag is not None]
        if known:
            max_lag.add_metric(labels, max(known))
        if v.total_lag is not None:
            sum_lag.add_metric(labels, v.total_lag)
        for topic, total in sorted(topic_lags(v).items()):
            topic_sum.add_metric([*labels, topic], total)
        if v.max_lag_seconds is not None:
            max_seconds.add_metric(labels, v.max_lag_seconds)
        status.add_metric([*labels, v.status.name], int(v.status))
        severity.add_metric([*labels, v.severity.label], int(v.severity))
    return [max_lag, sum_lag, topic_sum, max_seconds, status, severity]


def topic_lags(verdict: GroupVerdict) -> dict[str, int]:
    """Sum of the known partition lags per topic (a topic with no known lag is left out)."""
    totals: dict[str, int] = {}
    for p in verdict.partitions:
        if p.lag is not None:
            totals[p.topic] = totals.get(p.topic, 0) + p.lag
    return totals


def offset_families(verdicts: Iterable[GroupVerdict]) -> list[GaugeMetricFamily]:
    """Log-end and log-start offsets per partition, once per partition however many groups read it."""
    latest = GaugeMetricFamily(
        "kafka_partition_latest_offset", "Log-end offset of the partition.", labels=[CLUSTER, "topic", "partition"]
    )
    earliest = GaugeMetricFamily(
        "kafka_partition_earliest_offset", "Log-start offset of the partition.", labels=[CLUSTER, "topic", "partition"]
    )
    seen: set[tuple[str, str, int]] = set()
    for v in verdicts:
        for p in v.partitions:
            key = (v.cluster, p.topic, p.partition)
            if key in seen:
                continue
            seen.add(key)
            latest.add_metric([v.cluster, p.topic, str(p.partition)], p.log_end)
            earliest.add_metric([v.cluster, p.topic, str(p.partition)], p.log_start)
    return [latest, earliest]


def cluster_up_family(report: CheckReport | None) -> GaugeMetricFamily:
    """1 for each cluster read in the latest check, 0 for each that could not be read."""
    up = GaugeMetricFamily("lagbot_cluster_up", "1 when the latest check read the cluster, else 0.", labels=[CLUSTER])
    if report is not None:
        for cluster in sorted(set(report.clusters) | set(report.cluster_errors)):
            up.add_metric([cluster], 0 if cluster in report.cluster_errors else 1)
    return up


def last_check_family(report: CheckReport | None) -> GaugeMetricFamily:
    last = GaugeMetricFamily("lagbot_last_check_timestamp_seconds", "When the latest check was taken (Unix time).")
    if report is not None:
        last.add_metric([], report.taken_at)
    return last


class Metrics:
    """lagbot's metrics in their own registries: feed it reports, durations and Slack errors; render on scrape.

    The latest report's metrics are rendered once per report and kept (at 5,000 groups x 20 partitions that
    takes seconds, see bench/digest.py, and Prometheus scrapes more often than lagbot checks); the small
    counters and histograms are rendered at each scrape. Thread-safe: the scheduler observes while the
    HTTP server renders.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.report_registry = CollectorRegistry(auto_describe=False)
        self._report = ReportCollector()
        self.report_registry.register(self._report)
        self._rendered_report: bytes | None = None
        self._lock = threading.Lock()
        self.check_duration = Histogram(
            "lagbot_check_duration_seconds",
            "Duration of one check of one cluster (collect, window, evaluate, diagnose).",
            [CLUSTER],
            registry=self.registry,
            buckets=CHECK_DURATION_BUCKETS,
        )
        self.slack_errors = Counter(
            "lagbot_slack_errors", "Slack Web API calls that failed, by method and Slack error.", ["method", "error"],
            registry=self.registry,
        )  # fmt: skip
        self.check_cycles = Counter("lagbot_check_cycles", "Check cycles completed.", registry=self.registry)
        self.groups = Gauge(
            "lagbot_groups", "Groups in the latest check, by status.", ["status"], registry=self.registry
        )
        self.check_failing = Gauge(
            "lagbot_check_failing",
            "1 while the checks of the cluster fail on lagbot's side (see /healthz), else 0.",
            [CLUSTER],
            registry=self.registry,
        )
        self.check_failures = Counter(
            "lagbot_check_failures", "Checks of the cluster that failed on lagbot's side.", [CLUSTER],
            registry=self.registry,
        )  # fmt: skip

    def observe_report(self, report: CheckReport) -> None:
        """Make `report` the one /metrics shows, and count one check cycle."""
        with self._lock:
            self._report.update(report)
            self._rendered_report = None
            for status in Status:
                self.groups.labels(status.name).set(sum(1 for v in report.verdicts if v.status is status))
            self.check_cycles.inc()

    def observe_check_duration(self, cluster: str, seconds: float) -> None:
        self.check_duration.labels(cluster).observe(seconds)

    def observe_check_failed(self, cluster: str, *, failing: bool) -> None:
        """A check of `cluster` ended: failed (`failing`) or succeeded."""
        self.check_failing.labels(cluster).set(1 if failing else 0)
        if failing:
            self.check_failures.labels(cluster).inc()

    def slack_error(self, method: str, error: str) -> None:
        """Count one failed Slack call, e.g. ("chat.postMessage", "ratelimited")."""
        self.slack_errors.labels(method, error).inc()

    def render(self) -> bytes:
        """Every metric in Prometheus text format (serve it with CONTENT_TYPE)."""
        with self._lock:
            if self._rendered_report is None:
                self._rendered_report = generate_latest(self.report_registry)
            report = self._rendered_report
        return report + generate_latest(self.registry)
