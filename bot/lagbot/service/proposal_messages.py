"""Where a proposal's buttons were posted: the thread reply's channel and ts, or the response URL of the `/lag
remediate` that showed them, and what that message held.

Kept in a `ProposalMessages` store (lagbot.service.remediation_stores: Redis, or its memory twin). The outbox writes it
once Slack has accepted the reply that carries the buttons (lagbot.service.outbox), the Slack edge once it answered a
`/lag remediate` with them (lagbot.slack.app); the expiry sweep (lagbot.service.remediate `expire_due`) reads it to
retire that message with `chat.update` (or through the response URL, which Slack honours for 30 minutes, replacing the
original), as a click retires it. One versioned document per proposal (several proposals offered together share one
message: each document lists them all, so the message is redrawn with every one of them that is settled).
"""

from __future__ import annotations

from dataclasses import dataclass

from lagbot.core import codec
from lagbot.service.slack_message import Block, SlackMessage

PROPOSAL_MESSAGE_VERSION = 1


@dataclass(frozen=True)
class ProposalMessage:
    channel: str
    ts: str
    text: str
    blocks: tuple[Block, ...]
    proposals: tuple[str, ...]
    """Every proposal whose buttons the message carries, in the order it shows them."""
    response_url: str = ""
    """The response URL of the command whose answer carries the buttons (then `channel` and `ts` are empty)."""

    @property
    def message(self) -> SlackMessage:
        return SlackMessage(self.text, self.blocks)

    def encode(self) -> str:
        return PROPOSAL_MESSAGE_CODEC.encode(self)

    @classmethod
    def decode(cls, kind: str, raw: bytes | str) -> ProposalMessage:
        """Raises StoredFormatError (lagbot.core.stored) when it is not a message lagbot wrote."""
        return PROPOSAL_MESSAGE_CODEC.decode(raw, kind=kind)


PROPOSAL_MESSAGE_CODEC = codec.register(
    codec.Codec("stored proposal message", ProposalMessage, PROPOSAL_MESSAGE_VERSION, omit_defaults=True)
)
"""`response_url` is absent when empty, as this release's predecessor wrote it."""
