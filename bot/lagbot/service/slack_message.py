"""A Slack message as the service holds it: fallback text and Block Kit blocks, built and read by lagbot.slack only.

The presenter (lagbot.service.presenter.Presenter, implemented by lagbot.slack.presenter) makes every message the
service sends; the service queues it in the outbox, keeps it (a kept root, a proposal's message) and hands it to
Slack's Web API as it is. A `Block` is one block as Slack's JSON: opaque here (the service neither builds nor reads
one), typed so that nothing else passes for it. Stored through the one codec (lagbot.core.codec) as the JSON Slack
takes: `{"text": ..., "blocks": [...]}`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NewType

from pydantic import JsonValue

Block = NewType("Block", dict[str, JsonValue])
"""One Block Kit block as Slack's JSON (lagbot.slack makes it from slack_sdk's models)."""


@dataclass(frozen=True)
class SlackMessage:
    """What chat.postMessage and chat.update take: the fallback `text` (notifications, clients without blocks) and
    the `blocks`."""

    text: str
    blocks: tuple[Block, ...]

    def json_blocks(self) -> list[Block]:
        """The blocks as the Web API takes them (a JSON array)."""
        return list(self.blocks)
