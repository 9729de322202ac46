"""The `/lag` subcommands as a registry: each one's grammar (usage and summary), parser, handler and permission in
one entry of `SUBCOMMANDS`, as remediations are registered in lagbot.remediations.registry.

`parse` picks the entry by the first word (any other first word is a group: `show`), `handle` runs the entry's
handler, `run_command` does both and never raises, and lagbot.slack.guard asks the entry's `permission` who may
run it. Adding a subcommand is its dataclass and argument parser in lagbot.slack.command_parse, its handler and
one `Subcommand` line here, and its words in lagbot.slack.wording (tests/slack/test_subcommand_registry.py holds
every entry to that).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

from lagbot.slack.command_parse import (
    DEFAULT_TOP,
    MAX_SILENCE,
    MAX_TOP,
    MIN_SILENCE,
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
    Token,
    Top,
    Unsilence,
    hinted,
    parse_audit,
    parse_history,
    parse_no_args,
    parse_remediate,
    parse_report,
    parse_show,
    parse_silence,
    parse_thresholds,
    parse_top,
    parse_unsilence,
    resolve_group,
    tokens_of,
    unslack,
)
from lagbot.slack.commands import CommandDeps, Reply, group_reply, respond_safely, text_reply, top_reply
from lagbot.slack.wording import commands as wording

C = TypeVar("C")


class Permission(Enum):
    """Who may run a subcommand, as the policy rule matching its group lists them (lagbot.slack.guard)."""

    ANYONE = "anyone"
    """It only reads."""
    SILENCERS = "silencers"
    """It changes what is said about the group: the rule's silencers (default: its approvers)."""
    APPROVERS = "approvers"
    """It proposes a change, or shows what is for approvers: the rule's approvers."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who runs the command, where and when."""

    user: str
    channel: str
    now: float


@dataclass(frozen=True, slots=True)
class Subcommand(Generic[C]):
    """One `/lag` subcommand: the command it makes, its usage line and one-line summary (for errors and `/lag
    help`), the parser of its arguments, its handler and who may run it."""

    name: str
    kind: type[C]
    usage: Callable[[], str]
    summary: Callable[[], str]
    parse: Callable[[list[Token], str], C]
    handle: Callable[[C, CommandDeps, Caller], Reply]
    permission: Permission = Permission.ANYONE


# ---------------------------------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------------------------------


def _show(command: ShowGroup, deps: CommandDeps, caller: Caller) -> Reply:
    try:
        cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
    except CommandError as exc:
        raise hinted(exc, command.group, list(SUBCOMMANDS)) from None
    verdict = deps.check_group(cluster, group)
    silence = deps.silences.active(cluster, group, caller.now)
    return group_reply(verdict, silence, now=caller.now, public=command.public)


def _top(command: Top, deps: CommandDeps, caller: Caller) -> Reply:
    silenced = {(s.cluster, s.group): s.remaining(caller.now) for s in deps.silences.all_active(caller.now)}
    return top_reply(deps.latest_summaries(), silenced, command.n, public=command.public)


def _silence(command: Silence, deps: CommandDeps, caller: Caller) -> Reply:
    cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
    until = caller.now + command.duration_seconds
    deps.silences.silence(cluster, group, until=until, reason=command.reason, by=caller.user, now=caller.now)
    text = wording.lag_silenced(group, cluster, caller.user, until, command.duration_seconds, command.reason)
    return text_reply(text, public=True)


def _unsilence(command: Unsilence, deps: CommandDeps, caller: Caller) -> Reply:
    known = {cluster: list(groups) for cluster, groups in deps.known_groups().items()}
    for s in deps.silences.all_active(caller.now):  # a silenced group that has since vanished can still be lifted
        known.setdefault(s.cluster, [])
        if s.group not in known[s.cluster]:
            known[s.cluster].append(s.group)
    cluster, group = resolve_group(command.group, command.cluster, known)
    if deps.silences.unsilence(cluster, group, now=caller.now):
        return text_reply(wording.lag_unsilenced(group, cluster, caller.user), public=True)
    return text_reply(wording.lag_not_silenced(group, cluster))


def _digest(_command: Digest, deps: CommandDeps, caller: Caller) -> Reply:
    def post() -> Reply:
        deps.post_digest(caller.channel)
        return text_reply(wording.lag_digest_posting(caller.channel))

    return _supplied("digest", post)


def _help(_command: Help, _deps: CommandDeps, _caller: Caller) -> Reply:
    return help_reply()


def _audit(command: Audit, deps: CommandDeps, _caller: Caller) -> Reply:
    cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
    return _supplied("audit", lambda: deps.audit(cluster, group))


def _remediate(command: Remediate, deps: CommandDeps, caller: Caller) -> Reply:
    cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
    return _supplied("remediate", lambda: deps.remediate(cluster, group, command.action, caller.user,
                                                         args=command.args))  # fmt: skip


def _report(command: Report, deps: CommandDeps, caller: Caller) -> Reply:
    return _supplied("report", lambda: deps.report(caller.channel, command.days, public=command.public))


def _history(command: History, deps: CommandDeps, _caller: Caller) -> Reply:
    cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
    return _supplied("history", lambda: deps.history(cluster, group, command.days, public=command.public))


def _thresholds(command: Thresholds, deps: CommandDeps, _caller: Caller) -> Reply:
    cluster, group = resolve_group(command.group, command.cluster, deps.known_groups())
    return _supplied("thresholds", lambda: deps.thresholds(cluster, group, command.days))


def _supplied(name: str, work: Callable[[], Reply]) -> Reply:
    try:
        return work()
    except NotImplementedError:
        return text_reply(wording.lag_not_available(name))


# ---------------------------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------------------------

_ENTRIES: tuple[Subcommand[Any], ...] = (
    Subcommand("show", ShowGroup, wording.lag_usage_show, wording.lag_summary_show, parse_show, _show),
    Subcommand(
        "top", Top, wording.lag_usage_top, lambda: wording.lag_summary_top(DEFAULT_TOP, MAX_TOP), parse_top, _top
    ),
    Subcommand(
        "silence",
        Silence,
        wording.lag_usage_silence,
        lambda: wording.lag_summary_silence(MIN_SILENCE, MAX_SILENCE),
        parse_silence,
        _silence,
        Permission.SILENCERS,
    ),
    Subcommand(
        "unsilence",
        Unsilence,
        wording.lag_usage_unsilence,
        wording.lag_summary_unsilence,
        parse_unsilence,
        _unsilence,
        Permission.SILENCERS,
    ),
    Subcommand("digest", Digest, wording.lag_usage_digest, wording.lag_summary_digest, parse_no_args(Digest), _digest),
    Subcommand("audit", Audit, wording.lag_usage_audit, wording.lag_summary_audit, parse_audit, _audit),
    Subcommand(
        "remediate",
        Remediate,
        wording.lag_usage_remediate,
        wording.lag_summary_remediate,
        parse_remediate,
        _remediate,
        Permission.APPROVERS,
    ),
    Subcommand("report", Report, wording.lag_usage_report, wording.lag_summary_report, parse_report, _report),
    Subcommand("history", History, wording.lag_usage_history, wording.lag_summary_history, parse_history, _history),
    Subcommand(
        "thresholds",
        Thresholds,
        wording.lag_usage_thresholds,
        wording.lag_summary_thresholds,
        parse_thresholds,
        _thresholds,
        Permission.APPROVERS,
    ),
    Subcommand("help", Help, wording.lag_usage_help, wording.lag_summary_help, parse_no_args(Help), _help),
)

SUBCOMMANDS: dict[str, Subcommand[Any]] = {s.name: s for s in _ENTRIES}
"""The subcommands by name, in the order `/lag help` lists them. `show` is also what any other first word means."""

_BY_KIND: dict[type, Subcommand[Any]] = {s.kind: s for s in _ENTRIES}


def subcommand_of(command: Command) -> Subcommand[Any]:
    """The registry entry that made `command`."""
    return _BY_KIND[type(command)]


def help_reply() -> Reply:
    lines = [wording.lag_help_title()]
    lines += [wording.lag_help_line(s.usage(), s.summary()) for s in SUBCOMMANDS.values()]
    return text_reply("\n".join(lines))


# ---------------------------------------------------------------------------------------------------
# Parse, handle, run
# ---------------------------------------------------------------------------------------------------


def parse(text: str) -> Command:
    """The command in a `/lag` text as Slack sends it (empty text is Help). Pure.

    Raises:
        CommandError: naming what is wrong, with the usage line of the subcommand meant.
    """
    text = unslack(text)
    tokens = tokens_of(text)
    if not tokens:
        return Help()
    subcommand = SUBCOMMANDS.get(tokens[0].text.lower())
    if subcommand is not None:
        try:
            made: Command = subcommand.parse(tokens[1:], text)
        except CommandError as exc:
            raise exc.with_usage(subcommand.usage()) from None
        return made
    show = SUBCOMMANDS["show"]
    try:
        return parse_show(tokens, text)
    except CommandError as exc:
        raise hinted(exc, tokens[0].text, list(SUBCOMMANDS)).with_usage(show.usage()) from None


def handle(command: Command, deps: CommandDeps, *, user: str, channel: str, now: float) -> Reply:
    """Carry out a parsed command for `user` in `channel` at `now`.

    Raises:
        CommandError: a name that does not resolve (with the closest matches and the usage line).
    """
    subcommand = subcommand_of(command)
    try:
        reply: Reply = subcommand.handle(command, deps, Caller(user, channel, now))
    except CommandError as exc:
        raise exc.with_usage(subcommand.usage()) from None
    return reply


def run_command(text: str, deps: CommandDeps, *, user: str, channel: str, now: float) -> Reply:
    """Parse and handle one `/lag` text for `user` in `channel` at `now`: always a Reply, never a raise."""
    return respond_safely(
        lambda: handle(parse(text), deps, user=user, channel=channel, now=now),
        command_text=text,
        user=user,
        channel=channel,
    )
