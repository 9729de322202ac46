"""Remediations from the incident thread: propose, approve, run exactly once, verify, audit.

    incident opens -> `propose` (the rule's allowed actions that the causes suggest; plans are pure; what the
                      live system refused is said once: lagbot.service.refusals)
    click          -> `click` (approver? atomic approval in the proposal store) -> `run` on the one caller told RUN
    later checks   -> `verify_step` (improving / no change / worse / resolved, once per change:
                      lagbot.service.verification)
    housekeeping   -> `reap` (runs that died or hung), `restore_due` (what runs left to undo:
                      lagbot.service.restoring), `expire_due` (lagbot.service.expiry)

Every step writes an audit entry and speaks in the incident's thread through the bot's outbox
(lagbot.service.proposal_thread). Any failure inside a remediation becomes a failed outcome in the thread: it never
stops the checks. What it keeps is the bot's remediation stores (lagbot.service.remediation_stores: Redis, or their
memory twins).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

from lagbot.core import messages
from lagbot.core.ids import valid_user
from lagbot.core.model import GroupVerdict
from lagbot.policies.approvers import ApproverDirectory, ApproversUnavailable
from lagbot.policies.model import Rule, remediation_params
from lagbot.remediations import registry
from lagbot.remediations.base import (
    DEFAULT_LONGEST_RUN,
    CutShort,
    EvidenceRefusal,
    ExecutionContext,
    Outcome,
    PlanError,
    ProposalContext,
)
from lagbot.remediations.executors.base import Executor, ExecutorError, Workload
from lagbot.remediations.executors.pod_evidence import PodReadings, ReadRound
from lagbot.service import remedies, wording
from lagbot.service.approvals import ClickAnswer, Proposal, Proposals, State, Verdict
from lagbot.service.audit import BOT_USER, AuditEntry
from lagbot.service.bot import Bot
from lagbot.service.expiry import ProposalExpiry
from lagbot.service.heartbeat import STALE_BEATS, RunHeartbeat, silent_runs
from lagbot.service.incidents import Incident
from lagbot.service.pod_causes import PodCauses
from lagbot.service.proposal_thread import ProposalThread
from lagbot.service.refusals import Refusals
from lagbot.service.remediation_state import RemediationState, RunState
from lagbot.service.remediation_stores import STATE_KEEP
from lagbot.service.restores import RestoreQueue
from lagbot.service.restoring import Restorer
from lagbot.service.slack_message import SlackMessage
from lagbot.service.verification import Verifier

log = logging.getLogger(__name__)

ExecutorFor = Callable[[Workload], Executor]


class Remediator:
    """The remediation side of one bot replica, on the bot's remediation stores (lagbot.service.remediation_stores:
    Redis, or their memory twins); `proposals` and `restores`, when given, replace the bot's own."""

    def __init__(
        self,
        bot: Bot,
        *,
        directory: ApproverDirectory,
        executor_for: ExecutorFor,
        proposals: Proposals | None = None,
        restores: RestoreQueue | None = None,
    ) -> None:
        if bot.policy is None:
            raise ValueError("remediations need a policy")
        self.bot = bot
        self.policy = bot.policy
        stores = bot.remediation_stores
        self.proposals = proposals if proposals is not None else stores.proposals
        self.directory = directory
        self.executor_for = executor_for
        self.restores = restores if restores is not None else stores.restores
        self.offer_book = stores.offers
        self.runs = stores.runs
        self.heartbeats = stores.heartbeats
        self._auto: list[str] = []
        """Proposals the policy auto-approves, to run once the check that made them has delivered."""
        self.refusals = Refusals(bot, self.offer_book, self.rule)
        """What the live system refused at this check, said once its messages are queued (lagbot.service.refusals)."""
        self.pod_readings = PodReadings()
        """Each owner's pod, read at most once in PodReadings' time (the restart refused at every check, the causes)."""
        self.pod_causes = PodCauses(self.pod_readings, self._workload_of, executor_for)
        self.thread = ProposalThread(bot, self.runs, self.pod_causes, self.rule)
        """Where the proposals speak: their incident's thread and root (lagbot.service.proposal_thread)."""
        self.expiry = ProposalExpiry(bot, self.proposals, stores.messages, audit=self._audit, keep=STATE_KEEP)
        self.verifier = Verifier(bot, self.proposals, self.runs, self.rule)
        self.restorer = Restorer(
            self.proposals,
            self.restores,
            rule=self.rule,
            executor_for=lambda workload: self.executor_for(workload),  # this remediator's, as it is then
            audit=self._audit,
            reply=self.thread.reply,
        )

    # -- proposing ---------------------------------------------------------------------------------------

    def rule(self, cluster: str, group: str) -> Rule:
        return self.policy.match(cluster, group)

    def suggested(self, verdict: GroupVerdict) -> list[str]:
        """The remediations that answer the causes (lagbot.service.remedies), most likely cause first, no repeats."""
        return remedies.remedies(verdict.causes)

    def propose(
        self,
        verdict: GroupVerdict,
        *,
        now: float,
        incident: Incident | None,
        actions: list[str] | None = None,
        requested_by: str = BOT_USER,
        given: dict[str, Any] | None = None,
    ) -> tuple[list[Proposal], list[str]]:
        """Proposals for the actions the rule allows (default: those the causes suggest).

        Returns the proposals and, for each action not offered, the reason (for `/lag remediate`).
        """
        made, skipped, _ = self._propose(verdict, now, incident, actions, requested_by, given or {})
        return made, skipped

    def _propose(
        self,
        verdict: GroupVerdict,
        now: float,
        incident: Incident | None,
        actions: list[str] | None,
        requested_by: str,
        given: dict[str, Any],
        round: ReadRound | None = None,
    ) -> tuple[list[Proposal], list[str], dict[str, str]]:
        """`propose`'s proposals and reasons, and the actions the live system refused: action -> its evidence. `round`:
        the check cycle's bound on the pod reads of its proposals (None: a person asked)."""
        rule = self.rule(verdict.cluster, verdict.group)
        made: list[Proposal] = []
        skipped: list[str] = []
        refused: dict[str, str] = {}
        offered = self._offered_actions(incident) if actions is None else set()
        for action in actions if actions is not None else self.suggested(verdict):
            if action in offered:
                continue
            try:
                made.append(self._proposal(rule, action, verdict, now, incident, requested_by, given, round))
            except (PlanError, ExecutorError, ValueError, registry.RegistryError) as exc:
                skipped.append(messages.remediation_not_offered(action, str(exc)))
                if isinstance(exc, EvidenceRefusal):
                    refused[action] = str(exc)
        for proposal in made:
            if requested_by == BOT_USER and rule.auto_approves(proposal.action, now):
                self._auto.append(proposal.id)
        return made, skipped, refused

    def run_auto_approved(self, *, now: float) -> None:
        """Say this check's refusals, then run what the policy auto-approves, after the incident's messages are queued
        and delivered (so the replies land in its thread), never in a maintenance window (checked again now)."""
        self.refusals.say(now=now)
        while self._auto:
            proposal = self.proposals.get(self._auto.pop(0))
            if proposal is not None and self.rule(proposal.cluster, proposal.group).auto_approves(proposal.action, now):
                self.approve_and_run(proposal.id, BOT_USER, now=now, auto=True)

    def _proposal(
        self,
        rule: Rule,
        action: str,
        verdict: GroupVerdict,
        now: float,
        incident: Incident | None,
        requested_by: str,
        given: dict[str, Any],
        round: ReadRound | None = None,
    ) -> Proposal:
        policy = rule.allows(action)
        if policy is None:
            raise ValueError(messages.policy_not_allowed(rule.name, action))
        left = self.proposals.in_cooldown(verdict.cluster, verdict.group, action)
        if left > 0:
            raise ValueError(wording.remediation_cooling_down(action, left))
        remediation = registry.get(action)
        raw = remediation_params(rule, action, **given)
        params = remediation.prepare(raw, verdict, self._proposal_context(rule, action, verdict.cluster, now, round))
        plan = remediation.plan(verdict, params, now=now)
        proposal = self.proposals.create(
            plan,
            requested_by=requested_by,
            now=now,
            expires_in=policy.proposal_expiry,
            approvals_required=policy.approvals_required,
            cooldown=policy.cooldown,
            channel=incident.channel if incident else None,
            incident_id=incident.id if incident else None,
        )
        self._audit("proposed", proposal, requested_by, now, plan=plan.summary, steps=list(plan.steps))
        if incident is not None:
            self.offer_book.offer(incident.id, proposal.action, proposal.id)
        return proposal

    def explained(self, verdict: GroupVerdict, *, now: float, round: ReadRound | None = None) -> GroupVerdict:
        """The verdict with its owners' pods on the causes that blame them (lagbot.service.pod_causes), read within
        the check cycle's `round`."""
        return self.pod_causes.explained(verdict, now=now, round=round)

    def _workload_of(self, cluster: str, group: str) -> Workload | None:
        return self.rule(cluster, group).workload

    def _proposal_context(
        self, rule: Rule, action: str, cluster: str, now: float, round: ReadRound | None = None
    ) -> ProposalContext:
        """The live system as a remediation's `prepare` may read it: made only when it asks; its pod reads within
        `round` when the check's thread proposes."""
        workload = rule.workload
        return ProposalContext(
            executor=(lambda: self.executor_for(workload)) if workload is not None else None,
            workload=workload,
            admin=lambda: self.bot.checker.admin(cluster),
            settings=self.bot.settings,
            policy=rule.allows(action),
            now=now,
            pod_readings=self.pod_readings,
            pod_round=round,
        )

    def _offered_actions(self, incident: Incident | None) -> set[str]:
        """Actions already offered in this incident's thread (each is offered there once; `/lag remediate`
        proposes again on request). One read: this runs every check of every open incident."""
        if incident is None:
            return set()
        return self.offer_book.offered(incident.id)

    def _approver(self, proposal_id: str, user: str, now: float, *, what: str) -> tuple[Proposal, Rule] | ClickAnswer:
        """The proposal and its rule when `user` may approve or deny it, else the answer that refuses (audited
        when the proposal is known). `what`: the click, as the audit names a refusal."""
        if not valid_user(user):  # never stored, never mentioned
            return ClickAnswer(messages.command_bad_user(user))
        proposal = self.proposals.get(proposal_id)
        if proposal is None:
            return ClickAnswer(messages.approval_unknown())
        rule = self.rule(proposal.cluster, proposal.group)
        try:
            allowed = self.directory.is_approver(rule, user, now)
        except ApproversUnavailable as exc:
            return ClickAnswer(wording.approvers_unavailable(str(exc)))
        if not allowed:
            self._audit("refused", proposal, user, now, reason=what)
            return ClickAnswer(wording.approval_not_approver(rule.name, proposal.plan.summary), Verdict.NOT_APPROVER)
        return proposal, rule

    def click(self, proposal_id: str, user: str, *, now: float) -> ClickAnswer:
        """An approval click from `user`. The caller told RUN has executed the plan when this returns."""
        found = self._approver(proposal_id, user, now, what="not an approver")
        if isinstance(found, ClickAnswer):
            return found
        proposal, rule = found
        if rule.dry_run:
            self._audit("dry_run", proposal, user, now)
            self.thread.reply(proposal, wording.approval_dry_run(user, proposal.plan.summary), now)
            return ClickAnswer(None)
        return self.approve_and_run(proposal_id, user, now=now)

    def approve_and_run(self, proposal_id: str, user: str, *, now: float, auto: bool = False) -> ClickAnswer:
        current = self.proposals.get(proposal_id)
        longest = registry.get(current.action).longest_run(current.plan) if current is not None else DEFAULT_LONGEST_RUN
        approval = self.proposals.approve(proposal_id, user, now=now, longest_run=longest)
        proposal = approval.proposal
        if approval.verdict is Verdict.RUN and proposal is not None:
            outcome = self.run(proposal, user=user, now=now, auto=auto)
            thread = self.thread.incident(proposal) is not None
            private = None if thread else wording.remediation_result(outcome.ok, proposal.plan.summary, outcome.detail)
            return ClickAnswer(private, Verdict.RUN)
        if approval.verdict is Verdict.RECORDED and proposal is not None:
            self._audit("approved", proposal, user, now, approvals=list(proposal.approvals), complete=False)
            line = wording.approval_recorded(user, len(proposal.approvals), proposal.approvals_required)
            self.thread.reply(proposal, line, now)
            return ClickAnswer(None, Verdict.RECORDED)
        if proposal is not None and approval.verdict is not Verdict.NOT_PROPOSED:
            self._audit("refused", proposal, user, now, reason=approval.verdict.value)
        state = proposal.state_at(now).value if proposal is not None else ""
        return ClickAnswer(wording.approval_refused(approval.verdict, state, approval.detail), approval.verdict)

    def settled(self, proposal_id: str, *, now: float) -> str | None:
        """The line that replaces a proposal's buttons once no click can change it; None while it awaits."""
        return self.expiry.settled(proposal_id, now=now)

    def proposal(self, proposal_id: str) -> Proposal | None:
        """The proposal, in whatever state (None when unknown or expired from Redis)."""
        return self.proposals.get(proposal_id)

    def deny(self, proposal_id: str, user: str, reason: str, *, now: float) -> ClickAnswer:
        found = self._approver(proposal_id, user, now, what="not an approver (deny)")
        if isinstance(found, ClickAnswer):
            return found
        proposal, _ = found
        if not self.proposals.deny(proposal_id, user=user, reason=reason, now=now):
            state = proposal.state_at(now)
            verdict = Verdict.EXPIRED if state is State.EXPIRED else Verdict.NOT_PROPOSED
            return ClickAnswer(wording.approval_refused(verdict, state.value, ""), verdict)
        self._audit("denied", proposal, user, now, reason=reason)
        self.thread.reply(proposal, wording.approval_denied(user, proposal.plan.summary, reason), now)
        return ClickAnswer(None)

    # -- running -----------------------------------------------------------------------------------------

    def run(self, proposal: Proposal, *, user: str, now: float, auto: bool = False) -> Outcome:
        """Execute an approved plan (this caller alone was told RUN), then report, audit and start verifying.

        Whatever happens in between (a broken remediation, Redis or Slack failing), the proposal is
        finished here, so it never stays 'running'; a process that dies mid-run is caught by `reap`.
        """
        outcome = Outcome(False, wording.remediation_interrupted(proposal.action))
        interval = self.bot.settings.leader.run_heartbeat
        try:
            with RunHeartbeat(self.heartbeats, proposal.id, interval=interval, clock=self.bot.clock):
                self._audit("approved", proposal, user, now, approvals=list(proposal.approvals), auto=auto)
                # The action starts now; its "running" messages are queued and follow on their own (Slack may
                # be slow).
                line = wording.remediation_running(proposal.approvals, proposal.plan.summary)
                self.thread.reply(proposal, line, now, deliver=False)
                self.thread.set_state(proposal, RunState.RUNNING, proposal.plan.summary, now, deliver=False)
                self.thread.deliver_soon()
                outcome = self._execute(proposal)
        except Exception as exc:  # a broken remediation must not take the bot down: it failed, say so
            log.exception("remediation crashed", extra={"proposal": proposal.id, "action": proposal.action})
            outcome = Outcome(False, wording.remediation_crashed(proposal.action, exc), cut_short=CutShort.CRASHED)
        except BaseException:  # the process is going down mid-run: what the run held to undo is undone
            outcome = Outcome(False, outcome.detail, cut_short=CutShort.INTERRUPTED)
            raise
        finally:
            self._finish(proposal, outcome, self.bot.clock())
        return outcome

    def _execute(self, proposal: Proposal) -> Outcome:
        return registry.get(proposal.action).execute(proposal.plan, self.execution_context(proposal))

    def execution_context(self, proposal: Proposal) -> ExecutionContext:
        """What a run of `proposal` acts with: its rule's executor and workload, the cluster's admin and client
        settings, its thread for progress, and the restore queue for what it must undo if it dies."""
        rule = self.rule(proposal.cluster, proposal.group)
        executor = self.executor_for(rule.workload) if rule.workload is not None else None
        return ExecutionContext(
            executor=executor,
            admin=self.bot.checker.admin(proposal.cluster),
            progress=lambda line: self.thread.progress(proposal, line),
            clock=self.bot.clock,
            kafka_config=self.bot.settings.cluster(proposal.cluster).client_config(),
            settings=self.bot.settings,
            workload=rule.workload,
            hold_restore=lambda previous: self.restores.hold(proposal.id, previous),
        )

    def _finish(self, proposal: Proposal, outcome: Outcome, finished: float) -> None:
        """Record the end of a run (once), then tell the thread; a failure to tell is logged, not raised."""
        if not self.proposals.finish(proposal.id, ok=outcome.ok, detail=outcome.detail, now=finished):
            return
        self.heartbeats.forget(proposal.id)
        self.restorer.undo_later(proposal, outcome, finished)
        try:
            self._audit(
                "succeeded" if outcome.ok else "failed",
                proposal,
                BOT_USER,
                finished,
                requested_by=proposal.requested_by,
                approved_by=list(proposal.approvals),
                detail=outcome.detail,
                data=outcome.recorded,
                before=proposal.plan.before,
                after=proposal.plan.after,
            )
            line = wording.remediation_result(outcome.ok, proposal.plan.summary, outcome.detail)
            self.thread.reply(proposal, line, finished)
            state = (
                RunState.VERIFYING
                if outcome.ok
                else RunState.INTERRUPTED
                if outcome.cut_short is CutShort.INTERRUPTED
                else RunState.FAILED
            )
            self.thread.set_state(proposal, state, outcome.detail, finished, baseline=True)
        except Exception:
            log.exception("could not report a finished remediation", extra={"proposal": proposal.id})

    def reap(self, *, now: float) -> list[str]:
        """Runs whose heartbeat stopped (their process died) or past their longest duration (hung).
        Each is finished as failed and interrupted, once: said in its thread and the audit; what it changed and
        held to undo (`ExecutionContext.hold_restore`) is due at once, for `restore_due`."""
        interval = self.bot.settings.leader.run_heartbeat
        running = self.proposals.overdue(now=math.inf)  # every running proposal
        silent = silent_runs(self.heartbeats, running, now=now, interval=interval)
        reaped = []
        for proposal_id in dict.fromkeys(self.proposals.overdue(now=now) + silent):
            proposal = self.proposals.get(proposal_id)
            if proposal is None:
                continue
            if proposal_id in silent:
                detail = wording.remediation_heartbeat_lost(proposal.action, STALE_BEATS * interval)
            else:
                detail = wording.remediation_interrupted(proposal.action)
            self._finish(proposal, Outcome(False, detail, cut_short=CutShort.INTERRUPTED), now)
            reaped.append(proposal_id)
        self.restorer.release_stranded(now, grace=STALE_BEATS * interval)
        return reaped

    # -- what a run left to undo (lagbot.service.restoring) -------------------------------------------------

    def restore_due(self, *, now: float) -> list[Outcome]:
        """Run each restore whose time has come, once across replicas (lagbot.service.restoring)."""
        return self.restorer.restore_due(now=now)

    # -- proposals nobody decided on in time (lagbot.service.expiry) --------------------------------------

    def expire_due(self, *, now: float) -> list[str]:
        """Retire each proposal past its expiry, once across replicas; the ids this caller retired."""
        return self.expiry.expire_due(now=now)

    def shown(self, proposal_ids: Sequence[str], response_url: str, message: SlackMessage) -> None:
        """The proposals' buttons were shown as a command's answer: kept, for the expiry sweep to retire."""
        self.expiry.shown(proposal_ids, response_url, message)

    # -- the remediation state an incident shows -------------------------------------------------------

    def state(self, incident_id: str) -> RemediationState | None:
        """The incident's latest remediation (None when none): action, state, detail, proposal id, verification.

        Kept apart from the incident record, so a run's writes never clobber the check loop's incident;
        the check loop's writes never clobber a run's (lagbot.service.remediation_stores.RunStates).
        """
        return self.runs.read(incident_id)[0]

    # -- verification (lagbot.service.verification) --------------------------------------------------------

    def verify_step(self, incident: Incident, verdict: GroupVerdict, *, now: float) -> None:
        """Feed one more check to the remediation under verification; speak once per change of progress."""
        self.verifier.verify_step(incident, verdict, now=now)

    def resolved(self, incident: Incident, *, now: float) -> None:
        """The incident resolved: a remediation still being judged is over, and the root says so."""
        self.verifier.resolved(incident, now=now)

    def offers(
        self, incident: Incident, verdict: GroupVerdict, *, now: float, round: ReadRound | None = None
    ) -> list[Proposal]:
        """Propose what the causes suggest and the rule allows: the proposals newly awaiting a click; their pod reads
        within the check cycle's `round`. What the live system refused is said in the incident's thread once its
        messages of this check are queued (lagbot.service.refusals)."""
        proposals, _, refused = self._propose(verdict, now, incident, None, BOT_USER, {}, round)
        self.refusals.note(incident, verdict, refused)
        return proposals

    # -- helpers -----------------------------------------------------------------------------------------

    def _audit(self, event: str, proposal: Proposal, user: str, now: float, **detail: Any) -> None:
        entry = AuditEntry(
            at=now,
            event=event,
            cluster=proposal.cluster,
            group=proposal.group,
            user=user,
            action=proposal.action,
            proposal=proposal.id,
            detail=detail,
        )
        self.bot.audit.record(entry)
