"""What a run leaves to undo, and undoing it: the held change of a run cut short is due at once, what a remediation
hands back (a paused autoscaler, after its hold) at its time; the leader's housekeeping runs each due restore once
across replicas (the queue is lagbot.service.restores `RestoreQueue`), says it in the incident's thread and audits it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from lagbot.policies.model import Rule
from lagbot.remediations import registry
from lagbot.remediations.base import ExecutionContext, Outcome, Remediation, restore_document
from lagbot.remediations.executors.base import Executor, ExecutorError, Workload
from lagbot.service import wording
from lagbot.service.approvals import Proposal, Proposals, State
from lagbot.service.audit import BOT_USER
from lagbot.service.restores import RestoreQueue

log = logging.getLogger(__name__)

RuleOf = Callable[[str, str], Rule]
"""(cluster, group) -> the policy rule that governs the group."""
Audit = Callable[..., None]
"""(event, proposal, user, now, **detail) -> None: how the remediator audits a proposal's event."""
Reply = Callable[[Proposal, str, float], None]
"""(proposal, line, now) -> None: a line in the proposal's incident thread, delivered."""


class Restorer:
    """What the runs of one bot replica leave to undo, and undoing it."""

    def __init__(
        self,
        proposals: Proposals,
        restores: RestoreQueue,
        *,
        rule: RuleOf,
        executor_for: Callable[[Workload], Executor],
        audit: Audit,
        reply: Reply,
    ) -> None:
        self.proposals = proposals
        self.restores = restores
        self.rule = rule
        self.executor_for = executor_for
        self._audit = audit
        self._reply = reply

    def undo_later(self, proposal: Proposal, outcome: Outcome, finished: float) -> None:
        """What the run leaves to undo: the held change of a run that was interrupted, or crashed out of its own
        clean-up, at once (`restore_due` runs it, once across replicas), else what the remediation hands back (e.g.
        a paused autoscaler, after its hold); a run that ended on its own undid the rest itself, so what it held is
        dropped."""
        if outcome.cut_short is not None and self.restores.release(proposal.id, finished):
            log.warning("restoring what an interrupted run changed", extra={"proposal": proposal.id})
            return
        later = registry.get(proposal.action).hand_back(proposal.plan, outcome, finished=finished)
        if later is not None:
            at, payload = later
            self.restores.schedule(proposal.id, at, restore_document(payload))
        else:
            self.restores.forget(proposal.id)

    def release_stranded(self, now: float, *, grace: float) -> None:
        """A hold whose run finished more than `grace` ago is stranded: the replica that finished the run died
        before it released or dropped the hold (`undo_later`). Its change is undone at once, as for a reaped run:
        putting the workload back as it was before the run is the plan's promise, and harmless when the run had
        already put it back itself."""
        for proposal_id in self.restores.held():
            proposal = self.proposals.get(proposal_id)
            if proposal is None:
                log.error("restore lost: its proposal is gone", extra={"proposal": proposal_id})
                self.restores.forget(proposal_id)
            elif proposal.state is not State.RUNNING and (proposal.finished_at or now) <= now - grace:
                log.warning("restoring what a finished run left held", extra={"proposal": proposal_id})
                self.restores.release(proposal_id, now)

    def restore_due(self, *, now: float) -> list[Outcome]:
        """Run each restore whose time has come, once across replicas (lagbot.service.restores)."""
        outcomes = []
        for proposal_id, previous in self.restores.claim_due(now=now):
            proposal = self.proposals.get(proposal_id)
            if proposal is None:
                log.error("restore lost: its proposal is gone", extra={"proposal": proposal_id})
                continue
            outcomes.append(self._restore(proposal, previous, now))
        return outcomes

    def _restore(self, proposal: Proposal, previous: Any, now: float) -> Outcome:
        remediation: Remediation | None = None
        try:
            remediation = registry.get(proposal.action)
            rule = self.rule(proposal.cluster, proposal.group)
            context = ExecutionContext(executor=self._executor(rule), workload=rule.workload)
            outcome = remediation.restore(proposal.plan, context, previous=previous)
        except Exception as exc:  # never let one restore stop the others
            log.exception("restore failed", extra={"proposal": proposal.id})
            outcome = Outcome(False, wording.remediation_crashed("restore", exc))
        self._audit("restored" if outcome.ok else "restore_failed", proposal, BOT_USER, now, detail=outcome.detail)
        words = remediation.restored(outcome) if remediation is not None else outcome.detail
        self._reply(proposal, wording.restored(outcome.ok, words), now)
        return outcome

    def _executor(self, rule: Rule) -> Executor | None:
        """The rule's executor; None when it has no workload or the executor cannot be made (the remediation's
        `restore` then says what to restore by hand)."""
        if rule.workload is None:
            return None
        try:
            return self.executor_for(rule.workload)
        except (ExecutorError, ValueError, OSError):
            log.exception("no executor to restore with", extra={"workload": rule.workload.name})
            return None
