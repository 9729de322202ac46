"""What this replica knows of each cluster's last check: its own newest reports, and the groups as of that check.

The leader keeps its newest report of each cluster (`LatestReports.by_cluster`: /metrics, /healthz and `/lag top`
read it without asking Redis). A report is fresh while taken within two check intervals and the cluster was read;
past that, or on a follower, a cluster's groups come from the summary the leader stored (lagbot.service.summary)
while it is fresh, else are judged from the stored windows (lagbot.engine.check `Checker.judge_stored`).
"""

from __future__ import annotations

import logging

from lagbot.core.config import Settings
from lagbot.core.model import GroupSummary, GroupVerdict
from lagbot.core.stored import StoredFormatError
from lagbot.engine.check import Checker, CheckReport
from lagbot.service.summary import Summaries

log = logging.getLogger(__name__)


class LatestReports:
    """The newest report of each cluster on this replica, and the clusters' current state read from it or the stores."""

    def __init__(self, settings: Settings, checker: Checker, summaries: Summaries) -> None:
        self.settings = settings
        self.checker = checker
        self.summaries = summaries
        self.by_cluster: dict[str, CheckReport] = {}
        """Each cluster's newest report taken by this replica."""

    def current_verdicts(self, cluster: str, *, now: float) -> list[GroupVerdict]:
        """The cluster's verdicts as of its last check, for `/lag top` and the digest.

        This replica's own last report while it is fresh (the leader's: no Redis read, no judging; 100,000
        group-partitions judged again cost seconds), else judged from the stored windows (a follower, a cluster
        this replica has not checked within two intervals, or one its last check could not read).
        """
        report = self._fresh_report(cluster, now=now)
        if report is not None:
            return list(report.verdicts)
        return self.checker.judge_stored(cluster)

    def current_summaries(self, cluster: str, *, now: float) -> list[GroupSummary]:
        """The cluster's groups as of its last check, for `/lag top`, on any replica.

        This replica's own last report while it is fresh (the leader), else the summary the leader stored in Redis
        while it is fresh (a follower: one key read, no window judged), else judged from the stored windows (no
        check within two intervals, or the last one could not read the cluster).
        """
        report = self._fresh_report(cluster, now=now)
        if report is not None:
            return [GroupSummary.of(v) for v in report.verdicts]
        try:
            stored = self.summaries.get(cluster)
        except StoredFormatError:
            log.warning("stored summary unreadable; judging the windows", extra={"cluster": cluster}, exc_info=True)
            stored = None
        if stored is not None and stored.taken_at >= self._fresh_after(cluster, now=now):
            return stored.groups
        return [GroupSummary.of(v) for v in self.checker.judge_stored(cluster)]

    def merged(self) -> CheckReport:
        """The newest report of every cluster, as one (what /metrics shows)."""
        reports = list(self.by_cluster.values())
        return CheckReport(
            taken_at=max((r.taken_at for r in reports), default=0.0),
            verdicts=[v for r in reports for v in r.verdicts],
            cluster_errors={k: v for r in reports for k, v in r.cluster_errors.items()},
            clusters=[c for r in reports for c in r.clusters],
        )

    def _fresh_after(self, cluster: str, *, now: float) -> float:
        return now - 2 * self.settings.cluster(cluster).check_interval

    def _fresh_report(self, cluster: str, *, now: float) -> CheckReport | None:
        """This replica's last report of the cluster, if taken within two check intervals and the cluster read."""
        report = self.by_cluster.get(cluster)
        if (
            report is not None
            and report.taken_at >= self._fresh_after(cluster, now=now)
            and cluster not in report.cluster_errors
        ):
            return report
        return None
