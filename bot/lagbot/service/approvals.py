"""Proposals and their approval: the record, the answers to a click, and the stores' contract.

A proposal is a remediation plan offered for one group (a button in the incident's thread). Its life:

    proposed --approve (enough different approvers)--> running --finish--> succeeded | failed
    proposed --deny--> denied            proposed --(past its expiry)--> expired

A proposal past its expiry reads as expired at once (`Proposal.state_at`); the leader's housekeeping then
writes it so (`Proposals.retire`: exactly one caller retires it) and its message loses its buttons (`expiry_sweep`
decides which are due).

Every transition is atomic, so double clicks, Slack's retries and two bot replicas racing each other get exactly one
"run": the caller that receives it executes the plan; everyone else is told what state the proposal is in. The
cooldown of (cluster, group, action) is taken in the same step, so two proposals of the same action cannot both run
within it. Who may approve is checked by the caller (it needs Slack's user groups); the store enforces the rest: not
expired, not twice by the same person, not by the requester when two approvals are needed.

Its contract is `Proposals`; lagbot.service.proposal_stores keeps them in Redis (`ProposalStore`) or in this process
(`MemoryProposals`), and tests/service/test_approvals.py checks both the same way.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lagbot.remediations.base import Plan


class State(StrEnum):
    PROPOSED = "proposed"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DENIED = "denied"
    EXPIRED = "expired"


class Verdict(StrEnum):
    """The answer to an approval click."""

    RUN = "run"
    """This caller must execute the plan now (nobody else will)."""
    RECORDED = "recorded"
    """The approval counts; more approvers are needed."""
    MISSING = "missing"
    EXPIRED = "expired"
    NOT_PROPOSED = "not_proposed"
    """Already running, done or denied."""
    AGAIN = "again"
    """This person already approved it."""
    REQUESTER = "requester"
    """Two approvals are needed and the requester may not be one of them."""
    COOLDOWN = "cooldown"
    BUSY = "busy"
    """Another remediation of the same group is running (detail: its proposal id)."""
    NOT_APPROVER = "not_approver"
    """The policy rule does not name this person as an approver (decided before the store is asked)."""


@dataclass(frozen=True)
class Proposal:
    id: str
    cluster: str
    group: str
    action: str
    plan: Plan
    requested_by: str
    created_at: float
    expires_at: float
    approvals_required: int
    cooldown: float
    channel: str | None = None
    incident_id: str | None = None
    state: State = State.PROPOSED
    approvals: tuple[str, ...] = ()
    detail: str = ""
    denied_by: str | None = None
    finished_at: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def state_at(self, now: float) -> State:
        if self.state is State.PROPOSED and now > self.expires_at:
            return State.EXPIRED
        return self.state


@dataclass(frozen=True)
class Approval:
    verdict: Verdict
    proposal: Proposal | None
    detail: str = ""


@dataclass(frozen=True)
class ClickAnswer:
    """What the clicker sees privately (None: nothing; the thread tells everyone what happened)."""

    ephemeral: str | None
    verdict: Verdict | None = None


class Proposals(ABC):
    """Proposals and their approval: expiring, single use, run exactly once (the module doc tells their life).

    Contract:
    - `create(plan, ...)` keeps a new proposal (state proposed, a fresh id) expiring `expires_in` after `now`, and
      lists it for the expiry sweep; `get(id)` is it as now stored, or None when unknown.
    - `approve(id, user, now=, longest_run=)` counts `user`'s approval, atomically, and answers with a Verdict and
      the proposal as it then is: MISSING (unknown), EXPIRED (past its expiry or retired), NOT_PROPOSED (running,
      done or denied; detail: its state), REQUESTER (two approvals needed and `user` asked for it), AGAIN (`user`
      approved it already), COOLDOWN (the last approval needed, while the cooldown of its cluster, group and action
      is on; detail: milliseconds left), BUSY (the last approval needed, while another proposal of its group runs;
      detail: that proposal's id), RECORDED (more approvals needed) or RUN (the caller executes it now: it is
      running, the cooldown of its action starts, and its group is held for `longest_run` seconds).
    - `finish(id, ok=, detail=, now=)`: running -> succeeded / failed, once (True), releasing its group.
    - `overdue(now=)`: running proposals held past their longest run, soonest first.
    - `deny(id, user=, reason=, now=)`: proposed and not past its expiry -> denied (True); else False.
    - `expiring(now=)`: listed proposals whose expiry is not after `now`; `retire(id, now=)`: a proposal still
      proposed and past its expiry becomes expired (finished at its expiry), True for the one caller that did it;
      any other listed proposal only leaves the list.
    - `in_cooldown(cluster, group, action)`: seconds of that cooldown left (0 when none). Cooldowns and the group's
      hold run on the store's clock (Redis: its own), not on the `now` passed in.
    """

    @abstractmethod
    def create(
        self,
        plan: Plan,
        *,
        requested_by: str,
        now: float,
        expires_in: float,
        approvals_required: int,
        cooldown: float,
        channel: str | None = None,
        incident_id: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Proposal: ...

    @abstractmethod
    def get(self, proposal_id: str) -> Proposal | None:
        """Raises StoredFormatError (lagbot.core.stored) when it is not a proposal lagbot wrote."""

    @abstractmethod
    def approve(self, proposal_id: str, user: str, *, now: float, longest_run: float = 3600.0) -> Approval: ...

    @abstractmethod
    def finish(self, proposal_id: str, *, ok: bool, detail: str, now: float) -> bool: ...

    @abstractmethod
    def overdue(self, *, now: float) -> list[str]: ...

    @abstractmethod
    def deny(self, proposal_id: str, *, user: str, reason: str, now: float) -> bool: ...

    @abstractmethod
    def expiring(self, *, now: float) -> list[str]: ...

    @abstractmethod
    def retire(self, proposal_id: str, *, now: float) -> bool: ...

    @abstractmethod
    def in_cooldown(self, cluster: str, group: str, action: str) -> float: ...


def new_proposal(plan: Plan, *, requested_by: str, now: float, expires_in: float, approvals_required: int,
                 cooldown: float, channel: str | None, incident_id: str | None,
                 extra: dict[str, Any] | None) -> Proposal:  # fmt: skip
    """A new proposal of `plan`, with a fresh id."""
    return Proposal(
        id=uuid.uuid4().hex[:16],
        cluster=plan.cluster,
        group=plan.group,
        action=plan.action,
        plan=plan,
        requested_by=requested_by,
        created_at=now,
        expires_at=now + expires_in,
        approvals_required=approvals_required,
        cooldown=cooldown,
        channel=channel,
        incident_id=incident_id,
        extra=dict(extra or {}),
    )


@dataclass(frozen=True)
class ExpirySweep:
    """What one sweep at `now` does with the proposals the expiry set lists."""

    due: list[Proposal]
    """Still proposed and past their expiry, soonest expired first: each is retired, its message edited."""
    settled: list[str]
    """Approved, denied, already expired or gone from Redis: they only leave the expiry set."""


def expiry_sweep(listed: Mapping[str, Proposal | None], now: float) -> ExpirySweep:
    """Which listed proposals (id -> the proposal, None when gone) are due to expire at `now`. Pure. A proposal
    exactly at its expiry is not due yet (it could still be approved: a store refuses only after it, as
    lagbot.service.proposal_stores' approve script does)."""
    due = sorted(
        (p for p in listed.values() if p is not None and p.state is State.PROPOSED and now > p.expires_at),
        key=lambda p: (p.expires_at, p.id),
    )
    settled = [i for i, p in listed.items() if p is None or p.state is not State.PROPOSED]
    return ExpirySweep(due, settled)
