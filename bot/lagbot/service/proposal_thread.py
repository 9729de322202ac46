"""How a proposal speaks in its incident's thread: replies, the root's remediation state, and their delivery.

A proposal belongs to the thread of the incident it was offered in while that incident is its group's current one
(`ProposalThread.incident`); a proposal of no incident (`/lag remediate` outside a thread) says nothing there. A
reply or a root edit is queued through the bot's outbox with the group's verdict as the stored windows show it (no
live read from a click's thread), and delivered now, or in the background while a run goes on (`deliver_soon`). The
remediation state the root shows is written to the run states (lagbot.service.remediation_stores `RunStates`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable

from lagbot.core.model import GroupVerdict
from lagbot.policies.model import Rule
from lagbot.service import wording
from lagbot.service.approvals import Proposal
from lagbot.service.bot import Bot
from lagbot.service.checkpoints import point_of, unknown_verdict
from lagbot.service.incidents import REPLY, UPDATE_ROOT, Change, Effect, Incident
from lagbot.service.pod_causes import PodCauses
from lagbot.service.remediation_state import RemediationState, RunState
from lagbot.service.remediation_stores import RunStates

log = logging.getLogger(__name__)


class ProposalThread:
    """The thread the remediations of one bot replica speak in (lagbot.service.remediate's `Remediator`)."""

    def __init__(self, bot: Bot, runs: RunStates, pod_causes: PodCauses, rule: Callable[[str, str], Rule]) -> None:
        """`pod_causes` puts the owners' pods as last read on the stored verdict; `rule` is the group's policy rule
        (its settle checks)."""
        self.bot = bot
        self.runs = runs
        self.pod_causes = pod_causes
        self.rule = rule

    def incident(self, proposal: Proposal) -> Incident | None:
        """The incident whose thread the proposal belongs to, while it is the group's current one."""
        if proposal.incident_id is None:
            return None
        incident = self.bot.incidents.get(proposal.cluster, proposal.group)
        return incident if incident is not None and incident.id == proposal.incident_id else None

    def reply(self, proposal: Proposal, line: str, now: float, *, deliver: bool = True) -> None:
        """Say `line` in the proposal's thread (nothing when it has none), delivered now unless `deliver` is False."""
        incident = self.incident(proposal)
        if incident is None:
            return
        verdict = self.stored_verdict(proposal.cluster, proposal.group)
        self.bot.enqueue(Effect(REPLY, Change.REMEDIATION, line), incident, verdict, now=now)
        if deliver:
            self.bot.deliver()

    def progress(self, proposal: Proposal, line: str) -> None:
        """A running remediation's progress line: queued, delivered in the background (the run goes on)."""
        self.reply(proposal, line, self.bot.clock(), deliver=False)
        self.deliver_soon()

    def deliver_soon(self) -> None:
        """Deliver what is queued in the background: the caller goes on without waiting for Slack."""

        def deliver() -> None:
            try:
                self.bot.deliver()
            except Exception:  # what is not delivered stays queued for the next delivery
                log.exception("background delivery failed")

        threading.Thread(target=deliver, name="deliver-soon", daemon=True).start()

    def set_state(
        self,
        proposal: Proposal,
        state: RunState,
        detail: str,
        now: float,
        *,
        baseline: bool = False,
        deliver: bool = True,
    ) -> None:
        """Show the proposal's run as `state` on its incident's root (nothing when it has none): a run still verifying
        once its incident resolved shows as resolved; with `baseline`, its first check point and settle period."""
        incident = self.incident(proposal)
        if incident is None:
            return
        if not incident.is_open and state == RunState.VERIFYING:
            state, detail = RunState.RESOLVED, wording.remediation_resolved()  # it resolved while the action ran
        remediation = RemediationState(action=proposal.action, state=state, detail=detail, id=proposal.id)
        verdict = self.stored_verdict(proposal.cluster, proposal.group)
        if baseline:
            # The rebalance a restart or scale causes is expected until its settle checks have passed
            # (lagbot.engine.agreement own_rebalance).
            settle = self.rule(proposal.cluster, proposal.group).verification.settle_checks + 1
            interval = self.bot.settings.cluster(proposal.cluster).check_interval
            remediation = dataclasses.replace(
                remediation, checks=(point_of(verdict, now),), executed_at=now, settle_until=now + settle * interval
            )
        self.runs.write(incident.id, remediation)
        self.bot.enqueue(Effect(UPDATE_ROOT, Change.REMEDIATION), incident, verdict, now=now)
        if deliver:
            self.bot.deliver()

    def stored_verdict(self, cluster: str, group: str) -> GroupVerdict:
        """The group's verdict from the stored windows, with the owners' pods as last read (never read here: a
        click's thread)."""
        verdicts = self.bot.checker.judge_stored(cluster, [group])
        if verdicts:
            return self.pod_causes.explained(verdicts[0], now=self.bot.clock(), read=False)
        return unknown_verdict(cluster, group)
