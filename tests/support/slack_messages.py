"""A Slack message of one mrkdwn section, as the outbox tests queue it (lagbot.service.slack_message)."""

from __future__ import annotations

from lagbot.service.slack_message import Block, SlackMessage


def section_message(text: str) -> SlackMessage:
    """`text` as the fallback and as the one section block."""
    return SlackMessage(text, (Block({"type": "section", "text": {"type": "mrkdwn", "text": text}}),))
