"""The outbox tests' messages and delivery: a Slack message of one mrkdwn section (lagbot.service.slack_message), and
`Outbox.deliver` with the running bot's presenter."""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient

from lagbot.service.outbox import DeliveryReport, Outbox
from lagbot.service.slack_message import Block, SlackMessage
from lagbot.slack.presenter import SlackPresenter


def section_message(text: str) -> SlackMessage:
    """`text` as the fallback and as the one section block."""
    return SlackMessage(text, (Block({"type": "section", "text": {"type": "mrkdwn", "text": text}}),))


def deliver(outbox: Outbox, client: WebClient, **options: Any) -> DeliveryReport:
    """`outbox.deliver`, a lost root replaced as the running bot's presenter replaces it."""
    return outbox.deliver(client, replaced_root=SlackPresenter().replaced_root, **options)
