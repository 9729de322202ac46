"""The `/lag` slash command's text: the commands it names, parsed, and the names in it resolved.

Grammar (the first word picks the command; any other first word is a group):

    /lag <group> [cluster] [--here]            ShowGroup   a fresh check, ephemeral unless --here
    /lag show <group> [cluster] [--here]       ShowGroup   for a group named like a command
    /lag top [n] [--here]                      Top         n in 1..50, default 10
    /lag silence <group> <duration> [--cluster NAME] [reason]
    /lag unsilence <group> [--cluster NAME]
    /lag digest | /lag help | /lag             Digest, Help
    /lag audit <group> [--cluster NAME]        Audit       handled by deps.audit
    /lag remediate <group> <action> [args] [--cluster NAME]   Remediate, handled by deps.remediate
    /lag report [days] [--here]                Report      handled by deps.report (lagbot.slack.history_replies)
    /lag history <group> [days] [--cluster NAME] [--here]     History, handled by deps.history
    /lag thresholds <group> [days] [--cluster NAME]           Thresholds, handled by deps.thresholds (approvers)

Options are `--name value` or `--name=value`, anywhere among the arguments; for `silence`, before the
reason (everything after the duration is the reason, word for word). `--here` posts the reply in the
channel (response_type in_channel) instead of only to the user; silences are always posted in the
channel, so everyone sees who silenced what. This module is the pure part: the commands, their argument
parsers and name resolution. lagbot.slack.subcommands joins each parser to its handler and permission.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from lagbot.core.config import parse_duration
from lagbot.slack.wording import commands as wording

DEFAULT_TOP = 10
MAX_TOP = 50
MIN_SILENCE = 60.0
MAX_SILENCE = 7 * 86_400.0
MAX_REASON = 300
MAX_CLOSEST = 5

# ---------------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------------


@runtime_checkable
class NamesGroup(Protocol):
    """A command about one group (a cluster named or not): what a permission is asked of (lagbot.slack.guard)."""

    @property
    def group(self) -> str: ...

    @property
    def cluster(self) -> str | None: ...


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


@dataclass(frozen=True, slots=True)
class Report:
    """`/lag report [days]`: repeat offenders over the last `days` days (default 7)."""

    days: int = 7
    public: bool = False


@dataclass(frozen=True, slots=True)
class History:
    """`/lag history <group> [days]`: the group's days and recurring patterns (default 7 days)."""

    group: str
    days: int = 7
    cluster: str | None = None
    public: bool = False


@dataclass(frozen=True, slots=True)
class Thresholds:
    """`/lag thresholds <group> [days]`: thresholds proposed and backtested (approvers only; default 30 days)."""

    group: str
    days: int = 30
    cluster: str | None = None


MAX_DAYS = 90

Command = ShowGroup | Top | Silence | Unsilence | Digest | Help | Audit | Remediate | Report | History | Thresholds


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
class Token:
    text: str
    start: int


@dataclass
class _Args:
    positionals: list[str] = field(default_factory=list)
    options: dict[str, str | bool] = field(default_factory=dict)
    free_text: str = ""


_LINK = re.compile(r"<[^<>|]*\|([^<>]*)>")


def unslack(text: str) -> str:
    """The text as typed: Slack's `<target|label>` links back to their label, then &lt; &gt; &amp; unescaped."""
    text = _LINK.sub(lambda m: m.group(1), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def tokens_of(text: str) -> list[Token]:
    return [Token(m.group(0), m.start()) for m in re.finditer(r"\S+", text)]


def _name(token: str) -> str:
    """A group or cluster name as typed, without the backticks of a copied `code` span."""
    return token.strip("`") or token


def _split(
    tokens: list[Token],
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


def _option(tokens: list[Token], i: int, args: _Args, *, flags: set[str], valued: set[str]) -> int:
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


def parse_show(tokens: list[Token], text: str) -> ShowGroup:
    args = _split(tokens, text, most=2, flags=["--here"], valued=["--cluster"])
    _need(args, 1, ["<group>"])
    positional = _name(args.positionals[1]) if len(args.positionals) > 1 else None
    option = _cluster_option(args)
    if positional is not None and option is not None and positional != option:
        raise CommandError(wording.lag_cluster_twice(positional, option))
    return ShowGroup(_name(args.positionals[0]), positional or option, public=bool(args.options.get("--here")))


def parse_top(tokens: list[Token], text: str) -> Top:
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


def parse_silence(tokens: list[Token], text: str) -> Silence:
    args = _split(tokens, text, most=2, valued=["--cluster"], free_text_after=2)
    _need(args, 2, ["<group>", "<duration>"])
    seconds = silence_seconds(args.positionals[1])
    if len(args.free_text) > MAX_REASON:
        raise CommandError(wording.lag_reason_too_long(len(args.free_text), MAX_REASON))
    return Silence(_name(args.positionals[0]), seconds, args.free_text, _cluster_option(args))


def parse_unsilence(tokens: list[Token], text: str) -> Unsilence:
    args = _split(tokens, text, most=1, valued=["--cluster"])
    _need(args, 1, ["<group>"])
    return Unsilence(_name(args.positionals[0]), _cluster_option(args))


def parse_no_args(made: Callable[[], Command]) -> Callable[[list[Token], str], Command]:
    def parse_none(tokens: list[Token], text: str) -> Command:
        _split(tokens, text, most=0)
        return made()

    return parse_none


def parse_audit(tokens: list[Token], text: str) -> Audit:
    args = _split(tokens, text, most=1, valued=["--cluster"])
    _need(args, 1, ["<group>"])
    return Audit(_name(args.positionals[0]), _cluster_option(args))


def parse_remediate(tokens: list[Token], text: str) -> Remediate:
    args = _split(tokens, text, most=None, valued=["--cluster"])
    _need(args, 2, ["<group>", "<action>"])
    group, action, *rest = args.positionals
    return Remediate(_name(group), action, tuple(rest), _cluster_option(args))


def _days(args: _Args, index: int, default: int) -> int:
    if len(args.positionals) <= index:
        return default
    value = args.positionals[index]
    if not re.fullmatch(r"[0-9]{1,3}", value) or not 1 <= int(value) <= MAX_DAYS:
        raise CommandError(wording.lag_days_out_of_range(value, 1, MAX_DAYS))
    return int(value)


def parse_report(tokens: list[Token], text: str) -> Report:
    args = _split(tokens, text, most=1, flags=["--here"])
    return Report(_days(args, 0, 7), public=bool(args.options.get("--here")))


def parse_history(tokens: list[Token], text: str) -> History:
    args = _split(tokens, text, most=2, flags=["--here"], valued=["--cluster"])
    _need(args, 1, ["<group>"])
    return History(
        _name(args.positionals[0]), _days(args, 1, 7), _cluster_option(args), bool(args.options.get("--here"))
    )


def parse_thresholds(tokens: list[Token], text: str) -> Thresholds:
    args = _split(tokens, text, most=2, valued=["--cluster"])
    _need(args, 1, ["<group>"])
    return Thresholds(_name(args.positionals[0]), _days(args, 1, 30), _cluster_option(args))


def command_like(word: str, names: Sequence[str]) -> str | None:
    """The subcommand of `names` a mistyped first word most likely meant (`slience` -> `silence`), if any."""
    close = difflib.get_close_matches(word.lower(), [n for n in names if n != "show"], n=1, cutoff=0.75)
    return close[0] if close else None


def hinted(error: CommandError, word: str, names: Sequence[str]) -> CommandError:
    meant = command_like(word, names)
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
