"""The wording of the running service: incidents, remediation runs, verification, leadership.

Tiny functions, one per message (see lagbot.core.messages for the shared ones and the number formats).
"""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.core.messages import duration, slack_escape, slack_user
from lagbot.service.approvals import Verdict


def silence_not_in_future(until: float, now: float) -> str:
    return f"a silence must end after now: until {until:.0f} is not after {now:.0f}"


def digest_upload_failed(channel: str, ts: str, problem: str) -> str:
    return f"digest posted to {channel} (ts {ts}) but its chart could not be uploaded: {problem}"


def approvers_unavailable(problem: str) -> str:
    return f"Cannot check who may approve right now ({problem}); nothing was run. Try again in a minute."


def approval_not_approver(rule: str, summary: str) -> str:
    return (
        f":no_entry: You are not an approver of policy rule `{slack_escape(rule)}`, so *{slack_escape(summary)}* "
        "was not run. This refusal is in the audit trail."
    )


def approval_dry_run(user: str, summary: str) -> str:
    return (
        f":test_tube: Dry run: {slack_user(user)} approved *{slack_escape(summary)}*; "
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
    return f":x: {slack_user(user)} denied *{slack_escape(summary)}*: {slack_escape(reason)}"


def remediation_running(approvers: Sequence[str], summary: str) -> str:
    who = ", ".join(slack_user(u) if u != "lagbot" else "the policy (auto-approve)" for u in approvers)
    return f":gear: Approved by {who}: running *{slack_escape(summary)}*"


def remediation_result(ok: bool, summary: str, detail: str) -> str:
    mark = ":white_check_mark:" if ok else ":x:"
    outcome = "done" if ok else "failed"
    return f"{mark} *{slack_escape(summary)}* {outcome}: {slack_escape(detail)}"


def remediation_crashed(action: str, exc: BaseException) -> str:
    return f"{action} stopped with an unexpected error ({type(exc).__name__}: {exc}); nothing more was done"


def remediation_cooling_down(action: str, left: float) -> str:
    return f"{action} ran for this group recently; it can be proposed again in {duration(left)}"


def verify_escalation(detail: str, mentions: str) -> str:
    """`mentions`: the approvers of the group's policy rule, as Slack mentions (may be empty)."""
    return f":rotating_light: {detail} {mentions}".rstrip()


def remediations_offered() -> str:
    return ":wrench: A remediation can now be proposed for this incident:"


def restored(ok: bool, words: str) -> str:
    """`words`: the remediation's own (its `restored`), about what its run left to undo."""
    return f":arrows_counterclockwise: {words}" if ok else f":x: {words}"


def remediation_resolved() -> str:
    return "the incident resolved"


def root_replaced(cluster: str, group: str) -> str:
    return (
        f":recycle: This replaces the earlier message about `{slack_escape(group)}` ({slack_escape(cluster)}), "
        "which was deleted or lost; the thread continues here."
    )


def remediation_heartbeat_lost(action: str, silent_for: float) -> str:
    return (
        f"interrupted: {action} stopped reporting (no heartbeat for {silent_for:.0f} s, its replica stopped); "
        "check the workload before trying again"
    )


def remediation_interrupted(action: str) -> str:
    return f"{action} did not report a result (its process stopped or it ran past its time limit); check the workload"


def proposal_settled(state: str, summary: str, approvers: Sequence[str], detail: str, denied_by: str | None) -> str:
    """What replaces a proposal's buttons once it is no longer awaiting clicks."""
    who = ", ".join(slack_user(u) if u != "lagbot" else "the policy (auto-approve)" for u in approvers) or "nobody"
    what = f"*{slack_escape(summary)}*"
    if state == "running":
        return f":gear: {what}: approved by {who}, running."
    if state == "succeeded":
        return f":white_check_mark: {what}: approved by {who}, done: {slack_escape(detail)}"
    if state == "failed":
        return f":x: {what}: approved by {who}, failed: {slack_escape(detail)}"
    if state == "denied":
        return f":no_entry_sign: {what}: denied by {slack_user(denied_by or '')}: {slack_escape(detail)}"
    return f":hourglass: {what}: expired, nothing was run."
