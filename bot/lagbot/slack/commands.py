"""What a `/lag` command answers with: the `Reply`, what handlers need from the bot (`CommandDeps`), the replies
they build, and the boundary that keeps any failure out of Slack (`respond_safely`).

Independent of slack_bolt: the app's `/lag` listener acks within 3 s and, in a lazy listener, calls
lagbot.slack.subcommands.run_command and sends the `Reply` it returns (`reply.to_response()` is the response_url
payload). All wording lives in lagbot.slack.wording; every reply stays within Slack's Block Kit limits.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypedDict

from slack_sdk.models.blocks import Block, ContextBlock, SectionBlock, TableBlock
from slack_sdk.models.blocks.basic_components import MarkdownTextObject

from lagbot.core import messages
from lagbot.core.model import GroupSummary, GroupVerdict
from lagbot.service.silences import Silence as ActiveSilence
from lagbot.service.silences import SilenceStore
from lagbot.service.slack_message import Block as JsonBlock
from lagbot.service.slack_message import SlackMessage
from lagbot.slack import render
from lagbot.slack.command_parse import CommandError
from lagbot.slack.wording import commands as wording

log = logging.getLogger(__name__)

MAX_CELL = 100
MAX_FALLBACK = 3_900

# ---------------------------------------------------------------------------------------------------
# Replies and what the handlers need
# ---------------------------------------------------------------------------------------------------


class CommandResponse(TypedDict):
    """What a command's response_url (or bolt's `respond`) takes."""

    response_type: Literal["in_channel", "ephemeral"]
    text: str
    blocks: list[JsonBlock]


@dataclass(frozen=True)
class Reply:
    """What the command answers: fallback `text`, Block Kit `blocks` (JSON), and whether all see it."""

    text: str
    blocks: list[JsonBlock] = field(default_factory=list)
    public: bool = False
    proposals: tuple[str, ...] = ()
    """The proposals whose buttons `blocks` carries (the expiry sweep retires this answer: lagbot.slack.app)."""

    @property
    def message(self) -> SlackMessage:
        """The answer as the service keeps a message (lagbot.service.slack_message)."""
        return SlackMessage(self.text, tuple(self.blocks))

    def to_response(self) -> CommandResponse:
        """The payload for the command's response_url (or bolt's `respond(**payload)`)."""
        return {
            "response_type": "in_channel" if self.public else "ephemeral",
            "text": self.text,
            "blocks": self.blocks,
        }


class CommandDeps(Protocol):
    """What the handlers need from the running bot (the lead's app implements it).

    `post_digest`, `audit` and `remediate` may raise NotImplementedError until they exist: the user is
    told "not available yet". Anything else they raise is an unexpected error (see `respond_safely`).
    """

    @property
    def silences(self) -> SilenceStore: ...

    def known_groups(self) -> Mapping[str, Sequence[str]]:
        """Watched groups per cluster name (clusters with no groups included)."""
        ...

    def latest_summaries(self) -> Sequence[GroupSummary]:
        """Every group as of the last scheduled check (empty before the first one)."""
        ...

    def check_group(self, cluster: str, group: str) -> GroupVerdict:
        """A fresh check of one group (may take seconds)."""
        ...

    def post_digest(self, channel: str) -> None: ...

    def audit(self, cluster: str, group: str) -> Reply: ...

    def remediate(self, cluster: str, group: str, action: str, user: str, *, args: Sequence[str]) -> Reply: ...

    def report(self, channel: str, days: int, *, public: bool) -> Reply: ...

    def history(self, cluster: str, group: str, days: int, *, public: bool) -> Reply: ...

    def thresholds(self, cluster: str, group: str, days: int) -> Reply: ...


def text_reply(text: str, *, public: bool = False) -> Reply:
    """A reply of one mrkdwn section (and the same text as its fallback)."""
    block = SectionBlock(text=MarkdownTextObject(text=render.clip(text, render.MAX_SECTION_TEXT)))
    return Reply(text=render.clip(text, MAX_FALLBACK), blocks=list(render.as_json([block])), public=public)


def error_reply(error: CommandError) -> Reply:
    return text_reply(error.message)


def group_reply(verdict: GroupVerdict, silence: ActiveSilence | None, *, now: float, public: bool) -> Reply:
    """A group now: the root message's headline and context, its silence if any, the table and causes."""
    root = render.root_message(verdict)
    thread_blocks = render.thread_reply(verdict).blocks
    extra: list[Block] = []
    if silence is not None:
        line = wording.lag_silenced_context(silence.by, silence.until, silence.reason, now)
        extra.append(ContextBlock(elements=[MarkdownTextObject(text=render.clip(line, MAX_FALLBACK))]))
    text = wording.lag_group_fallback(root.text, render.table_fallback(verdict))
    return Reply(text=text, blocks=[*root.blocks, *render.as_json(extra), *thread_blocks], public=public)


def worst_first(verdicts: Iterable[GroupSummary]) -> list[GroupSummary]:
    """Groups by severity (worst first), then lag in seconds, then lag in messages, then name.

    Within a severity, unknown lag (in seconds or messages) ranks first: a group that cannot be judged
    (unreadable, or lagging with too little history for a rate) is worth a look before one known to be fine.
    """
    return sorted(
        verdicts,
        key=lambda v: (
            -v.severity,
            v.max_lag_seconds is not None,
            -(v.max_lag_seconds or 0.0),
            v.total_lag is not None,
            -(v.total_lag or 0),
            v.cluster,
            v.group,
        ),
    )


def top_reply(verdicts: Sequence[GroupSummary], silenced: Mapping[tuple[str, str], float], n: int, *,
              public: bool) -> Reply:  # fmt: skip
    """The `n` worst groups as a table; `silenced` maps (cluster, group) to the seconds of silence left."""
    if not verdicts:
        return text_reply(wording.lag_top_empty(), public=public)
    shown = worst_first(verdicts)[:n]
    rows = [wording.lag_top_columns(), *(_top_row(v, silenced.get((v.cluster, v.group))) for v in shown)]
    cells = [[render.raw_cell(render.clip(messages.visible(cell), MAX_CELL)) for cell in row] for row in rows]
    title = SectionBlock(text=MarkdownTextObject(text=wording.lag_top_title(len(shown), len(verdicts))))
    fallback = "\n".join(wording.lag_top_line(i, v) for i, v in enumerate(shown, start=1))
    blocks: list[Block] = [title, TableBlock(rows=cells)]
    return Reply(text=render.clip(fallback, MAX_FALLBACK), blocks=list(render.as_json(blocks)), public=public)


def _top_row(v: GroupSummary, silence_left: float | None) -> list[str]:
    return [
        v.group,
        v.cluster,
        v.severity.label.upper(),
        v.status.name,
        messages.count(v.total_lag),
        messages.behind(v.max_lag_seconds),
        v.trend,
        "" if silence_left is None else wording.lag_top_silenced_cell(silence_left),
    ]


# ---------------------------------------------------------------------------------------------------
# The boundary: never a stack trace in Slack
# ---------------------------------------------------------------------------------------------------


def respond_safely(work: Callable[[], Reply], **context: object) -> Reply:
    """`work()`, with bad input turned into its error reply and any other exception into a short
    ephemeral "something went wrong, logged as <id>" reply; the traceback is logged (with `context`
    and the id), never sent to Slack.
    """
    try:
        return work()
    except CommandError as exc:
        return error_reply(exc)
    except Exception:
        error_id = uuid.uuid4().hex[:12]
        log.exception(wording.lag_failed_log(), extra={"error_id": error_id, **context})
        return text_reply(wording.lag_failed(error_id))
