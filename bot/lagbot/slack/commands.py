"""The `/lag` slash command handled into a reply (its text parsed and resolved by lagbot.slack.command_parse).

Independent of slack_bolt: the app's `/lag` listener acks within 3 s and, in a lazy listener, calls
`run_command(text, deps, user=..., channel=..., now=...)` and sends the `Reply` it returns
(`reply.to_response()` is the response_url payload). `deps` is anything that keeps the `CommandDeps`
protocol. All wording lives in lagbot.slack.wording; every reply stays within Slack's Block Kit limits.

The grammar and its parser are in lagbot.slack.command_parse. Adding a command is one dataclass, one parse
function and one `SUBCOMMANDS` entry there, one `case` in `handle` here, and its wording in lagbot.slack.wording.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, assert_never

from slack_sdk.models.blocks import Block, ContextBlock, SectionBlock, TableBlock
from slack_sdk.models.blocks.basic_components import MarkdownTextObject

from lagbot.core import messages
from lagbot.core.model import GroupSummary, GroupVerdict
from lagbot.service.silences import Silence as ActiveSilence
from lagbot.service.silences import SilenceStore
from lagbot.slack import render, wording
from lagbot.slack.command_parse import (
    SUBCOMMANDS,
    USAGE_OF,
    Audit,
    Command,
    CommandError,
    Digest,
    Help,
    History,
    Remediate,
    Report,
    ShowGroup,
    Silence,
    Thresholds,
    Top,
    Unsilence,
    hinted,
    parse,
    resolve_group,
)

log = logging.getLogger(__name__)

MAX_CELL = 100
MAX_FALLBACK = 3_900

# ---------------------------------------------------------------------------------------------------
# Replies and what the handlers need
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """What the command answers: fallback `text`, Block Kit `blocks` (JSON), and whether all see it."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    public: bool = False
    proposals: tuple[str, ...] = ()
    """The proposals whose buttons `blocks` carries (the expiry sweep retires this answer: lagbot.slack.app)."""

    def to_response(self) -> dict[str, Any]:
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
    return Reply(text=render.clip(text, MAX_FALLBACK), blocks=[block.to_dict()], public=public)


def error_reply(error: CommandError) -> Reply:
    return text_reply(error.message)


def group_reply(verdict: GroupVerdict, silence: ActiveSilence | None, *, now: float, public: bool) -> Reply:
    """A group now: the root message's headline and context, its silence if any, the table and causes."""
    root_text, root_blocks = render.root_message(verdict)
    _, thread_blocks = render.thread_reply(verdict)
    extra: list[dict[str, Any]] = []
    if silence is not None:
        line = wording.lag_silenced_context(silence.by, silence.until, silence.reason, now)
        extra.append(ContextBlock(elements=[MarkdownTextObject(text=render.clip(line, MAX_FALLBACK))]).to_dict())
    text = wording.lag_group_fallback(root_text, render.table_fallback(verdict))
    return Reply(text=text, blocks=[*root_blocks, *extra, *thread_blocks], public=public)


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
    cells = [
        [{"type": "raw_text", "text": render.clip(messages.visible(cell), MAX_CELL)} for cell in row] for row in rows
    ]
    title = SectionBlock(text=MarkdownTextObject(text=wording.lag_top_title(len(shown), len(verdicts))))
    fallback = "\n".join(wording.lag_top_line(i, v) for i, v in enumerate(shown, start=1))
    blocks: list[Block] = [title, TableBlock(rows=cells)]
    return Reply(text=render.clip(fallback, MAX_FALLBACK), blocks=[b.to_dict() for b in blocks], public=public)


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


def help_reply() -> Reply:
    lines = [wording.lag_help_title()]
    lines += [wording.lag_help_line(s.usage(), s.summary()) for s in SUBCOMMANDS.values()]
    return text_reply("\n".join(lines))


# ---------------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------------


def handle(command: Command, deps: CommandDeps, *, user: str, channel: str, now: float) -> Reply:
    """Carry out a parsed command for `user` in `channel` at `now`.

    Raises:
        CommandError: a name that does not resolve (with the closest matches and the usage line).
    """
    try:
        return _dispatch(command, deps, user=user, channel=channel, now=now)
    except CommandError as exc:
        raise exc.with_usage(USAGE_OF[type(command)]()) from None


def _dispatch(command: Command, deps: CommandDeps, *, user: str, channel: str, now: float) -> Reply:
    match command:
        case ShowGroup():
            return _show(command, deps, now=now)
        case Top():
            return _top(command, deps, now=now)
        case Silence():
            return _silence(command, deps, user=user, now=now)
        case Unsilence():
            return _unsilence(command, deps, user=user, now=now)
        case Digest():
            return _supplied("digest", lambda: _digest(deps, channel))
        case Help():
            return help_reply()
        case Audit():
            cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
            return _supplied("audit", lambda: deps.audit(cluster, group))
        case Remediate():
            cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
            return _supplied("remediate", lambda: deps.remediate(cluster, group, command.action, user,
                                                                 args=command.args))  # fmt: skip
        case Report():
            return _supplied("report", lambda: deps.report(channel, command.days, public=command.public))
        case History():
            cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
            return _supplied("history", lambda: deps.history(cluster, group, command.days, public=command.public))
        case Thresholds():
            cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
            return _supplied("thresholds", lambda: deps.thresholds(cluster, group, command.days))
        case _:
            assert_never(command)


def _show(command: ShowGroup, deps: CommandDeps, *, now: float) -> Reply:
    try:
        cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
    except CommandError as exc:
        raise hinted(exc, command.group) from None
    verdict = deps.check_group(cluster, group)
    return group_reply(verdict, deps.silences.active(cluster, group, now), now=now, public=command.public)


def _top(command: Top, deps: CommandDeps, *, now: float) -> Reply:
    silenced = {(s.cluster, s.group): s.remaining(now) for s in deps.silences.all_active(now)}
    return top_reply(deps.latest_summaries(), silenced, command.n, public=command.public)


def _silence(command: Silence, deps: CommandDeps, *, user: str, now: float) -> Reply:
    cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
    until = now + command.duration_seconds
    deps.silences.silence(cluster, group, until=until, reason=command.reason, by=user, now=now)
    text = wording.lag_silenced(group, cluster, user, until, command.duration_seconds, command.reason)
    return text_reply(text, public=True)


def _unsilence(command: Unsilence, deps: CommandDeps, *, user: str, now: float) -> Reply:
    known = {cluster: list(groups) for cluster, groups in deps.known_groups().items()}
    for s in deps.silences.all_active(now):  # a silenced group that has since vanished can still be lifted
        known.setdefault(s.cluster, [])
        if s.group not in known[s.cluster]:
            known[s.cluster].append(s.group)
    cluster, group = resolve_group(command.group, command.cluster, known)
    if deps.silences.unsilence(cluster, group, now=now):
        return text_reply(wording.lag_unsilenced(group, cluster, user), public=True)
    return text_reply(wording.lag_not_silenced(group, cluster))


def _digest(deps: CommandDeps, channel: str) -> Reply:
    deps.post_digest(channel)
    return text_reply(wording.lag_digest_posting(channel))


def _supplied(name: str, work: Callable[[], Reply]) -> Reply:
    try:
        return work()
    except NotImplementedError:
        return text_reply(wording.lag_not_available(name))


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


def run_command(text: str, deps: CommandDeps, *, user: str, channel: str, now: float) -> Reply:
    """Parse and handle one `/lag` text for `user` in `channel` at `now`: always a Reply, never a raise."""
    return respond_safely(
        lambda: handle(parse(text), deps, user=user, channel=channel, now=now),
        command_text=text,
        user=user,
        channel=channel,
    )
