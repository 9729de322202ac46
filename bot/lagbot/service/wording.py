"""The wording of the running service: incidents, remediation runs, verification, leadership.

Tiny functions, one per message (see lagbot.core.messages for the shared ones and the number formats).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from lagbot.core.messages import behind, count, duration, slack_escape, slack_reason, slack_text, slack_user
from lagbot.service.approvals import Verdict


def silence_not_in_future(until: float, now: float) -> str:
    return f"a silence must end after now: until {until:.0f} is not after {now:.0f}"


def digest_upload_failed(channel: str, ts: str, problem: str) -> str:
    return f"digest posted to {channel} (ts {ts}) but its chart could not be uploaded: {problem}"


def approvers_unavailable(problem: str) -> str:
    return f"Cannot check who may approve right now ({problem}); nothing was run. Try again in a minute."


def approval_not_approver(rule: str, summary: str) -> str:
    return (
        f":no_entry: You are not an approver of policy rule `{slack_escape(rule)}`, so *{slack_text(summary)}* "
        "was not run. This refusal is in the audit trail."
    )


def approval_dry_run(user: str, summary: str) -> str:
    return (
        f":test_tube: Dry run: {slack_user(user)} approved *{slack_text(summary)}*; "
        "nothing was changed (policy dry-run)."
    )


def approval_recorded(user: str, have: int, need: int) -> str:
    return f":ballot_box_with_check: {slack_user(user)} approved ({have} of {need}): waiting for another approver."


def approval_refused(verdict: Verdict, state: str, detail: str) -> str:
    """Why an approval click ran nothing. `detail` is the cooldown left in ms for COOLDOWN."""
    match verdict:
        case Verdict.EXPIRED:
            why = "this proposal has expired: ask for a new one with `/lag remediate <group> <action>`"
        case Verdict.NOT_PROPOSED:
            why = f"this proposal is already {state or 'closed'}"
        case Verdict.AGAIN:
            why = "you already approved it: it needs a different second approver"
        case Verdict.REQUESTER:
            why = "you asked for it: two other people must approve"
        case Verdict.COOLDOWN:
            left = int(detail) / 1000 if detail.isdigit() else None
            why = f"it ran for this group recently: cooldown for another {duration(left)}"
        case Verdict.MISSING:
            why = "this proposal is unknown or too old"
        case Verdict.BUSY:
            why = "another remediation of this group is running; try again when it has finished"
        case Verdict.NOT_APPROVER:
            why = "you are not an approver of it"
        case Verdict.RUN | Verdict.RECORDED:
            why = verdict.value  # not a refusal: never asked for
    return f"Not run: {why}."


def approval_denied(user: str, summary: str, reason: str) -> str:
    return f":x: {slack_user(user)} denied *{slack_text(summary)}*: {slack_reason(reason)}"


def remediation_running(approvers: Sequence[str], summary: str) -> str:
    who = ", ".join(slack_user(u) if u != "lagbot" else "the policy (auto-approve)" for u in approvers)
    return f":gear: Approved by {who}: running *{slack_text(summary)}*"


def remediation_result(ok: bool, summary: str, detail: str) -> str:
    mark = ":white_check_mark:" if ok else ":x:"
    outcome = "done" if ok else "failed"
    return f"{mark} *{slack_text(summary)}* {outcome}: {slack_text(detail)}"


def remediation_crashed(action: str, exc: BaseException) -> str:
    return f"{action} stopped with an unexpected error ({type(exc).__name__}: {exc}); nothing more was done"


def remediation_cooling_down(action: str, left: float) -> str:
    return f"{action} ran for this group recently; it can be proposed again in {duration(left)}"


def verify_escalation(detail: str, mentions: str) -> str:
    """`mentions`: the approvers of the group's policy rule, as Slack mentions (may be empty)."""
    return f":rotating_light: {detail} {mentions}".rstrip()


def remediation_refused_by_evidence(action: str, reason: str, mentions: str) -> str:
    """An action the causes suggest, not offered because the live system shows it cannot help: `reason` is that
    evidence; `mentions`: the approvers of the group's policy rule (may be empty)."""
    return f":rotating_light: `{slack_escape(action)}` is not offered: {slack_text(reason)} {mentions}".rstrip()


def cause_with_pods(explanation: str, lines: Sequence[str]) -> str:
    """A cause's explanation with what its owners' pods show (lagbot.service.pod_causes); plain text: the cause is
    escaped where it is shown."""
    return f"{explanation}; owner pods: {'; '.join(lines)}" if lines else explanation


def incident_group_gone(group: str, cluster: str) -> str:
    return (
        f":wastebasket: `{slack_escape(group)}` is no longer on {slack_escape(cluster)} (deleted, its offsets expired, "
        "or no longer watched): this incident is closed."
    )


def remediations_offered() -> str:
    return ":wrench: A remediation can now be proposed for this incident:"


def restored(ok: bool, words: str) -> str:
    """`words`: the remediation's own (its `restored`), about what its run left to undo."""
    return f":arrows_counterclockwise: {slack_text(words)}" if ok else f":x: {slack_text(words)}"


def remediation_resolved() -> str:
    return "the incident resolved"


def remediation_heartbeat_lost(action: str, silent_for: float) -> str:
    return (
        f"interrupted: {action} stopped reporting (no heartbeat for {silent_for:.0f} s, its replica stopped); "
        "check the workload before trying again"
    )


def remediation_interrupted(action: str) -> str:
    return f"{action} did not report a result (its process stopped or it ran past its time limit); check the workload"


def proposal_settled(
    state: str,
    summary: str,
    approvers: Sequence[str],
    detail: str,
    denied_by: str | None,
    expired_at: float | None = None,
) -> str:
    """What replaces a proposal's buttons once it is no longer awaiting clicks (`expired_at`: when it expired)."""
    who = ", ".join(slack_user(u) if u != "lagbot" else "the policy (auto-approve)" for u in approvers) or "nobody"
    what = f"*{slack_text(summary)}*"
    if state == "running":
        return f":gear: {what}: approved by {who}, running."
    if state == "succeeded":
        return f":white_check_mark: {what}: approved by {who}, done: {slack_text(detail)}"
    if state == "failed":
        return f":x: {what}: approved by {who}, failed: {slack_text(detail)}"
    if state == "denied":
        return f":no_entry_sign: {what}: denied by {slack_user(denied_by or '')}: {slack_text(detail)}"
    when = f" at {utc_minute(expired_at)}" if expired_at is not None else ""
    return f":hourglass: {what}: expired{when}, nothing was run."


def utc_minute(at: float) -> str:
    """A time to the minute, in UTC: 2026-11-27 01:45 UTC."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at))


# --- recurring patterns (lagbot.service.patterns): plain text, no names in it ---

_WEEKDAYS = ("Mondays", "Tuesdays", "Wednesdays", "Thursdays", "Fridays", "Saturdays", "Sundays")


def clock(offset: float) -> str:
    """Seconds into a day as HH:MM."""
    minutes = round(offset / 60) % (24 * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _when(period_is_day: bool, offset: float) -> tuple[str, str, str]:
    """(most ..., of the last N ..., HH:MM) of a pattern's offset into its day or week."""
    if period_is_day:
        night = offset < 6 * 3600 or offset >= 20 * 3600
        return ("most nights" if night else "most days"), ("nights" if night else "days"), clock(offset)
    day = int(offset // 86_400) % 7
    return f"most {_WEEKDAYS[day]}", "weeks", clock(offset % 86_400)


def pattern_text(daily: bool, offset: float, peak: int, drains_in: float, seen: int, out_of: int) -> str:
    """'most nights from 02:00, peak ~40k, drains in ~20 min; 6 of the last 7 nights'"""
    most, unit, at = _when(daily, offset)
    return (
        f"{most} from {at}, peak ~{approx(peak)}, drains in ~{duration(drains_in)}; {seen} of the last {out_of} {unit}"
    )


def pattern_match_text(daily: bool, offset: float, drains_by: float, seen: int, out_of: int) -> str:
    """'as on 6 of the last 7 nights; usually drains by 02:20'"""
    _, unit, _ = _when(daily, offset)
    return f"as on {seen} of the last {out_of} {unit}; usually drains by {clock(drains_by % 86_400)}"


def pattern_window_hint(daily: bool, offset: float, drains_by: float) -> str:
    """The maintenance window it may deserve (never set by lagbot)."""
    most, _, at = _when(daily, offset)
    return f"a maintenance window for {most.removeprefix('most ')} {at}-{clock(drains_by % 86_400)} may fit it"


def approx(n: int) -> str:
    """40_213 -> '40k', 1_250_000 -> '1.2M', 950 -> '950'."""
    if abs(n) >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if abs(n) >= 1_000:
        return f"{round(n / 1_000)}k"
    return str(n)


# --- the history, the weekly report and the thresholds suggestion: plain text, names passed in already made safe
# for where they are shown (Slack escapes them, a terminal shows control characters escaped) ---


def report_title(days: float, shown: int, total: int) -> str:
    return f"Lag report of the last {duration(days)}: {shown} group(s) with something to say, of {total}, worst first"


def report_empty(days: float) -> str:
    return f"Lag report of the last {duration(days)}: no incident, no time in trouble, no remediation. Quiet."


def report_line(group: str, cluster: str, r: ReportFigures) -> str:
    """'billing (prod): 4 incidents (1 open), 10 min at WARN, 2 min CRITICAL+, resolved in 2 h on average;
    causes: slow_consumer x3, producer_burst x1; scale worked 2 of 3, restart worked 0 of 3; a human acted in 1'"""
    parts = [f"{group} ({cluster}): {r.incidents} incident(s)" + (f" ({r.open_now} open)" if r.open_now else "")]
    parts.append(f"{duration(r.warn_seconds)} at WARN, {duration(r.critical_seconds)} CRITICAL+")
    if r.unreadable_seconds:
        parts.append(f"{duration(r.unreadable_seconds)} unreadable")
    if r.mttr is not None:
        parts.append(f"resolved in {duration(r.mttr)} on average")
    line = ", ".join(parts)
    if r.causes:
        line += "; causes: " + ", ".join(f"{cause} x{n}" for cause, n in r.causes)
    if r.actions:
        line += "; " + ", ".join(
            f"{a.action} worked {a.worked} of {a.runs}" + (f" (did not: {a.did_not})" if a.did_not else "")
            for a in r.actions
        )
    if r.acted:
        line += f"; a human acted in {r.acted}"
    return line


class ReportFigures(Protocol):
    """What `report_line` reads of lagbot.service.report.GroupReport."""

    @property
    def incidents(self) -> int: ...
    @property
    def open_now(self) -> int: ...
    @property
    def warn_seconds(self) -> float: ...
    @property
    def critical_seconds(self) -> float: ...
    @property
    def unreadable_seconds(self) -> float: ...
    @property
    def mttr(self) -> float | None: ...
    @property
    def causes(self) -> tuple[tuple[str, int], ...]: ...
    @property
    def actions(self) -> Sequence[ActionFigures]: ...
    @property
    def acted(self) -> int: ...


class ActionFigures(Protocol):
    @property
    def action(self) -> str: ...
    @property
    def runs(self) -> int: ...
    @property
    def worked(self) -> int: ...
    @property
    def did_not(self) -> int: ...


def history_columns() -> list[str]:
    return ["day", "peak lag", "peak behind", "at WARN", "CRITICAL+", "unreadable", "incidents"]


def history_cells(day: str, peak_lag: int | None, peak_seconds: float | None, warn: float, critical: float,
                  unreadable: float, incidents: int) -> list[str]:  # fmt: skip
    def spent(seconds: float) -> str:
        return duration(seconds) if seconds else "-"

    return [day, count(peak_lag), behind(peak_seconds), spent(warn), spent(critical), spent(unreadable),
            str(incidents) if incidents else "-"]  # fmt: skip


def history_title(group: str, cluster: str, days: float, points: int) -> str:
    return f"History of {group} ({cluster}), last {duration(days)}: {points} stored point(s)"


def history_no_points(group: str, cluster: str) -> str:
    return f"No stored history for {group} ({cluster}) in that time: has the bot checked it yet?"


def history_patterns(lines: Sequence[str]) -> str:
    if not lines:
        return "Recurring patterns: none."
    return "Recurring patterns: " + "; ".join(lines) + " (named only: nothing is silenced)"


def suggestion_title(group: str, cluster: str, points: int, days: float) -> str:
    return (
        f"Thresholds for {group} ({cluster}), backtested on {points} stored point(s) over {duration(days)} "
        "(nothing is changed: review the YAML below)"
    )


def suggestion_no_proposal() -> str:
    return "No proposal: there is no healthy history to learn from yet (no stored point outside acted incidents)."


def suggestion_basis(healthy_points: int) -> str:
    return (
        f"Proposed from {healthy_points} healthy point(s) (outside the incidents a human acted on): "
        "the 99.9th percentile of lag in messages and in seconds, x1.5, rounded up"
    )


def suggestion_columns() -> list[str]:
    return ["", "current", "proposed"]


def level_text(messages_limit: int | None, seconds_limit: float | None, sustained_for: float, growing: bool) -> str:
    limits = [f"{count(messages_limit)} msg" if messages_limit is not None else "",
              f"{duration(seconds_limit)} behind" if seconds_limit is not None else ""]  # fmt: skip
    text = " or ".join(x for x in limits if x) or "no limit"
    if sustained_for:
        text += f" for {duration(sustained_for)}"
    return text + (", growing" if growing else "")


def suggestion_rows(
    current: tuple[str, int, int, int, int, str], proposed: tuple[str, int, int, int, int, str]
) -> list[list[str]]:
    """Rows of (level, would open, also opened, missed, missed that a human acted on, start vs actual)."""
    names = ["WARN level", "incidents it would open", "of the actual ones, opened too", "actual ones it misses",
             "missed that a human acted on", "its start vs the actual start"]  # fmt: skip
    return [[name, str(a), str(b)] for name, a, b in zip(names, current, proposed, strict=True)]


def start_shift(deltas: Sequence[float]) -> str:
    """How the replay's starts compare with the actual ones: 'same', '4 min earlier (median)', '-'."""
    if not deltas:
        return "-"
    ordered = sorted(deltas)
    middle = ordered[(len(ordered) - 1) // 2]
    if abs(middle) < 1:
        return "same (median)"
    return f"{duration(abs(middle))} {'later' if middle > 0 else 'earlier'} (median)"


def columns(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as left-aligned columns, two spaces apart (a terminal, a Slack code block)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def report_chart_title() -> str:
    return "Lag of the worst groups over the month (each day's peak)"


def suggestion_never_applied() -> str:
    return "lagbot changes no setting: review the YAML, then put it in the policy file yourself."
