"""The words of a remediation's proposal in a thread: its plans and buttons, the confirm dialog, the deny modal,
and the answers to a click (lagbot.slack.render, lagbot.slack.app).
"""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.core.messages import (
    duration,
    slack_escape,
    slack_text,
)


def proposals_title(expires_in: float) -> str:
    return f"*Remediations the policy allows* (proposals expire in {duration(expires_in)}):"


def proposal_line(summary: str, steps: Sequence[str], approvals: int, risk: str) -> str:
    people = "two approvers" if approvals >= 2 else "one approver"
    return f"• *{slack_text(summary)}* ({risk} risk, {people}): " + slack_escape("; ".join(steps))


def proposal_confirm_title() -> str:
    return "Run this remediation?"


def proposal_confirm_text(summary: str, confirm: str | None) -> str:
    return confirm or f"lagbot will {summary[:1].lower()}{summary[1:]}. This is recorded in the audit trail."


def deny_button() -> str:
    return "Deny…"


def deny_modal_title() -> str:
    return "Deny remediation"


def deny_modal_label(summary: str) -> str:
    return f"Why deny “{summary}”?"


def click_failed(reference: str) -> str:
    return f":warning: Something went wrong with this click; nothing more was done. It is logged as `{reference}`."


def click_rate_limited(retry_in: float) -> str:
    return f":hourglass: You have clicked a lot in a short time; please try again in {duration(max(retry_in, 1.0))}."


def deny_reason_required() -> str:
    return "Say why you deny it: the reason goes to the thread and the audit trail."
