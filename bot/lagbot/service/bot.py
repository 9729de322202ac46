"""The running bot: scheduled checks -> incidents -> outbox -> Slack, led by one replica at a time.

`Bot` is one replica's check loop: collect, judge, step each group's incident, queue the effects. It owns the
long-lived parts, each built in `__init__` from the stores it is given, and does one thing per method:
`Leadership` (lagbot.service.leadership) decides whether this replica may check, deliver and post; `LatestReports`
(lagbot.service.latest_reports) keeps what it last saw; `Delivery` (lagbot.service.delivery) queues the incidents'
messages and delivers the outbox; `DirectSlack` (lagbot.service.slack_api) makes the calls outside it;
`DigestPoster` (lagbot.service.digest_poster) posts the digests; the remediation side answers the
`RemediationHooks` (lagbot.service.remediation_hooks). The scheduler (lagbot.service.scheduler) calls it on time.
Nothing here renders a message (the `Presenter` it is given does: lagbot.slack.presenter) or decides incident rules
(lagbot.service.incidents).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import redis
from redis import Redis as RedisClient
from slack_sdk import WebClient

from lagbot.core.config import Settings, Thresholds
from lagbot.core.digest_config import DigestConfig
from lagbot.core.model import GroupSummary, GroupVerdict, Severity
from lagbot.engine.check import Checker, CheckReport, collector_paused
from lagbot.policies.model import Policy
from lagbot.service import remediation_hooks, wording
from lagbot.service.cluster_health import CheckFailure, note_check_failed, note_check_recovered, note_reachability
from lagbot.service.delivery import Delivery
from lagbot.service.digest import ComposedDigest, PostedDigest
from lagbot.service.digest_poster import DigestPoster
from lagbot.service.incidents import POST_ROOT, REPLY, Change, Effect, Incident, gone, gone_verdict, step
from lagbot.service.latest_reports import LatestReports
from lagbot.service.leadership import Leadership
from lagbot.service.metrics import Metrics
from lagbot.service.outbox import POST_ROOT as POST_MESSAGE
from lagbot.service.outbox import UPDATE_ROOT as UPDATE_MESSAGE
from lagbot.service.outbox import DeliveryReport, Operation
from lagbot.service.pattern_notes import PatternNotes
from lagbot.service.pod_causes import cycle_round
from lagbot.service.presenter import Presenter
from lagbot.service.remediation_hooks import RemediationHooks
from lagbot.service.slack_api import DirectSlack
from lagbot.service.slack_message import Block
from lagbot.service.state_epoch import LossNews, loss_horizon
from lagbot.service.stores import BotStores, redis_stores
from lagbot.service.storms import Show, StormSummary

log = logging.getLogger(__name__)


def carries_buttons(effect: Effect) -> bool:
    """Whether the proposals offered in the same check may go with this effect's message: any reply but the first
    (the per-partition table, edited with the root: a click's edit of it would be overwritten by the next table)."""
    return effect.kind == REPLY and effect.change is not Change.OPENED


Silenced = Callable[[float], set[tuple[str, str]]]
"""now -> the (cluster, group) pairs whose incidents may not open (read once per check, not per group)."""

ReportComposer = Callable[["Bot", DigestConfig, float], ComposedDigest]
"""(bot, digest, now) -> the weekly report a `report: true` digest posts."""


@dataclass
class CycleResult:
    report: CheckReport
    delivery: DeliveryReport
    opened: int = 0


class Bot:
    """Checks, incidents and delivery for one replica. Thread-safe per method (the scheduler runs one
    check per cluster at a time)."""

    def __init__(
        self,
        settings: Settings,
        stores: BotStores,
        slack: WebClient,
        presenter: Presenter,
        *,
        silenced: Silenced | None = None,
        clock: Callable[[], float] = time.time,
        policy: Policy | None = None,
        remediations: Callable[[Bot], RemediationHooks] | None = None,
        report_composer: ReportComposer | None = None,
    ) -> None:
        """A replica on `stores` (lagbot.service.stores: `redis_stores` builds a running bot's, `memory_stores` one
        without Redis), whose leader lease names it (`replica_id`).

        `remediations` builds the bot's remediation side from the bot itself, last (lagbot.service.remediate's
        `Remediator` reads its settings, policy, stores and Slack client); none: no remediation is offered.
        `report_composer` composes the weekly report of a `report: true` digest (lagbot.slack.history_replies).
        """
        self.settings = settings
        self._redis = stores.redis
        self.slack = slack
        self.presenter = presenter
        self.replica_id = stores.leader.holder
        self.clock = clock
        self.policy = policy
        self.checker = Checker(settings, stores.windows, clock=clock, thresholds_for=self.thresholds_for)
        self.incidents = stores.incidents
        self.outbox = stores.outbox
        self.storms = stores.storms
        self.metrics = Metrics()
        self.history = stores.history
        kept = settings.digest.history
        self.pattern_notes = PatternNotes(self.history, tz=kept.zone, width=kept.rollup_resolution)
        self.summaries = stores.summaries
        self.audit = stores.audit
        self.leadership = Leadership(stores.leader)
        """Whether this replica leads (lagbot.service.leadership): only the leader checks, delivers and posts."""
        self.loss_news = LossNews(stores.epoch, [c.name for c in settings.clusters], horizon=loss_horizon(settings))
        """What this replica knows of a loss of the stored state (lagbot.service.state_epoch)."""
        self.remediation_stores = stores.remediation
        """What the remediation side keeps (lagbot.service.remediation_stores), for `remediations` to build on."""
        self.silenced: Silenced = silenced or (lambda _now: set())
        self.reports = LatestReports(settings, self.checker, stores.summaries)
        """This replica's newest report of each cluster, and the groups as of a cluster's last check."""
        self.away_since: dict[str, float] = {}
        """When each cluster became unreachable (lagbot.service.cluster_health), while it is."""
        self.failing: dict[str, CheckFailure] = {}
        """Each cluster whose latest check failed (lagbot.service.cluster_health), while it does."""
        self.slack_calls = DirectSlack(slack, self.metrics)
        """The calls made to Slack outside the outbox, and how Slack's refusals are told (lagbot.service.slack_api)."""
        self.delivery = Delivery(
            settings, stores.outbox, stores.outbox_lock, stores.shown, presenter, slack, on_error=self.slack_calls.error
        )
        """The incidents' messages queued in the outbox, and the outbox delivered (lagbot.service.delivery)."""
        self.digests = DigestPoster(
            slack,
            presenter,
            incidents=self.incidents,
            audit=self.audit,
            history=self.history,
            verdicts=self.every_verdict,
            channel_for=self.channel_for,
            on_error=self.metrics.slack_error,
            report_composer=None if report_composer is None else partial(report_composer, self),
        )
        """The channels' digests, gathered and posted (lagbot.service.digest_poster)."""
        self.remediations: RemediationHooks | None = None if remediations is None else remediations(self)

    @property
    def latest(self) -> dict[str, CheckReport]:
        """Each cluster's newest report taken by this replica (lagbot.service.latest_reports)."""
        return self.reports.by_cluster

    @property
    def redis(self) -> RedisClient:
        """The Redis client the app still uses directly (lagbot.service.stores.BotStores.redis).

        Raises:
            RuntimeError: the bot runs on memory stores, which have none.
        """
        if self._redis is None:
            raise RuntimeError("this bot runs on memory stores: it has no Redis client")
        return self._redis

    @classmethod
    def on_redis(
        cls,
        settings: Settings,
        client: RedisClient,
        slack: WebClient,
        presenter: Presenter,
        *,
        replica_id: str | None = None,
        **options: Any,
    ) -> Bot:
        """A replica on `client`'s Redis (`redis_stores`), as a running bot is; `options` are the constructor's."""
        return cls(settings, redis_stores(settings, client, replica_id=replica_id), slack, presenter, **options)

    # -- what the policy says about a group --------------------------------------------------------------

    def thresholds_for(self, cluster: str, group: str) -> Thresholds:
        rule = self.policy.match(cluster, group) if self.policy is not None else None
        return rule.thresholds if rule is not None and rule.thresholds is not None else self.settings.thresholds

    def channel_for(self, cluster: str, group: str) -> str | None:
        """The policy rule's channel when it names one, else the configuration's routes."""
        rule = self.policy.match(cluster, group) if self.policy is not None else None
        if rule is not None and rule.channel is not None:
            return rule.channel
        return self.settings.slack.channel_for(cluster, group)

    # -- a check ---------------------------------------------------------------------------------------

    def check(self, cluster: str, *, deliver: bool = True) -> CycleResult | None:
        """One check of one cluster, if this replica leads: collect, judge, record, update incidents, deliver.

        With `deliver=False` the effects are only queued (the scheduler's check: the outbox job sends them on its
        own thread, so a slow Slack never holds a cluster's next check back).
        """
        self._look_for_lost_state(cluster)
        if not self.leadership.is_leader():
            return None
        try:
            return self._check(cluster, deliver=deliver)
        except Exception as exc:
            # a check that fails is no check: /healthz and lagbot_check_failing say so until one succeeds
            self.failing[cluster] = note_check_failed(cluster, self.failing.get(cluster), exc, now=self.clock())
            self.metrics.observe_check_failed(cluster, failing=True)
            raise

    def _look_for_lost_state(self, cluster: str) -> None:
        """Every replica looks at each check, so whichever leads next knows of a loss it saw (a Redis that cannot
        be read now is the check's own failure on the leader, and nothing on a follower: the next look sees it)."""
        try:
            if self.loss_news.look(now=self.clock()):
                log.warning("stored state lost: Redis came back empty", extra={"cluster": cluster})
        except redis.RedisError as exc:
            log.debug("could not look at the state epoch", extra={"cluster": cluster, "error": str(exc)})

    def _check(self, cluster: str, *, deliver: bool) -> CycleResult:
        started = time.monotonic()
        with collector_paused():  # the cycle's objects die with it: nothing for the collector to walk meanwhile
            report = self.checker.cycle([cluster])
        self.metrics.observe_check_duration(cluster, time.monotonic() - started)
        note_reachability(cluster, self.reports.by_cluster.get(cluster), report, self.away_since)
        self.reports.by_cluster[cluster] = report
        if cluster not in report.cluster_errors:  # what every replica's `/lag top` reads (lagbot.service.summary)
            self.summaries.put(cluster, report.taken_at, report.verdicts)
            self.tell_state_lost(cluster, report.verdicts, taken_at=report.taken_at)
        self.metrics.observe_report(self.reports.merged())
        self.history.record(report)
        opened = self.apply(report.verdicts, now=report.taken_at)
        if cluster not in report.cluster_errors:
            self.close_gone(cluster, {v.group for v in report.verdicts}, now=report.taken_at)
        self.show_storms(now=report.taken_at)
        if self.failing.pop(cluster, None) is not None:
            note_check_recovered(cluster)
        self.metrics.observe_check_failed(cluster, failing=False)
        if not deliver:
            return CycleResult(report=report, delivery=DeliveryReport(pending=self.outbox.pending()), opened=opened)
        delivery = self.deliver()
        if self.remediations is not None:
            self.remediations.run_auto_approved(now=self.clock())
        return CycleResult(report=report, delivery=delivery, opened=opened)

    def current_verdicts(self, cluster: str) -> list[GroupVerdict]:
        """The cluster's verdicts as of its last check, for the digest (lagbot.service.latest_reports)."""
        return self.reports.current_verdicts(cluster, now=self.clock())

    def current_summaries(self, cluster: str) -> list[GroupSummary]:
        """The cluster's groups as of its last check, for `/lag top`, on any replica (lagbot.service.latest_reports)."""
        return self.reports.current_summaries(cluster, now=self.clock())

    def tell_state_lost(self, cluster: str, verdicts: Sequence[GroupVerdict], *, taken_at: float) -> None:
        """At the first check of `cluster` since the stored state was lost: say so in each channel whose groups are
        in trouble (their incidents reopen), once per channel of all replicas (lagbot.service.state_epoch).

        Queued as of just before the check was taken, so it is sent before the roots the check reopens.
        """
        troubled = {
            channel
            for v in verdicts
            if v.severity > Severity.OK and (channel := self.channel_for(v.cluster, v.group)) is not None
        }
        channels = self.loss_news.to_tell(cluster, troubled, now=self.clock())
        if not channels:
            return
        log.warning("telling the channels the stored state was lost", extra={"cluster": cluster, "channels": channels})
        message = self.presenter.state_lost()
        for channel in channels:
            notice = Operation(POST_MESSAGE, f"state-lost-{uuid.uuid4().hex[:12]}", "", "", channel, message)
            self.outbox.enqueue(notice, now=taken_at - 0.001)

    def apply(self, verdicts: list[GroupVerdict], *, now: float) -> int:
        """Step every group's incident with its verdict; queue the effects. Returns how many opened."""
        current = self.incidents.get_many((v.cluster, v.group) for v in verdicts)
        silenced = self.silenced(now)
        pods = cycle_round()  # the owners' pods of all these groups read in one bounded round
        opened = 0
        for verdict in verdicts:
            if not self.leadership.is_leader():
                break  # lost the lease mid-cycle (a long pause): the new leader owns the incidents now
            before = current.get((verdict.cluster, verdict.group))
            verdict = remediation_hooks.without_own_rebalance(self.remediations, before, verdict)
            transition = step(
                before,
                verdict,
                channel=self.channel_for(verdict.cluster, verdict.group),
                silenced=(verdict.cluster, verdict.group) in silenced,
                config=self.settings.incidents,
                now=now,
                settling=remediation_hooks.settling(self.remediations, before, self.settings, now=now),
            )
            incident = transition.incident
            if incident is None or incident == before:
                continue
            if any(e.kind == POST_ROOT for e in transition.effects):  # a new thread: unless a storm is on
                incident = replace(incident, storm=self.storms.admit(incident.channel, now=now))
            self.incidents.put(incident)
            if incident.storm is not None:  # folded: tracked as any incident, shown only in its storm's summary
                self.storms.fold(before, incident)
                opened += any(e.kind == POST_ROOT for e in transition.effects)
                continue
            verdict = remediation_hooks.explained(self.remediations, incident, verdict, now=now, round=pods)
            buttons, offered = remediation_hooks.offered(
                self.remediations, self.presenter, self.metrics, incident, verdict, now=now, round=pods
            )
            effects = list(transition.effects)
            if any(e.kind == POST_ROOT for e in effects):  # as on most nights? said, never silenced
                effects += self.pattern_notes.effects(incident, now=now)
            if buttons and not any(carries_buttons(e) for e in effects):
                effects.append(Effect(REPLY, Change.REMEDIATION, wording.remediations_offered()))
            for effect in effects:
                if carries_buttons(effect) and buttons:  # the first reply that may carry them does
                    self.enqueue(effect, incident, verdict, now=now, extra=buttons, proposals=offered)
                    buttons, offered = (), ()
                else:
                    self.enqueue(effect, incident, verdict, now=now)
            opened += any(e.kind == POST_ROOT for e in transition.effects)
        return opened

    def close_gone(self, cluster: str, listed: set[str], *, now: float) -> int:
        """Resolve the open incidents of `cluster` whose group the check did not list; returns how many."""
        closed = 0
        for incident in self.incidents.open_incidents():
            if incident.cluster != cluster or incident.group in listed or not self.leadership.is_leader():
                continue
            transition = gone(incident, wording.incident_group_gone(incident.group, cluster), now=now)
            assert transition.incident is not None
            self.incidents.put(transition.incident)
            closed += 1
            if transition.incident.storm is not None:  # folded: its storm's summary says so
                self.storms.fold(incident, transition.incident)
                continue
            for effect in transition.effects:
                self.enqueue(effect, transition.incident, gone_verdict(incident), now=now)
        return closed

    def show_storms(self, *, now: float) -> int:
        """Queue the storm summaries due now (posted once, edited at a bounded rate); returns how many."""
        if not self.leadership.is_leader():
            return 0

        def queue(show: Show, summary: StormSummary) -> None:
            message = self.presenter.storm_summary(summary)
            op = POST_MESSAGE if show is Show.POST else UPDATE_MESSAGE
            storm = summary.storm
            self.outbox.enqueue(Operation(op, storm.id, "", "", storm.channel, message), now=now)

        try:
            return self.storms.due(queue, now=now)
        except redis.RedisError:
            raise  # the store itself: the check fails and says so, as any other
        except Exception:  # a summary that cannot be drawn never stops the checks (nor the incidents' own messages)
            log.exception("storm summaries failed")
            self.metrics.slack_error("storms", "internal_error")
            return 0

    def enqueue(
        self,
        effect: Effect,
        incident: Incident,
        verdict: GroupVerdict,
        *,
        now: float,
        extra: Sequence[Block] = (),
        proposals: tuple[str, ...] = (),
    ) -> None:
        """Queue the effect's message (lagbot.service.delivery), with the incident's remediation as its root shows
        it; none for an incident folded into a storm. `proposals`: those whose buttons `extra` holds (a reply's)."""
        if incident.storm is not None:  # folded into a storm: no thread of its own (lagbot.service.storms)
            return
        if self.remediations is not None:
            incident = replace(incident, remediation=self.remediations.state(incident.id))
        self.delivery.enqueue(effect, incident, verdict, now=now, extra=extra, proposals=proposals)

    def deliver(self) -> DeliveryReport:
        """Send what the outbox holds, one deliverer at a time across replicas (lagbot.service.delivery)."""
        return self.delivery.deliver()

    def deliver_if_leader(self) -> None:
        """The scheduled delivery: what the checks queued (woken by each one) and what a dead deliverer left; then
        the proposals the policy auto-approves (their root is delivered by now)."""
        if not self.leadership.is_leader():
            return
        if self.outbox.pending():
            self.deliver()
        if self.remediations is not None:
            self.remediations.run_auto_approved(now=self.clock())

    def housekeeping(self) -> None:
        """On the leader: finish runs whose process died, hand back autoscalers whose hold is over, retire the
        proposals past their expiry."""
        if self.remediations is not None and self.leadership.is_leader():
            self.remediations.reap(now=self.clock())
            self.remediations.restore_due(now=self.clock())
            self.remediations.expire_due(now=self.clock())

    # -- digests -----------------------------------------------------------------------------------------

    def scheduled_digest(self, config: DigestConfig) -> PostedDigest | None:
        """A digest on its cron: only the leader posts it."""
        if not self.leadership.is_leader():
            return None
        return self.digest(config)

    def digest(self, config: DigestConfig) -> PostedDigest:
        """Post the digest of `config.channel` now (lagbot.service.digest_poster)."""
        return self.digests.post(config, now=self.clock())

    def every_verdict(self) -> list[GroupVerdict]:
        """Every group's verdict, cluster by cluster, as of its last check (`current_verdicts`)."""
        return [v for c in self.settings.clusters for v in self.current_verdicts(c.name)]
