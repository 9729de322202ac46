"""A channel's digest as the bot posts it, on its cron or on request: gathered from the stores, composed, posted.

The groups routed to the channel (every group when none is) give their verdicts; the incident store gives the
incidents that changed within the digest's period and the audit log the remediations that ended in it
(lagbot.service.digest's summaries); the presenter composes the message and its chart, and `post_digest` sends them.
A `report: true` digest posts the weekly report its composer makes instead (lagbot.slack.history_replies).
"""

from __future__ import annotations

from collections.abc import Callable

from slack_sdk import WebClient

from lagbot.core.digest_config import DigestConfig
from lagbot.core.model import GroupVerdict
from lagbot.service.audit import AuditTrail
from lagbot.service.digest import ComposedDigest, IncidentSummary, PostedDigest, RemediationSummary, post_digest
from lagbot.service.history import HistoryStore
from lagbot.service.incidents import IncidentStore
from lagbot.service.outbox import ErrorSeen
from lagbot.service.presenter import Presenter

ChannelFor = Callable[[str, str], str | None]
"""(cluster, group) -> the channel its messages go to (None: none)."""


class DigestPoster:
    """Posts the digests of one replica (the caller decides whether this replica may: the leader's cron does)."""

    def __init__(
        self,
        slack: WebClient,
        presenter: Presenter,
        *,
        incidents: IncidentStore,
        audit: AuditTrail,
        history: HistoryStore,
        verdicts: Callable[[], list[GroupVerdict]],
        channel_for: ChannelFor,
        on_error: ErrorSeen,
        report_composer: Callable[[DigestConfig, float], ComposedDigest] | None = None,
    ) -> None:
        """`verdicts`: every group's verdict as of its cluster's last check; `on_error` is told each call Slack
        refused; `report_composer` composes the weekly report of a `report: true` digest (none: it posts a digest)."""
        self.slack = slack
        self.presenter = presenter
        self.incidents = incidents
        self.audit = audit
        self.history = history
        self.verdicts = verdicts
        self.channel_for = channel_for
        self.on_error = on_error
        self.report_composer = report_composer

    def post(self, config: DigestConfig, *, now: float) -> PostedDigest:
        """Post the digest of `config.channel` now: the groups routed there (every group when none is)."""
        if config.report and self.report_composer is not None:
            report = self.report_composer(config, now)
            return post_digest(self.slack, config.channel, report.message, report.chart_png, filename="lag-month.png",
                               alt_text=report.chart_alt, on_error=self.on_error)  # fmt: skip
        since = now - config.period
        verdicts = self.verdicts()
        routed = [v for v in verdicts if self.channel_for(v.cluster, v.group) == config.channel] or verdicts
        keys = {(v.cluster, v.group) for v in routed}
        incidents = [
            IncidentSummary(i.cluster, i.group, i.opened_at, i.resolved_at, i.peak_lag, i.peak_severity.label)
            for i in self.incidents.changed_since(since)
            if (i.cluster, i.group) in keys
        ]
        remediations = [
            RemediationSummary(
                e.cluster,
                e.group,
                e.action or "",
                str(e.detail.get("requested_by", "")),
                tuple(str(u) for u in e.detail.get("approved_by", ())),
                e.at,
                e.event,
            )
            for e in self.audit.export(since=since)
            if e.event in ("succeeded", "failed") and (e.cluster, e.group) in keys
        ]
        composed = self.presenter.digest(
            config=config,
            verdicts=routed,
            history=self.history,
            incidents=incidents,
            remediations=remediations,
            now=now,
        )
        return post_digest(
            self.slack,
            config.channel,
            composed.message,
            composed.chart_png,
            alt_text=composed.chart_alt,
            on_error=self.on_error,
        )
