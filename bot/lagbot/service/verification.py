"""Verification of a remediation that ran: each later check of its incident is judged by the remediation's own
`verify` (improving / no change / worse / resolved), said once per change of progress in the incident's thread, and
kept in the incident's run state (lagbot.service.remediation_stores `RunStates`), written only while it is still
what was read, so a run that starts or ends meanwhile is never clobbered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from lagbot.core.model import GroupVerdict
from lagbot.policies.model import Rule
from lagbot.remediations import registry
from lagbot.remediations.base import Progress, Verification
from lagbot.remediations.verify import VerifyRules, assess
from lagbot.service import wording
from lagbot.service.approvals import Proposals
from lagbot.service.audit import BOT_USER, AuditEntry
from lagbot.service.bot import Bot
from lagbot.service.checkpoints import CheckPoint, check_of, point_of
from lagbot.service.incidents import REPLY, Change, Effect, Incident
from lagbot.service.remediation_state import RemediationState, RunState
from lagbot.service.remediation_stores import RunStates

RuleOf = Callable[[str, str], Rule]
"""(cluster, group) -> the policy rule that governs the group."""


class Verifier:
    """The verification of one bot replica's remediations (the check loop calls it for each open incident)."""

    def __init__(self, bot: Bot, proposals: Proposals, runs: RunStates, rule: RuleOf) -> None:
        self.bot = bot
        self.proposals = proposals
        self.runs = runs
        self.rule = rule

    def verify_step(self, incident: Incident, verdict: GroupVerdict, *, now: float) -> None:
        """Feed one more check to the remediation under verification; speak once per change of progress.

        Nothing is said or written if the state changed since it was read (the next check goes on from it).
        """
        state, seen = self.runs.read(incident.id)
        if state is None or state.state != RunState.VERIFYING:
            return
        rule = self.rule(incident.cluster, incident.group)
        checks = [*state.checks, point_of(verdict, now)]
        verification = self.judge(state, checks, verdict, rule.verification)
        keep = rule.verification.no_change_after + rule.verification.settle_checks + 2
        changed = verification.progress != state.progress
        ended = verification.progress in (Progress.RESOLVED, Progress.NO_CHANGE, Progress.WORSE)
        state = dataclasses.replace(
            state,
            checks=tuple(checks[-keep:]),
            detail=verification.detail,
            progress=verification.progress,
            state=RunState(verification.progress.value) if ended else state.state,
        )
        if not self.runs.replace(incident.id, state, seen):
            return  # a run started or ended meanwhile: its state stands
        if changed and verification.progress is not Progress.PENDING:
            line = verification.detail
            if verification.progress in (Progress.NO_CHANGE, Progress.WORSE):
                line = wording.verify_escalation(verification.detail, rule.approvers.mentions())
            self._audit(state, "verified", incident, now, progress=verification.progress.value, detail=line)
            self.bot.enqueue(Effect(REPLY, Change.REMEDIATION, line), incident, verdict, now=now)

    def judge(
        self, state: RemediationState, checks: list[CheckPoint], verdict: GroupVerdict, rules: VerifyRules
    ) -> Verification:
        """The remediation's own judgement of the checks since it ran (`Remediation.verify`): the stored
        summaries of the earlier checks, then this check's whole verdict. Without its proposal (expired from
        its store) there is no plan to judge against: the generic rules of lagbot.remediations.verify apply."""
        proposal = self.proposals.get(state.id)
        if proposal is None or proposal.action not in registry.names():
            return assess([check_of(c) for c in checks], rules)
        verdicts = [*(check_of(c).verdict for c in checks[:-1]), verdict]
        times = [c.at for c in checks]
        return registry.get(proposal.action).verify(proposal.plan, verdicts, times=times, rules=rules)

    def resolved(self, incident: Incident, *, now: float) -> None:
        """The incident resolved: a remediation still being judged is over, and the root says so."""
        state, seen = self.runs.read(incident.id)
        if state is not None and state.state in (RunState.VERIFYING, RunState.WORSE, RunState.NO_CHANGE):
            resolved = dataclasses.replace(state, state=RunState.RESOLVED, detail=wording.remediation_resolved())
            self.runs.replace(incident.id, resolved, seen)

    def _audit(self, state: RemediationState, event: str, incident: Incident, now: float, **detail: Any) -> None:
        action, proposal = state.action or None, state.id or None
        entry = AuditEntry(now, event, incident.cluster, incident.group, BOT_USER, action, proposal, detail)
        self.bot.audit.record(entry)
