"""Proposals nobody decided on in time: retired once across replicas, audited, and the message that carries their
buttons edited as a click edits it (the buttons gone, a line saying the proposal expired and when).

The message is found through lagbot.service.proposal_messages: a thread reply (edited with `chat.update`) or a
`/lag remediate` answer (replaced through its response URL, `shown`). A proposal whose reply was still queued when
it expired waits in the messages store's awaiting list (lagbot.service.remediation_stores `ProposalMessages`), at most
UNRETIRED_FOR, and its message is retired once posted.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from lagbot.service import proposal_messages, wording
from lagbot.service.approvals import Proposal, Proposals, State, expiry_sweep
from lagbot.service.audit import BOT_USER
from lagbot.service.bot import Bot
from lagbot.service.remediation_stores import ProposalMessages
from lagbot.service.slack_message import SlackMessage

log = logging.getLogger(__name__)

Audit = Callable[..., None]
"""(event, proposal, user, now, **detail) -> None: how the remediator audits a proposal's event."""


def settled_line(p: Proposal, now: float) -> str:
    """The line that replaces a settled proposal's buttons."""
    state = p.state_at(now)
    expired_at = p.expires_at if state is State.EXPIRED else None
    return wording.proposal_settled(state.value, p.plan.summary, p.approvals, p.detail, p.denied_by, expired_at)


class ProposalExpiry:
    """The expiry sweep of one replica (the leader runs it in its housekeeping)."""

    def __init__(self, bot: Bot, proposals: Proposals, messages: ProposalMessages, *, audit: Audit, keep: int) -> None:
        self.bot = bot
        self.proposals = proposals
        self.messages = messages
        self._audit = audit
        self._keep = keep

    def settled(self, proposal_id: str, *, now: float) -> str | None:
        """The line that replaces a proposal's buttons once no click can change it; None while it awaits."""
        p = self.proposals.get(proposal_id)
        if p is None or p.state_at(now) is State.PROPOSED:
            return None
        return settled_line(p, now)

    def expire_due(self, *, now: float) -> list[str]:
        """Retire each proposal past its expiry, once across replicas (the store's `retire` is atomic): audited,
        and its message edited as a click edits it (its buttons gone, a line saying it expired and when).
        Returns the ids this caller retired."""
        listed = self.proposals.expiring(now=now)
        sweep = expiry_sweep({i: self.proposals.get(i) for i in listed}, now)
        for proposal_id in sweep.settled:
            self.proposals.retire(proposal_id, now=now)  # approved, denied or gone: it only leaves the set
        retired = []
        for proposal in sweep.due:
            if not self.proposals.retire(proposal.id, now=now):
                continue  # approved or denied meanwhile, or another replica retired it
            retired.append(proposal.id)
            self._audit("expired", proposal, BOT_USER, now, expired_at=proposal.expires_at)
            if not self._retire_message(proposal.id, now) and proposal.incident_id is not None:
                self.messages.await_posting(proposal.id, now)  # its reply is still queued
        self._retire_late_messages(now)
        return retired

    def shown(self, proposal_ids: Sequence[str], response_url: str, message: SlackMessage) -> None:
        """The proposals' buttons were shown as a command's answer (`message`), through its response URL: kept, so
        that the expiry sweep retires that answer as it retires a thread reply."""
        kept = proposal_messages.ProposalMessage(
            "", "", message.text, message.blocks, tuple(proposal_ids), response_url
        )
        self.messages.keep(kept, ttl=self._keep)

    def _retire_late_messages(self, now: float) -> None:
        """Retire the messages of expired proposals that were posted after their expiry (the reply waited in the
        outbox): each once across replicas (`claim_awaiting` claims it), waiting at most UNRETIRED_FOR for it."""
        for proposal_id in self.messages.awaiting(now):
            found = self.messages.find(proposal_id)
            if found is None or not self.messages.claim_awaiting(proposal_id):
                continue  # not posted yet, or another replica has it
            self._retire_message(proposal_id, now)

    def _retire_message(self, proposal_id: str, now: float) -> bool:
        """Edit the message that carries the proposal's buttons: each of its proposals that is settled shows its
        line instead of its buttons. False when that message is not known (not posted yet, or gone). A failure to
        edit is logged: the edit is cosmetic (a click is answered "expired")."""
        try:
            message = self.messages.find(proposal_id)
            if message is None:
                return False
            shown = message.message
            for proposal in message.proposals:
                line = self.settled(proposal, now=now)
                if line is not None:
                    shown = self.bot.presenter.settled(shown, proposal, line)
            if message.response_url:
                self.bot.slack_calls.replace_response(message.response_url, shown)
            else:
                self.bot.slack_calls.edit_message(message.channel, message.ts, shown)
        except Exception:
            log.exception("could not retire an expired proposal's message", extra={"proposal": proposal_id})
        return True
