"""A channel's digest as the service sees it: what it is made of, and posting it with slack_sdk.

The bot fills `IncidentSummary` (from the incident store) and `RemediationSummary` (from the audit log) for the
groups routed to the channel; the presenter (lagbot.slack.digest) composes the message and the chart; `post_digest`
sends both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from slack_sdk.errors import SlackClientError

from lagbot.core import messages
from lagbot.service import wording
from lagbot.service.slack_message import SlackMessage

if TYPE_CHECKING:
    from slack_sdk import WebClient

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class IncidentSummary:
    """An incident of a group; `resolved_at` None while it is open; `severity` 'warn', 'critical' or 'page'."""

    cluster: str
    group: str
    opened_at: float
    resolved_at: float | None
    peak_lag: int | None
    severity: str


@dataclass(frozen=True, slots=True)
class RemediationSummary:
    """A remediation that ran: who asked, who approved (none, one or two Slack user ids), when, and how it ended."""

    cluster: str
    group: str
    action: str
    requested_by: str
    approved_by: tuple[str, ...]
    at: float
    result: str


@dataclass(frozen=True)
class ComposedDigest:
    """A digest ready to post: the message and its chart (None when no group is behind: nothing to draw)."""

    message: SlackMessage
    chart_png: bytes | None
    chart_alt: str


@dataclass(frozen=True)
class PostedDigest:
    """Where the digest went (`channel` as Slack answered: the id) and its chart's file, or why it is missing."""

    channel: str
    ts: str
    file_id: str | None
    upload_error: str | None


def post_digest(
    client: WebClient,
    channel: str,
    digest: SlackMessage,
    chart_png: bytes | None,
    *,
    filename: str = "lag-24h.png",
    title: str | None = None,
    alt_text: str | None = None,
    on_error: Callable[[str, str], None] | None = None,
) -> PostedDigest:
    """Post the digest, then upload the chart into its thread (files_upload_v2).

    A failed post raises (nothing was sent; the caller may retry). A failed upload does not: the digest is
    already in the channel, so retrying the whole would post it twice; it is logged and returned in
    `upload_error`. `on_error(method, error)` is told of every failed call (e.g. Metrics.slack_error).
    """
    try:
        posted = client.chat_postMessage(channel=channel, text=digest.text, blocks=digest.json_blocks())
    except SlackClientError as exc:
        _report(on_error, "chat.postMessage", exc)
        raise
    channel_id, ts = str(posted["channel"]), str(posted["ts"])
    if chart_png is None:
        return PostedDigest(channel_id, ts, None, None)
    try:
        uploaded = client.files_upload_v2(
            channel=channel_id, thread_ts=ts, file=chart_png, filename=filename,
            title=title or messages.digest_chart_title(), alt_txt=alt_text,
        )  # fmt: skip
    except (SlackClientError, OSError) as exc:
        problem = _report(on_error, "files.upload_v2", exc)
        log.warning(wording.digest_upload_failed(channel_id, ts, problem))
        return PostedDigest(channel_id, ts, None, problem)
    return PostedDigest(channel_id, ts, str(uploaded["file"]["id"]), None)


def _report(on_error: Callable[[str, str], None] | None, method: str, exc: Exception) -> str:
    """The Slack error code of `exc` (or its type), told to `on_error` with the method that failed.

    files_upload_v2 makes several calls; the one that failed is named by the response's URL when there is one.
    """
    response = getattr(exc, "response", None)
    error = response.get("error") if response is not None and hasattr(response, "get") else None
    api_url = str(getattr(response, "api_url", "") or "")
    failed = api_url.rsplit("/", 1)[-1] if "/api/" in api_url else method
    problem = str(error or type(exc).__name__)
    if on_error is not None:
        on_error(failed, problem)
    return problem
