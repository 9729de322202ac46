"""The wording shared by several audiences, and the number formats.

Tiny functions, one per message, so the voice stays consistent and is changed in one place. Each audience's own
wording lives in its layer: lagbot.engine.wording (causes, statuses), lagbot.remediations.wording (and
drain_wording, executors.wording), lagbot.policies.wording (policy authors), lagbot.service.wording,
lagbot.slack.wording (Slack messages), lagbot.cli.wording (the terminal), lagbot.devkit.wording (the demos). Numbers
are formatted here (`count`, `rate`, `duration`), so a table, a cause and a Slack message say "4.2 M" the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, tzinfo
from pathlib import Path

from lagbot.core.model import GroupSummary, GroupVerdict, PartitionVerdict
from lagbot.core.patterns import UnsafePattern

# ---------------------------------------------------------------------------------------------------
# Number formatting
# ---------------------------------------------------------------------------------------------------


def count(n: int | float | None) -> str:
    """12 -> '12', 12_345 -> '12,345', 4_200_000 -> '4.2 M'; None -> '-'."""
    if n is None:
        return "-"
    if abs(n) >= 1_000_000:
        return f"{n / 1_000_000:.1f} M"
    return f"{round(n):,}"


def rate(per_second: float | None) -> str:
    """Messages per second, rounded for reading: '12,000 msg/s', '3.5 msg/s'; None -> '-'."""
    if per_second is None:
        return "-"
    if abs(per_second) >= 100:
        return f"{round(per_second):,} msg/s"
    return f"{per_second:.1f} msg/s"


def duration(seconds: float | None) -> str:
    """A duration for humans: '45 s', '6 min', '2 h 5 min', '3 d 4 h'; None -> '-'."""
    if seconds is None:
        return "-"
    s = round(seconds)
    if s < 120:
        return f"{s} s"
    minutes = s // 60
    if minutes < 120:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def percent(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


# ---------------------------------------------------------------------------------------------------
# Configuration and usage errors
# ---------------------------------------------------------------------------------------------------


def bad_duration(value: object) -> str:
    return f"{value!r} is not a duration: use seconds (90) or a number with a unit (90s, 5m, 2h, 1d)"


def bad_regex(pattern: str, problem: str) -> str:
    return f"{pattern!r} is not a valid regular expression ({problem})"


def unsafe_regex(pattern: str, problem: str) -> str:
    return (
        f"{pattern!r} needs backtracking, which could hang lagbot on a hostile group name ({problem}); lagbot "
        "matches in linear time (RE2): no backreferences, lookarounds, possessive or atomic groups"
    )


def refused_regex(pattern: str, exc: UnsafePattern) -> str:
    """Why a pattern of the settings or the policy is refused (lagbot.core.patterns)."""
    return bad_regex(pattern, exc.problem) if exc.invalid else unsafe_regex(pattern, exc.problem)


def reserved_kafka_key(key: str, field: str) -> str:
    return f"{key!r} cannot be set here: use the field {field!r}"


def bad_env_name(prop: str, variable: str) -> str:
    return f"{prop}: {variable!r} is not an environment variable name (letters, digits and _, not first a digit)"


def kafka_property_twice(props: Sequence[str]) -> str:
    return f"set in both 'kafka' and 'kafka_env': {', '.join(props)} (give each property once)"


def kafka_env_unset(cluster: str, prop: str, variable: str) -> str:
    return f"cluster {cluster!r}: the environment variable {variable} (for {prop}) is not set"


def level_without_trigger() -> str:
    return "a level needs at least one of 'messages', 'seconds' or 'doubling_within'"


def duplicate_clusters(names: Sequence[str]) -> str:
    return f"cluster names must be unique; repeated: {', '.join(names)}"


def unknown_cluster(name: str, known: Sequence[str]) -> str:
    return f"no cluster named {name!r}; configured: {', '.join(known) or 'none'}"


def config_unreadable(path: Path, problem: str) -> str:
    return f"{path}: cannot read the configuration file: {problem}"


def config_not_yaml(path: Path, problem: str, where: str | None = None) -> str:
    first_line = problem.strip().splitlines()[0] if problem.strip() else problem
    return f"{path}: not valid YAML" + (f" at {where}" if where else "") + f": {first_line}"


def config_not_utf8(path: Path, byte: int, position: int) -> str:
    return f"{path}: not UTF-8 text (byte 0x{byte:02x} at position {position}): save the file as UTF-8"


def config_env_not_json(variable: str, field: str) -> str:
    example = """, e.g. \'[{"name": "prod", "bootstrap_servers": "kafka:9092"}]\'""" if field == "clusters" else ""
    return f"environment variable {variable}: not valid JSON ({field} takes a JSON value{example})"


def config_not_mapping(path: Path, kind: str) -> str:
    return f"{path}: the configuration must be a mapping of settings, not a {kind}"


def config_field_error(origin: str, path: str, problem: str, value: object) -> str:
    shown = "" if isinstance(value, dict | list) or value is None else f" (got {value!r})"
    return f"{origin}: {path}: {problem}{shown}"


# ---------------------------------------------------------------------------------------------------
# Collection
# ---------------------------------------------------------------------------------------------------


def timed_out(seconds: float) -> str:
    return f"no answer within {seconds:g} s"


def offset_reader_failed(problem: str) -> str:
    return f"the committed offsets could not be read: {problem}; they are read again at the next check"


def reader_no_answer(within: float) -> str:
    return f"no answer within {within:g} s"


def reader_crashed(signal_name: str) -> str:
    return f"the Kafka client crashed ({signal_name})"


def reader_exited(code: int) -> str:
    return f"the Kafka client exited with code {code}"


# ---------------------------------------------------------------------------------------------------
# Partition status reasons (one line each, shown in --json and the tables' footnotes)
# ---------------------------------------------------------------------------------------------------


def horizons_positive(horizons: list[float]) -> str:
    return f"history_horizons must all be positive durations, got {horizons}"


def owned() -> str:
    return "owned"


# ---------------------------------------------------------------------------------------------------
# Causes
# ---------------------------------------------------------------------------------------------------


def owner(client_id: str, host: str, member_id: str) -> str:
    return f"{client_id}@{host} (member {member_id})"


# ---------------------------------------------------------------------------------------------------
# Terminal (lagbot check)
# ---------------------------------------------------------------------------------------------------


def lag_seconds_cell(seconds: float | None, lower_bound: bool) -> str:
    """'-' unknown, '12.5', or '>120' when the committed offset is older than the whole window."""
    if seconds is None:
        return "-"
    return f">{seconds:.0f}" if lower_bound else f"{seconds:.1f}"


def eta_text(eta: float | None, consume: float | None, lag: int | None) -> str:
    if eta is not None:
        return duration(eta)
    if lag is None or consume is None:
        return "unknown"
    return "never at the current rates"


def behind(seconds: float | None) -> str:
    """Lag in seconds for a headline: '6 min', or '-' when unknown."""
    return "-" if seconds is None else duration(seconds)


STATUS_WORDS = {"OK": "consuming", "WARN": "not catching up", "STALL": "stalled", "REWIND": "rewound",
                "STOP": "stopped", "ERR": "unreadable"}  # fmt: skip
"""What the consumers are doing, in words: beside a severity, "status OK" read as a contradiction ("WARN ...
status OK"); "WARN ... consuming" says the lag is high although the consumers move."""


def status_word(v: GroupVerdict | GroupSummary | PartitionVerdict) -> str:
    return STATUS_WORDS[v.status.name]


def cli_sampling(taken: int, samples: int, every: float) -> str:
    return f"snapshot {taken} of {samples} taken; the next in {every:g} s (rates and stalls need a window) ..."


# ---------------------------------------------------------------------------------------------------
# Slack
# ---------------------------------------------------------------------------------------------------


def slack_escape(text: str) -> str:
    """Text from outside (a group, topic, client or user name, a reason) made inert in a Slack mrkdwn string.

    Slack's control characters become entities (`&amp;`, `&lt;`, `&gt;`: no `<!channel>`, `<@U…>` or `<url|label>`
    survives), a backtick becomes U+02CB (ˋ, so a name cannot close the code span it is shown in) and every
    character that is invisible or reorders what follows it (`visible`) is shown as its `\\uXXXX` escape.
    """
    return slack_text(text).replace("`", "\u02cb")


def slack_text(text: str) -> str:
    """`slack_escape` that keeps backticks: for lagbot's own sentences (a plan's summary, a reason, an outcome's
    detail) whose code spans are meant, with values from outside inside them. Nothing in them can be live: `&`,
    `<`, `>` are entities; control and bidi characters are shown as escapes."""
    return visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_reason(text: str) -> str:
    """What a person typed (a silence or deny reason): `slack_escape` line by line, its line breaks kept."""
    return "\n".join(slack_text(line) for line in text.split("\n"))


def slack_name(name: str) -> str:
    """A name (group, topic, cluster) in a Slack mrkdwn string: escaped and in a code span, never linked."""
    return f"`{slack_escape(name)}`"


_INVISIBLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
    "\U000e0000-\U000e007f\ud800-\udfff]"
)
"""Control characters (C0, DEL, C1: newlines and terminal escapes included), bidirectional marks, embeddings,
overrides and isolates, zero-width and other invisible format characters, tags, lone surrogates."""


def visible(text: str) -> str:
    """`text` with every control, bidi or invisible character (`_INVISIBLE`) written as a visible escape (`\\n`,
    `\\x1b`, `\\u202e`): what a name shows in a terminal, a log or a chat, never what it does to them."""
    if not _INVISIBLE.search(text):
        return text
    return _INVISIBLE.sub(lambda m: m.group().encode("unicode_escape", "backslashreplace").decode("ascii"), text)


# --- incidents (Slack threads) ---


def incident_resolved_fallback(group: str, cluster: str, lasted: float, peak_lag: int | None) -> str:
    where = f"{slack_name(group)} on {slack_name(cluster)}"
    return f"RESOLVED {where}: resolved after {duration(lasted)}, peak {count(peak_lag)}"


def missing_secret(variable: str, what: str) -> str:
    return f"environment variable {variable} is not set: it must hold {what}"


def bot_needs_redis() -> str:
    return "redis_url: the bot keeps its state in Redis; set redis_url (or LAGBOT_REDIS_URL)"


def redis_unreachable(url: str, problem: str) -> str:
    return f"redis_url: cannot reach {without_password(url)}: {problem}"


def without_password(url: str) -> str:
    """A URL fit for a log: its user and password removed (redis://:secret@host -> redis://host)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.hostname is None:
        return url
    host = parts.hostname + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=host))


# --- /lag slash command and silences ---


# --- remediations: verification ---


# --- remediations: plans, pre-flight, execution ---


def min_over_max(min_replicas: int, max_replicas: int) -> str:
    return f"min_replicas ({min_replicas}) is above max_replicas ({max_replicas})"


# --- policies ---


def policy_not_allowed(rule: str, action: str) -> str:
    return f"rule {rule!r} does not allow {action}"


# --- digest ---


def clock(at: float, tz: tzinfo) -> str:
    """A time in the channel's zone, with the weekday so yesterday's 23:10 is not read as today's: 'Tue 03:12'."""
    return datetime.fromtimestamp(at, tz).strftime("%a %H:%M")


def slack_user(user: str) -> str:
    """A Slack user id as a mention (<@U123>); anything else (a name, 'policy') as escaped text."""
    return f"<@{user}>" if re.fullmatch(r"[UW][A-Z0-9]{2,}", user) else slack_escape(user)


def digest_chart_title() -> str:
    return "Lag of the worst groups, last 24 h"


def digest_retention_too_short(value: float) -> str:
    return f"{duration(value)} is too short: keep at least 1d, the digest compares lag with 24 h before"


def digest_bad_resolution(value: float) -> str:
    return f"{value:g} is not a whole number of seconds >= 1"


def history_bad_rollup_resolution(rollup: float, resolution: float) -> str:
    return (
        f"digest.history.rollup_resolution must be a whole multiple of resolution ({duration(resolution)}); "
        f"got {duration(rollup)}"
    )


def history_rollups_shorter(rollups: float, points: float) -> str:
    return (
        f"digest.history.rollup_retention ({duration(rollups)}) must be at least retention ({duration(points)}), "
        "or 0 for no rollups"
    )


def digest_bad_timezone(name: str) -> str:
    return f"{name!r} is not an IANA time zone (such as 'UTC' or 'Europe/Paris')"


def digest_bad_cron(cron: str, problem: str) -> str:
    return f"{cron!r} is not a 5-field crontab (minute hour day month weekday): {problem}"


def digest_period_beyond_history(channel: str, period: float, retention: float) -> str:
    return (
        f"the digest of {channel} covers {duration(period)} but history is kept {duration(retention)}: "
        f"raise digest.history.retention or shorten the period"
    )


def digest_bad_channel(channel: str) -> str:
    return f"{channel!r} is not a channel: give its id (C0123ABCD) or its name (#kafka-alerts), without spaces"


# --- approvals in Slack ---


def approval_unknown() -> str:
    return "This proposal is unknown or too old: ask for a new one with `/lag remediate <group> <action>`."


def remediation_not_offered(action: str, reason: str) -> str:
    return f"`{slack_escape(action)}` not offered: {slack_text(reason)}"


def audit_line(at: str, event: str, user: str, action: str | None, detail: str) -> str:
    who = slack_user(user) if user else "(no user)"
    return f"`{at}` *{slack_escape(event)}* {slack_escape(action or '')} by {who} {slack_text(detail)}".rstrip()


# --- executors ---
# Outcome details of executors go into Slack threads as they are; errors name what was being done.


# --- drain ---


def drain_nothing(group: str) -> str:
    return f"{group}: nothing to drain (every partition is caught up)"


# --- demo ---


def demo_wait_settled(fleet: str) -> str:
    return f"fleet {fleet} to join its group"


# ---------------------------------------------------------------------------------------------------
# Who may do what: rate limits, authorisation, replays, drain sinks
# ---------------------------------------------------------------------------------------------------


def command_bad_user(user: str) -> str:
    return f"This request names no valid Slack user or channel ({slack_escape(user)!r}): nothing was done."


def config_key_not_text(path: object, key: object) -> str:
    return f"{path}: top level: the key {key!r} is not a name (keys are words like clusters, slack, rules)"
