"""What the incident loop asks of the remediation side, and the steps of a check that ask it.

`RemediationHooks` is the contract (lagbot.service.remediate's `Remediator` implements it; the bot builds it from
itself, last). The functions below are the check's questions to it, each a no-op without remediations (`hooks`
None) and on a resolved incident: the churn our own restart or scale caused taken out of a verdict, how far a check
is from that action, the owners' pods on the causes, and the proposals newly offered with their blocks.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from lagbot.core.config import Settings
from lagbot.core.model import GroupVerdict
from lagbot.engine import agreement
from lagbot.remediations import registry
from lagbot.remediations.executors.pod_evidence import ReadRound
from lagbot.service.approvals import Proposal
from lagbot.service.incidents import Incident
from lagbot.service.metrics import Metrics
from lagbot.service.presenter import Presenter
from lagbot.service.remediation_state import RemediationState
from lagbot.service.slack_message import Block

log = logging.getLogger(__name__)


class RemediationHooks(Protocol):
    """What the incident loop asks of remediations (lagbot.service.remediate.Remediator implements it)."""

    def offers(
        self, incident: Incident, verdict: GroupVerdict, *, now: float, round: ReadRound | None = None
    ) -> list[Proposal]:
        """Proposals of actions newly offered in this incident ([] when nothing new can be offered); their pod reads
        within the check cycle's `round`.

        Called every check of an open incident: an action whose plan could not be made yet (rates unknown
        on the first check) is offered as soon as it can be, each action once per incident.
        """
        ...

    def explained(self, verdict: GroupVerdict, *, now: float, round: ReadRound | None = None) -> GroupVerdict:
        """The verdict with what the live system shows of the members its causes blame (their pods), as the
        incident's messages show it; `round`: the check cycle's, which bounds all its reads together."""
        ...

    def verify_step(self, incident: Incident, verdict: GroupVerdict, *, now: float) -> None:
        """Feed one more check to the verification of the incident's remediation, if one is verifying."""
        ...

    def restore_due(self, *, now: float) -> list[Any]:
        """Hand paused autoscalers (KEDA) back once their hold is over."""
        ...

    def resolved(self, incident: Incident, *, now: float) -> None:
        """The incident resolved: close the verification of its remediation, if one was still running."""
        ...

    def run_auto_approved(self, *, now: float) -> None:
        """Run the proposals of this check that the policy auto-approves (their root is delivered by now)."""
        ...

    def reap(self, *, now: float) -> list[str]:
        """Finish, as failed, runs past their longest duration (their process died)."""
        ...

    def expire_due(self, *, now: float) -> list[str]:
        """Retire the proposals past their expiry (once across replicas): their buttons go from their message."""
        ...

    def state(self, incident_id: str) -> RemediationState | None:
        """The incident's latest remediation as its root message shows it (None when none)."""
        ...


def without_own_rebalance(
    hooks: RemediationHooks | None, incident: Incident | None, verdict: GroupVerdict
) -> GroupVerdict:
    """The verdict without the churn our own restart or scale caused within its settle period (no new-cause
    reply for it): the incident's remediation state says which action ran and when."""
    if hooks is None or incident is None or not incident.is_open:
        return verdict
    if not any(c.kind == "rebalance_churn" for c in verdict.causes):
        return verdict
    state = hooks.state(incident.id)
    if state is None:
        return verdict
    settles = registry.settles(state.action)
    return agreement.own_rebalance(verdict, settles, state.executed_at, state.settle_until)


def explained(
    hooks: RemediationHooks | None,
    incident: Incident,
    verdict: GroupVerdict,
    *,
    now: float,
    round: ReadRound | None = None,
) -> GroupVerdict:
    """The open incident's verdict with the owners' pods on its causes (lagbot.service.pod_causes), read within the
    check cycle's `round` (`cycle_round`); a failure there is logged and leaves the verdict as the broker sees it."""
    if hooks is None or not incident.is_open:
        return verdict
    try:
        return hooks.explained(verdict, now=now, round=round)
    except Exception:
        log.exception("pod evidence failed", extra={"group": incident.group, "incident": incident.id})
        return verdict


def settling(
    hooks: RemediationHooks | None, incident: Incident | None, settings: Settings, *, now: float
) -> agreement.Settling:
    """How far this check is from the incident's own restart or scale: within its settle period, or its window
    (whose rates span the rebalance the action caused) still reaching into it (lagbot.service.incidents, rule 4)."""
    if hooks is None or incident is None or not incident.is_open:
        return agreement.Settling.NO
    state = hooks.state(incident.id)
    if state is None:
        return agreement.Settling.NO
    window = settings.window.samples * settings.cluster(incident.cluster).check_interval
    settles = registry.settles(state.action)
    return agreement.settling(settles, state.executed_at, state.settle_until, window=window, now=now)


def offered(
    hooks: RemediationHooks | None,
    presenter: Presenter,
    metrics: Metrics,
    incident: Incident,
    verdict: GroupVerdict,
    *,
    now: float,
    round: ReadRound | None = None,
) -> tuple[tuple[Block, ...], tuple[str, ...]]:
    """Verify, offer or close the incident's remediations: the blocks of the proposals newly offered, and their
    ids; the proposals' pod reads within the check cycle's `round`. A failure here is logged and counted, and never
    keeps the incident's own messages from being queued."""
    if hooks is None:
        return (), ()
    try:
        if not incident.is_open:
            hooks.resolved(incident, now=now)
            return (), ()
        hooks.verify_step(incident, verdict, now=now)
        proposals = hooks.offers(incident, verdict, now=now, round=round)
        if not proposals:
            return (), ()
        return presenter.proposal_blocks(proposals, now=now), tuple(p.id for p in proposals)
    except Exception:
        log.exception("remediation step failed", extra={"group": incident.group, "incident": incident.id})
        metrics.slack_error("remediations", "internal_error")
        return (), ()
