"""The words of an incident's thread in Slack: its root (headline, context, resolution), its table reply and
causes, the replies on a change, and the notice that stored state was lost (lagbot.slack.render). Also the marks the
other subjects share: a severity's emoji, a trend's arrow, a time Slack shows in each reader's zone.
"""

from __future__ import annotations

from lagbot.core.messages import (
    behind,
    count,
    duration,
    eta_text,
    percent,
    slack_escape,
    slack_name,
    slack_text,
    status_word,
)
from lagbot.core.model import Cause, GroupVerdict, PartitionVerdict, Trend

SEVERITY_EMOJI = {"ok": ":large_green_circle:", "warn": ":large_yellow_circle:", "critical": ":red_circle:",
                  "page": ":rotating_light:"}  # fmt: skip

TREND_ARROW = {Trend.GROWING: "↗", Trend.SHRINKING: "↘", Trend.STEADY: "→", Trend.UNKNOWN: "?"}


def slack_headline(v: GroupVerdict) -> str:
    lag_s = behind(v.max_lag_seconds)
    return (
        f"{SEVERITY_EMOJI[v.severity.label]} *{v.severity.label.upper()}* `{slack_escape(v.group)}` "
        f"on {slack_escape(v.cluster)}: *{status_word(v)}*, lag *{count(v.total_lag)}* ({lag_s} behind) "
        f"{TREND_ARROW.get(v.trend, '?')} {v.trend}, ETA {eta_text(v.eta_seconds, v.consume_rate, v.total_lag)}"
    )


def slack_root_context(v: GroupVerdict, worst: PartitionVerdict | None) -> str:
    parts = [f"state {v.state.value}", slack_escape(v.severity_reason)]
    if worst is not None and worst.lag:
        where = f"{slack_escape(worst.topic)}/{worst.partition}"
        parts.append(f"worst: {where} lag {count(worst.lag)} ({worst.status.name})")
    return " · ".join(parts)


def slack_root_fallback(v: GroupVerdict) -> str:
    where = f"{slack_name(v.group)} on {slack_name(v.cluster)}"
    return f"{v.severity.label.upper()} {where}: {status_word(v)}, lag {count(v.total_lag)}"


def slack_table_title(v: GroupVerdict) -> str:
    return f"*Partitions of* `{slack_escape(v.group)}` ({len(v.partitions)}), lagging first"


EMPTY_CELL = "-"
"""What a table cell with nothing to say shows: Slack refuses a raw_text cell of no text (at least one character)."""


def slack_table_summary_row(partitions: int, lag: int, columns: int) -> list[str]:
    return [f"… {partitions} more", EMPTY_CELL, EMPTY_CELL, str(lag), EMPTY_CELL, EMPTY_CELL, EMPTY_CELL][:columns]


def slack_cause(c: Cause, remedy: str | None) -> str:
    action = f" → _{remedy}_" if remedy else ""
    return f"*{c.rank}. {c.kind}* ({percent(c.confidence)}): {slack_escape(c.explanation)}{action}"


def slack_more_causes(n: int) -> str:
    return f"… and {n} more likely cause(s): `/lag <group>` shows them all"


def slack_no_causes() -> str:
    return "No likely cause stands out yet."


def slack_thread_fallback(v: GroupVerdict, table: str) -> str:
    return f"Partitions of {slack_name(v.group)}:\n{table}"


RESOLVED_EMOJI = ":large_green_circle:"


def incident_open_context(opened_for: float, peak_lag: int | None, reopened: int) -> str:
    again = f" · reopened {reopened}x" if reopened else ""
    return f"open for {duration(opened_for)} · peak lag {count(peak_lag)}{again}"


def incident_recovering(below_for: float, resolve_after: float) -> str:
    return f"recovering: below threshold for {duration(below_for)} (resolves after {duration(resolve_after)})"


def incident_resolved_headline(
    group: str, cluster: str, lasted: float, peak_lag: int | None, peak: str, lag_then: int | None
) -> str:
    """`lag_then`: the lag of the check that resolved it (None: unknown, a group that is gone: not said)."""
    then = "" if lag_then is None else f"; lag {count(lag_then)} when resolved"
    return (
        f"{RESOLVED_EMOJI} *RESOLVED* `{slack_escape(group)}` on {slack_escape(cluster)}: "
        f"resolved after {duration(lasted)}, peak {count(peak_lag)} ({peak.upper()}){then}"
    )


def incident_resolved_reply(lasted: float, peak_lag: int | None, lag_now: int | None) -> str:
    return f"{RESOLVED_EMOJI} Resolved after {duration(lasted)}, peak {count(peak_lag)}; lag now {count(lag_now)}."


def incident_reopened_reply(v: GroupVerdict) -> str:
    return f":repeat: Back in trouble: {slack_headline(v)}"


def incident_severity_reply(before: str, v: GroupVerdict) -> str:
    word = "up" if v.severity.label != before and _rank(v.severity.label) > _rank(before) else "down"
    arrow = ":arrow_up:" if word == "up" else ":arrow_down:"
    return (
        f"{arrow} Severity {word}: {before.upper()} → *{v.severity.label.upper()}* · lag {count(v.total_lag)} · "
        f"{slack_escape(v.severity_reason)}"
    )


def _rank(label: str) -> int:
    return ["ok", "warn", "critical", "page"].index(label)


def incident_new_cause_reply(before: str, c: Cause, remedy: str | None) -> str:
    was = f" (was {before})" if before else ""
    return f":mag: New likely cause{was}: {slack_cause(c, remedy)}"


def incident_remediation_line(action: str, state: str, detail: str) -> str:
    return f"remediation *{slack_escape(action)}*: {state}" + (f" · {slack_text(detail)}" if detail else "")


def slack_time(epoch: float) -> str:
    """A time Slack shows in each reader's own time zone, with a UTC fallback for old clients."""
    import time

    fallback = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))
    return f"<!date^{int(epoch)}^{{date_short_pretty}} {{time}}|{fallback}>"


def state_lost() -> str:
    return (
        ":warning: lagbot lost its stored state (Redis came back empty). Incidents still open are reopened "
        "in new threads; earlier threads will not be updated, and remediation history before now is gone."
    )


def root_replaced(cluster: str, group: str) -> str:
    """`group` empty: a thread of no one group (an incident storm's summary, lagbot.service.storms)."""
    if not group:
        return ":recycle: This replaces the earlier storm summary, which was deleted or lost."
    return (
        f":recycle: This replaces the earlier message about `{slack_escape(group)}` ({slack_escape(cluster)}), "
        "which was deleted or lost; the thread continues here."
    )
