"""The `/lag` slash command: parse its text, resolve the names in it, handle it into a reply.

Independent of slack_bolt: the app's `/lag` listener acks within 3 s and, in a lazy listener, calls
`run_command(text, deps, user=..., channel=..., now=...)` and sends the `Reply` it returns
(`reply.to_response()` is the response_url payload). `deps` is anything that keeps the `CommandDeps`
protocol. All wording lives in lagbot.slack.wording; every reply stays within Slack's Block Kit limits.

Grammar (the first word picks the command; any other first word is a group):

    /lag <group> [cluster] [--here]            ShowGroup   a fresh check, ephemeral unless --here
    /lag show <group> [cluster] [--here]       ShowGroup   for a group named like a command
    /lag top [n] [--here]                      Top         n in 1..50, default 10
    /lag silence <group> <duration> [--cluster NAME] [reason]
    /lag unsilence <group> [--cluster NAME]
    /lag digest | /lag help | /lag             Digest, Help
    /lag audit <group> [--cluster NAME]        Audit       handled by deps.audit
    /lag remediate <group> <action> [args] [--cluster NAME]   Remediate, handled by deps.remediate

Options are `--name value` or `--name=value`, anywhere among the arguments; for `silence`, before the
reason (everything after the duration is the reason, word for word). `--here` posts the reply in the
channel (response_type in_channel) instead of only to the user; silences are always posted in the
channel, so everyone sees who silenced what. Adding a command is one dataclass, one parse function, one
`SUBCOMMANDS` entry, one `case` in `handle`, and its wording in lagbot.slack.wording.
"""

from __future__ import annotations

import difflib
import logging
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, assert_never

from slack_sdk.models.blocks import Block, ContextBlock, SectionBlock, TableBlock
from slack_sdk.models.blocks.basic_components import MarkdownTextObject

from lagbot.core import messages
from lagbot.core.config import parse_duration
from lagbot.core.model import GroupVerdict
from lagbot.service.silences import Silence as ActiveSilence
from lagbot.service.silences import SilenceStore
from lagbot.slack import render, wording

log = logging.getLogger(__name__)

DEFAULT_TOP = 10
MAX_TOP = 50
MIN_SILENCE = 60.0
MAX_SILENCE = 7 * 86_400.0
MAX_REASON = 300
MAX_CLOSEST = 5
MAX_CELL = 100
MAX_FALLBACK = 3_900

# ---------------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShowGroup:
    """`/lag <group> [cluster]`: a fresh check of one group; `public` posts it in the channel."""

    group: str
    cluster: str | None = None
    public: bool = False


@dataclass(frozen=True, slots=True)
class Top:
    """`/lag top [n]`: the `n` worst groups of the last scheduled check."""

    n: int = DEFAULT_TOP
    public: bool = False


@dataclass(frozen=True, slots=True)
class Silence:
    """`/lag silence <group> <duration> [reason]`: no new incidents for the group for that long."""

    group: str
    duration_seconds: float
    reason: str = ""
    cluster: str | None = None


@dataclass(frozen=True, slots=True)
class Unsilence:
    group: str
    cluster: str | None = None


@dataclass(frozen=True, slots=True)
class Digest:
    pass


@dataclass(frozen=True, slots=True)
class Help:
    pass


@dataclass(frozen=True, slots=True)
class Audit:
    """`/lag audit <group>`: handled by `CommandDeps.audit`."""

    group: str
    cluster: str | None = None


@dataclass(frozen=True, slots=True)
class Remediate:
    """`/lag remediate <group> <action> [args]`: handled by `CommandDeps.remediate`."""

    group: str
    action: str
    args: tuple[str, ...] = ()
    cluster: str | None = None


Command = ShowGroup | Top | Silence | Unsilence | Digest | Help | Audit | Remediate


class CommandError(Exception):
    """Bad input: `problem` names what is wrong; `usage` is the usage line of the command meant, if known.

    `str(error)` (and `.message`) is what the user sees.
    """

    def __init__(self, problem: str, *, usage: str | None = None) -> None:
        self.problem = problem
        self.usage = usage
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return wording.lag_error(self.problem, self.usage)

    def with_usage(self, usage: str) -> CommandError:
        """This error with `usage`, unless it already names one."""
        return self if self.usage is not None else CommandError(self.problem, usage=usage)


# ---------------------------------------------------------------------------------------------------
# Parsing (pure)
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    start: int


@dataclass
class _Args:
    positionals: list[str] = field(default_factory=list)
    options: dict[str, str | bool] = field(default_factory=dict)
    free_text: str = ""


@dataclass(frozen=True, slots=True)
class Subcommand:
    """One `/lag` subcommand: its name, usage line, one-line summary and parser of its arguments."""

    name: str
    usage: Callable[[], str]
    summary: Callable[[], str]
    parse: Callable[[list[_Token], str], Command]


_LINK = re.compile(r"<[^<>|]*\|([^<>]*)>")


def unslack(text: str) -> str:
    """The text as typed: Slack's `<target|label>` links back to their label, then &lt; &gt; &amp; unescaped."""
    text = _LINK.sub(lambda m: m.group(1), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _tokens(text: str) -> list[_Token]:
    return [_Token(m.group(0), m.start()) for m in re.finditer(r"\S+", text)]


def _name(token: str) -> str:
    """A group or cluster name as typed, without the backticks of a copied `code` span."""
    return token.strip("`") or token


def _split(
    tokens: list[_Token],
    text: str,
    *,
    most: int | None,
    flags: Iterable[str] = (),
    valued: Iterable[str] = (),
    free_text_after: int | None = None,
) -> _Args:
    """Split arguments into positionals, options (`--flag`, `--name value`, `--name=value`) and free text.

    With `free_text_after=k`, everything from the (k+1)-th positional on is free text, word for word.
    More than `most` positionals (None: no limit) is an error naming the first extra one.
    """
    flags, valued = set(flags), set(valued)
    args = _Args()
    i = 0
    while i < len(tokens):
        token = tokens[i].text
        if token.startswith("--") and len(token) > 2:
            i = _option(tokens, i, args, flags=flags, valued=valued)
            continue
        if free_text_after is not None and len(args.positionals) == free_text_after:
            args.free_text = text[tokens[i].start :].strip()
            return args
        if most is not None and len(args.positionals) == most:
            raise CommandError(wording.lag_unexpected(token))
        args.positionals.append(token)
        i += 1
    return args


def _option(tokens: list[_Token], i: int, args: _Args, *, flags: set[str], valued: set[str]) -> int:
    """Read the option at `tokens[i]` into `args`; returns the index of the next token."""
    name, equals, value = tokens[i].text.partition("=")
    if name in args.options:
        raise CommandError(wording.lag_option_twice(name))
    if name in flags:
        if equals:
            raise CommandError(wording.lag_flag_takes_no_value(name))
        args.options[name] = True
        return i + 1
    if name not in valued:
        raise CommandError(wording.lag_unknown_option(name, sorted(flags | valued)))
    if equals:
        if not value:
            raise CommandError(wording.lag_option_needs_value(name))
        args.options[name] = value
        return i + 1
    if i + 1 >= len(tokens) or tokens[i + 1].text.startswith("--"):
        raise CommandError(wording.lag_option_needs_value(name))
    args.options[name] = tokens[i + 1].text
    return i + 2


def _cluster_option(args: _Args) -> str | None:
    value = args.options.get("--cluster")
    return _name(value) if isinstance(value, str) else None


def _need(args: _Args, count: int, what: Sequence[str]) -> None:
    if len(args.positionals) < count:
        raise CommandError(wording.lag_missing(what[len(args.positionals)]))


def _parse_show(tokens: list[_Token], text: str) -> ShowGroup:
    args = _split(tokens, text, most=2, flags=["--here"], valued=["--cluster"])
    _need(args, 1, ["<group>"])
    positional = _name(args.positionals[1]) if len(args.positionals) > 1 else None
    option = _cluster_option(args)
    if positional is not None and option is not None and positional != option:
        raise CommandError(wording.lag_cluster_twice(positional, option))
    return ShowGroup(_name(args.positionals[0]), positional or option, public=bool(args.options.get("--here")))


def _parse_top(tokens: list[_Token], text: str) -> Top:
    args = _split(tokens, text, most=1, flags=["--here"])
    public = bool(args.options.get("--here"))
    if not args.positionals:
        return Top(public=public)
    value = args.positionals[0]
    if not re.fullmatch(r"[0-9]+", value):
        raise CommandError(wording.lag_top_not_a_number(value))
    n = int(value)
    if not 1 <= n <= MAX_TOP:
        raise CommandError(wording.lag_top_out_of_range(n, 1, MAX_TOP))
    return Top(n, public=public)


def silence_seconds(value: str) -> float:
    """A silence's duration (lagbot.core.config.parse_duration's syntax) within MIN_SILENCE..MAX_SILENCE."""
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    if not MIN_SILENCE <= seconds <= MAX_SILENCE:
        raise CommandError(wording.lag_duration_out_of_range(value, seconds, MIN_SILENCE, MAX_SILENCE))
    return seconds


def _parse_silence(tokens: list[_Token], text: str) -> Silence:
    args = _split(tokens, text, most=2, valued=["--cluster"], free_text_after=2)
    _need(args, 2, ["<group>", "<duration>"])
    seconds = silence_seconds(args.positionals[1])
    if len(args.free_text) > MAX_REASON:
        raise CommandError(wording.lag_reason_too_long(len(args.free_text), MAX_REASON))
    return Silence(_name(args.positionals[0]), seconds, args.free_text, _cluster_option(args))


def _parse_unsilence(tokens: list[_Token], text: str) -> Unsilence:
    args = _split(tokens, text, most=1, valued=["--cluster"])
    _need(args, 1, ["<group>"])
    return Unsilence(_name(args.positionals[0]), _cluster_option(args))


def _parse_no_args(made: Callable[[], Command]) -> Callable[[list[_Token], str], Command]:
    def parse_none(tokens: list[_Token], text: str) -> Command:
        _split(tokens, text, most=0)
        return made()

    return parse_none


def _parse_audit(tokens: list[_Token], text: str) -> Audit:
    args = _split(tokens, text, most=1, valued=["--cluster"])
    _need(args, 1, ["<group>"])
    return Audit(_name(args.positionals[0]), _cluster_option(args))


def _parse_remediate(tokens: list[_Token], text: str) -> Remediate:
    args = _split(tokens, text, most=None, valued=["--cluster"])
    _need(args, 2, ["<group>", "<action>"])
    group, action, *rest = args.positionals
    return Remediate(_name(group), action, tuple(rest), _cluster_option(args))


SUBCOMMANDS: dict[str, Subcommand] = {
    s.name: s
    for s in (
        Subcommand("show", wording.lag_usage_show, wording.lag_summary_show, _parse_show),
        Subcommand("top", wording.lag_usage_top, lambda: wording.lag_summary_top(DEFAULT_TOP, MAX_TOP), _parse_top),
        Subcommand(
            "silence",
            wording.lag_usage_silence,
            lambda: wording.lag_summary_silence(MIN_SILENCE, MAX_SILENCE),
            _parse_silence,
        ),
        Subcommand("unsilence", wording.lag_usage_unsilence, wording.lag_summary_unsilence, _parse_unsilence),
        Subcommand("digest", wording.lag_usage_digest, wording.lag_summary_digest, _parse_no_args(Digest)),
        Subcommand("audit", wording.lag_usage_audit, wording.lag_summary_audit, _parse_audit),
        Subcommand("remediate", wording.lag_usage_remediate, wording.lag_summary_remediate, _parse_remediate),
        Subcommand("help", wording.lag_usage_help, wording.lag_summary_help, _parse_no_args(Help)),
    )
}
"""The subcommands, in the order `/lag help` lists them. `show` is also what any other first word means."""

USAGE_OF: dict[type, Callable[[], str]] = {
    ShowGroup: wording.lag_usage_show,
    Top: wording.lag_usage_top,
    Silence: wording.lag_usage_silence,
    Unsilence: wording.lag_usage_unsilence,
    Digest: wording.lag_usage_digest,
    Help: wording.lag_usage_help,
    Audit: wording.lag_usage_audit,
    Remediate: wording.lag_usage_remediate,
}


def parse(text: str) -> Command:
    """The command in a `/lag` text as Slack sends it (empty text is Help). Pure.

    Raises:
        CommandError: naming what is wrong, with the usage line of the subcommand meant.
    """
    text = unslack(text)
    tokens = _tokens(text)
    if not tokens:
        return Help()
    word = tokens[0].text.lower()
    subcommand = SUBCOMMANDS.get(word)
    if subcommand is not None:
        try:
            return subcommand.parse(tokens[1:], text)
        except CommandError as exc:
            raise exc.with_usage(subcommand.usage()) from None
    show = SUBCOMMANDS["show"]
    try:
        return _parse_show(tokens, text)
    except CommandError as exc:
        raise _hinted(exc, tokens[0].text).with_usage(show.usage()) from None


def command_like(word: str) -> str | None:
    """The subcommand a mistyped first word most likely meant (`slience` -> `silence`), if any."""
    close = difflib.get_close_matches(word.lower(), [n for n in SUBCOMMANDS if n != "show"], n=1, cutoff=0.75)
    return close[0] if close else None


def _hinted(error: CommandError, word: str) -> CommandError:
    meant = command_like(word)
    if meant is None:
        return error
    return CommandError(error.problem + wording.lag_command_hint(meant), usage=error.usage)


# ---------------------------------------------------------------------------------------------------
# Resolution against what exists
# ---------------------------------------------------------------------------------------------------


def closest(name: str, candidates: Sequence[str], n: int = MAX_CLOSEST) -> list[str]:
    """Up to `n` candidates like `name`: difflib's best matches first, then names containing it."""
    similar = difflib.get_close_matches(name, candidates, n=n, cutoff=0.6)
    needle = name.lower()
    containing = sorted((c for c in candidates if needle and needle in c.lower()), key=lambda c: (len(c), c))
    found: list[str] = []
    for candidate in [*similar, *containing]:
        if candidate not in found and candidate != name:
            found.append(candidate)
        if len(found) == n:
            break
    return found


def resolve_group(name: str, cluster: str | None, known: Mapping[str, Sequence[str]]) -> tuple[str, str]:
    """The (cluster, group) a user means, from the groups known per cluster.

    Raises:
        CommandError: unknown cluster or group (with the closest names), a group not on the cluster named
            (with the clusters it is on), or a group on several clusters when none is named.
    """
    if not any(known.values()) and (cluster is None or cluster in known):
        raise CommandError(wording.lag_no_groups_known())
    if cluster is not None:
        return _on_cluster(name, cluster, known)
    on = sorted(c for c, groups in known.items() if name in groups)
    if len(on) == 1:
        return on[0], name
    if on:
        raise CommandError(wording.lag_group_ambiguous(name, on))
    every = sorted({g for groups in known.values() for g in groups})
    raise CommandError(wording.lag_unknown_group(name, None, closest(name, every)))


def _on_cluster(name: str, cluster: str, known: Mapping[str, Sequence[str]]) -> tuple[str, str]:
    if cluster not in known:
        clusters = sorted(known)
        raise CommandError(wording.lag_unknown_cluster(cluster, clusters, closest(cluster, clusters)))
    if name in known[cluster]:
        return cluster, name
    elsewhere = sorted(c for c, groups in known.items() if name in groups)
    if elsewhere:
        raise CommandError(wording.lag_group_elsewhere(name, cluster, elsewhere))
    raise CommandError(wording.lag_unknown_group(name, cluster, closest(name, list(known[cluster]))))


# ---------------------------------------------------------------------------------------------------
# Replies and what the handlers need
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """What the command answers: fallback `text`, Block Kit `blocks` (JSON), and whether all see it."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    public: bool = False

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

    def latest_verdicts(self) -> Sequence[GroupVerdict]:
        """The verdicts of the last scheduled check (empty before the first one)."""
        ...

    def check_group(self, cluster: str, group: str) -> GroupVerdict:
        """A fresh check of one group (may take seconds)."""
        ...

    def post_digest(self, channel: str) -> None: ...

    def audit(self, cluster: str, group: str) -> Reply: ...

    def remediate(self, cluster: str, group: str, action: str, user: str, *, args: Sequence[str]) -> Reply: ...


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


def worst_first(verdicts: Iterable[GroupVerdict]) -> list[GroupVerdict]:
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


def top_reply(verdicts: Sequence[GroupVerdict], silenced: Mapping[tuple[str, str], float], n: int, *,
              public: bool) -> Reply:  # fmt: skip
    """The `n` worst groups as a table; `silenced` maps (cluster, group) to the seconds of silence left."""
    if not verdicts:
        return text_reply(wording.lag_top_empty(), public=public)
    shown = worst_first(verdicts)[:n]
    rows = [wording.lag_top_columns(), *(_top_row(v, silenced.get((v.cluster, v.group))) for v in shown)]
    cells = [[{"type": "raw_text", "text": render.clip(cell, MAX_CELL)} for cell in row] for row in rows]
    title = SectionBlock(text=MarkdownTextObject(text=wording.lag_top_title(len(shown), len(verdicts))))
    fallback = "\n".join(wording.lag_top_line(i, v) for i, v in enumerate(shown, start=1))
    blocks: list[Block] = [title, TableBlock(rows=cells)]
    return Reply(text=render.clip(fallback, MAX_FALLBACK), blocks=[b.to_dict() for b in blocks], public=public)


def _top_row(v: GroupVerdict, silence_left: float | None) -> list[str]:
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
        case _:
            assert_never(command)


def _show(command: ShowGroup, deps: CommandDeps, *, now: float) -> Reply:
    try:
        cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
    except CommandError as exc:
        raise _hinted(exc, command.group) from None
    verdict = deps.check_group(cluster, group)
    return group_reply(verdict, deps.silences.active(cluster, group, now), now=now, public=command.public)


def _top(command: Top, deps: CommandDeps, *, now: float) -> Reply:
    silenced = {(s.cluster, s.group): s.remaining(now) for s in deps.silences.all_active(now)}
    return top_reply(deps.latest_verdicts(), silenced, command.n, public=command.public)


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
