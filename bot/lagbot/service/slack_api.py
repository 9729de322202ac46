"""The Slack Web API as the service reaches it: the client everything posts with, and the calls outside the outbox.

`slack_client` builds the WebClient that waits out rate limits and retries connection and server errors (slack_sdk's
retry handlers); the outbox delivers with it (lagbot.service.delivery), the digest posts with it. `DirectSlack` makes
the few calls that do not go through the outbox: a message edited now (a proposal's message, retired once) and a
command's answer replaced through its response_url. Every refusal Slack answers is counted and logged
(`DirectSlack.error`, the outbox's too).
"""

from __future__ import annotations

import logging

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.webhook import WebhookClient

from lagbot.service.metrics import Metrics
from lagbot.service.slack_message import SlackMessage

log = logging.getLogger(__name__)


def slack_client(token: str, base_url: str, *, retries: int = 2) -> WebClient:
    """A WebClient that waits out 429 (Retry-After) and retries connection and 5xx errors a few times."""
    client = WebClient(token=token, base_url=base_url, timeout=15)
    client.retry_handlers = [
        ConnectionErrorRetryHandler(max_retry_count=retries),
        RateLimitErrorRetryHandler(max_retry_count=retries),
        ServerErrorRetryHandler(max_retry_count=retries),
    ]
    return client


class DirectSlack:
    """The calls one replica makes to Slack at once, not through the outbox, and how Slack's refusals are told."""

    def __init__(self, slack: WebClient, metrics: Metrics) -> None:
        self.slack = slack
        self.metrics = metrics

    def edit_message(self, channel: str, ts: str, message: SlackMessage) -> bool:
        """Edit one message now, not through the outbox (a proposal's message, retired once). Slack's refusal is
        counted and logged: False."""
        try:
            self.slack.chat_update(channel=channel, ts=ts, text=message.text, blocks=message.json_blocks())
        except SlackApiError as exc:
            self.error("chat.update", str(exc.response.get("error", "unknown_error")))
            return False
        return True

    def replace_response(self, response_url: str, message: SlackMessage) -> bool:
        """Replace the message a command answered through `response_url` (Slack honours one for 30 minutes). A
        refusal or a network failure is counted and logged: False."""
        try:
            answer = WebhookClient(response_url, timeout=self.slack.timeout).send(
                text=message.text, blocks=message.json_blocks(), replace_original=True
            )
        except OSError as exc:
            self.error("response_url", type(exc).__name__)
            return False
        if answer.status_code != 200:
            self.error("response_url", f"http_{answer.status_code}")
            return False
        return True

    def error(self, method: str, error: str) -> None:
        """Slack refused `method` with `error` (or it never answered): counted in the metrics and logged."""
        self.metrics.slack_error(method, error)
        log.warning("slack error", extra={"method": method, "error": error})
