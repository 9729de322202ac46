"""Block Kit for a group's verdict: the incident's root message and its thread reply.

Pure functions from the engine's `GroupVerdict` to (fallback text, blocks), built with slack_sdk's
models. Every message stays within Slack's limits for any number of partitions and causes: at most
50 blocks, 3,000 characters of section text, 150 of header text, one table of at most 100 rows and
20 cells. Wording lives in lagbot.slack.wording.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ConfirmObject,
    ContextBlock,
    DividerBlock,
    InputBlock,
    PlainTextInputElement,
    SectionBlock,
    TableBlock,
)
from slack_sdk.models.blocks.basic_components import MarkdownTextObject, PlainTextObject

from lagbot.core import messages
from lagbot.core.config import IncidentConfig
from lagbot.core.model import Cause, GroupVerdict, PartitionVerdict
from lagbot.service.approvals import Proposal
from lagbot.service.incidents import Change, Incident
from lagbot.service.remediation_state import RunState
from lagbot.service.remedies import remedy
from lagbot.service.storms import StormSummary
from lagbot.slack import wording

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3_000
MAX_TABLE_ROWS = 100
MAX_CAUSES_SHOWN = 10
TABLE_COLUMNS = ("partition", "committed", "log-end", "lag", "lag s", "owner", "status")

Rendered = tuple[str, list[dict[str, Any]]]
"""(fallback text, blocks as JSON): what chat.postMessage and chat.update take."""


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def lagging_first(verdict: GroupVerdict) -> list[PartitionVerdict]:
    """Partitions by lag, highest first; unknown lag after known, then by topic and partition."""
    return sorted(
        verdict.partitions,
        key=lambda p: (p.lag is None, -(p.lag or 0), p.topic, p.partition),
    )


def root_message(verdict: GroupVerdict) -> Rendered:
    """The incident's root message: one headline and one line of context."""
    worst = lagging_first(verdict)[0] if verdict.partitions else None
    headline = clip(wording.slack_headline(verdict), MAX_SECTION_TEXT)
    context = clip(wording.slack_root_context(verdict, worst), MAX_SECTION_TEXT)
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=headline)),
        ContextBlock(elements=[MarkdownTextObject(text=context)]),
    ]
    return wording.slack_root_fallback(verdict), [b.to_dict() for b in blocks]


def table_rows(verdict: GroupVerdict) -> list[list[str]]:
    """The table's body rows (no header): lagging first, at most 99 plus one summary row."""
    ordered = lagging_first(verdict)
    limit = MAX_TABLE_ROWS - 1  # one row is the header
    if len(ordered) <= limit:
        return [_row(p) for p in ordered]
    shown, rest = ordered[: limit - 1], ordered[limit - 1 :]
    rest_lag = sum(p.lag or 0 for p in rest)
    return [_row(p) for p in shown] + [wording.slack_table_summary_row(len(rest), rest_lag, len(TABLE_COLUMNS))]


def _row(p: PartitionVerdict) -> list[str]:
    owner = messages.owner(p.owner.client_id, p.owner.host, p.owner.member_id) if p.owner else "-"
    return [
        f"{p.topic}/{p.partition}",
        "-" if p.committed is None else str(p.committed),
        str(p.log_end),
        "-" if p.lag is None else str(p.lag),
        messages.lag_seconds_cell(p.lag_seconds, p.lag_seconds_lower_bound),
        owner,
        p.status.name,
    ]


def partition_table(verdict: GroupVerdict) -> TableBlock:
    rows = [list(TABLE_COLUMNS), *table_rows(verdict)]
    cells = [[{"type": "raw_text", "text": messages.visible(cell)} for cell in row] for row in rows]
    right = {"align": "right"}
    settings: list[dict[str, Any] | None] = [None, right, right, right, right, None, None]
    return TableBlock(rows=cells, column_settings=settings)


def table_fallback(verdict: GroupVerdict, limit: int = 3_900) -> str:
    """The table as monospaced text, for clients without table support (the message's `text`)."""
    rows = [list(TABLE_COLUMNS), *([messages.slack_escape(cell) for cell in row] for row in table_rows(verdict))]
    widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    body = "\n".join(lines)
    return "```\n" + clip(body, limit - 8) + "\n```"


def cause_blocks(causes: tuple[Cause, ...]) -> list[Block]:
    shown = causes[:MAX_CAUSES_SHOWN]
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=clip(wording.slack_cause(c, remedy(c)), MAX_SECTION_TEXT)))
        for c in shown
    ]
    if len(causes) > len(shown):
        blocks.append(
            ContextBlock(elements=[MarkdownTextObject(text=wording.slack_more_causes(len(causes) - len(shown)))])
        )
    return blocks


def thread_reply(verdict: GroupVerdict) -> Rendered:
    """The first reply of an incident's thread: the per-partition table, then the likely causes."""
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=clip(wording.slack_table_title(verdict), MAX_SECTION_TEXT))),
        partition_table(verdict),
    ]
    if verdict.causes:
        blocks += [DividerBlock(), *cause_blocks(verdict.causes)]
    else:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=wording.slack_no_causes())]))
    assert len(blocks) <= MAX_BLOCKS
    return wording.slack_thread_fallback(verdict, table_fallback(verdict)), [b.to_dict() for b in blocks]


# ---------------------------------------------------------------------------------------------------
# Incidents: the root message as it evolves, and the replies on meaningful changes
# ---------------------------------------------------------------------------------------------------


def _context(*lines: str) -> ContextBlock:
    return ContextBlock(elements=[MarkdownTextObject(text=clip(line, MAX_SECTION_TEXT)) for line in lines if line])


def remediation_line(incident: Incident) -> str:
    """The root's line about the incident's latest remediation ('' when none).

    A verification that ended resolved is said as such, without its figures: they were the lag of the check that
    judged it, and the root outlives that check (its thread reply keeps them). The root's own lag is the check's.
    """
    remediation = incident.remediation
    if remediation is None:
        return ""
    detail = "" if remediation.state == RunState.RESOLVED else remediation.detail
    return wording.incident_remediation_line(remediation.action, remediation.state, detail)


def incident_root(incident: Incident, verdict: GroupVerdict, config: IncidentConfig, now: float) -> Rendered:
    """The root message of an incident: the verdict's headline while open, green once resolved (with the lag of the
    check that resolved it: the root is not edited after that)."""
    extra = remediation_line(incident)
    if not incident.is_open:
        lasted = incident.duration(now)
        headline = wording.incident_resolved_headline(
            incident.group, incident.cluster, lasted, incident.peak_lag, incident.peak_severity.label, verdict.total_lag
        )
        blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=clip(headline, MAX_SECTION_TEXT)))]
        if extra:
            blocks.append(_context(extra))
        fallback = messages.incident_resolved_fallback(incident.group, incident.cluster, lasted, incident.peak_lag)
        return fallback, [b.to_dict() for b in blocks]
    fallback, root = root_message(verdict)
    status = wording.incident_open_context(incident.duration(now), incident.peak_lag, incident.reopened)
    recovering = (
        wording.incident_recovering(now - incident.below_since, config.resolve_after)
        if incident.below_since is not None
        else ""
    )
    return fallback, [*root, _context(status, recovering, extra).to_dict()]


def change_reply(change: Change, detail: str, incident: Incident, verdict: GroupVerdict, now: float) -> Rendered:
    """The thread reply for a meaningful change of an incident."""
    if change is Change.OPENED:
        return thread_reply(verdict)
    if change is Change.REOPENED:
        _, blocks = thread_reply(verdict)
        line = clip(wording.incident_reopened_reply(verdict), MAX_SECTION_TEXT)
        head = SectionBlock(text=MarkdownTextObject(text=line))
        return line, [head.to_dict(), *blocks[: MAX_BLOCKS - 1]]
    if change in (Change.SEVERITY_UP, Change.SEVERITY_DOWN):
        line = wording.incident_severity_reply(detail, verdict)
    elif change is Change.NEW_CAUSE and verdict.causes:
        line = wording.incident_new_cause_reply(detail, verdict.causes[0], remedy(verdict.causes[0]))
    elif change is Change.RESOLVED:
        line = wording.incident_resolved_reply(incident.duration(now), incident.peak_lag, verdict.total_lag)
    else:
        line = detail
    block = SectionBlock(text=MarkdownTextObject(text=clip(line, MAX_SECTION_TEXT)))
    return clip(line, 3_000), [block.to_dict()]


# ---------------------------------------------------------------------------------------------------
# Remediation proposals: buttons that carry only a proposal id, a confirm dialog for risky ones
# ---------------------------------------------------------------------------------------------------

MAX_BUTTON_TEXT = 75
MAX_ACTIONS = 25
DENY_CALLBACK = "deny_reason"


def proposal_blocks(proposals: list[Proposal], *, now: float) -> list[dict[str, Any]]:
    """A title, one line per plan, and one actions block: approve (with a confirm when risky) and deny."""
    if not proposals:
        return []
    shown = proposals[: MAX_ACTIONS // 2]
    expires_in = min(p.expires_at for p in shown) - now
    lines = [wording.proposal_line(p.plan.summary, p.plan.steps, p.approvals_required, p.plan.risk) for p in shown]
    text = clip("\n".join([wording.proposals_title(expires_in), *lines]), MAX_SECTION_TEXT)
    elements = []
    for p in shown:
        elements.append(_approve_button(p))
        elements.append(ButtonElement(text=wording.deny_button(), action_id=f"deny:{p.id}", value=p.id))
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=text)), ActionsBlock(elements=elements)]
    return [b.to_dict() for b in blocks]


def _approve_button(p: Proposal) -> ButtonElement:
    risky = p.plan.risk != "low" or p.plan.confirm is not None
    confirm = (
        ConfirmObject(
            title=wording.proposal_confirm_title(),
            text=clip(wording.proposal_confirm_text(p.plan.summary, p.plan.confirm), 300),
            confirm="Approve",
            deny="Cancel",
            style="danger" if p.plan.risk == "high" else None,
        )
        if risky
        else None
    )
    return ButtonElement(
        text=clip(p.plan.summary, MAX_BUTTON_TEXT),
        action_id=f"approve:{p.id}",
        value=p.id,
        style="danger" if p.plan.risk == "high" else "primary",
        confirm=confirm,
    )


def settled_blocks(blocks: list[dict[str, Any]], proposal_id: str, line: str) -> list[dict[str, Any]]:
    """A message's blocks with the buttons of one proposal removed (an actions block left empty goes too)
    and a line saying who approved it and how it ended."""
    kept: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "actions":
            elements = [e for e in block.get("elements", []) if str(e.get("action_id", "")).split(":", 1)[-1]
                        != proposal_id]  # fmt: skip
            if not elements:
                continue
            block = {**block, "elements": elements}
        kept.append(block)
    context = ContextBlock(elements=[MarkdownTextObject(text=clip(line, MAX_SECTION_TEXT))]).to_dict()
    return [*kept, context][-MAX_BLOCKS:]


def deny_modal(proposal: Proposal) -> dict[str, Any]:
    """The modal asking for a reason to deny; its private_metadata is the proposal id."""
    reason = InputBlock(
        block_id="reason",
        label=PlainTextObject(text=clip(wording.deny_modal_label(proposal.plan.summary), 2_000)),
        element=PlainTextInputElement(action_id="text", multiline=True, max_length=500),
    )
    return {
        "type": "modal",
        "callback_id": DENY_CALLBACK,
        "private_metadata": proposal.id,
        "title": {"type": "plain_text", "text": wording.deny_modal_title()},
        "submit": {"type": "plain_text", "text": "Deny"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [reason.to_dict()],
    }


def with_blocks(rendered: Rendered, extra: list[dict[str, Any]]) -> Rendered:
    """A message with more blocks appended, never beyond Slack's 50."""
    text, blocks = rendered
    return text, (blocks + extra)[:MAX_BLOCKS] if extra else blocks


def storm_summary(summary: StormSummary) -> Rendered:
    """A storm's one summary message: how many incidents, the worst groups first, how to narrow the watch."""
    storm, ended = summary.storm, not summary.storm.is_on
    headline = wording.storm_headline(storm.folded, summary.still_open, summary.threshold, summary.window, ended)
    lines = _worst_lines(summary)
    since = wording.storm_since(datetime.fromtimestamp(storm.started_at, UTC).strftime("%a %H:%M"))
    more = len(summary.members) - len(lines)
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=clip(headline, MAX_SECTION_TEXT)))]
    if lines:
        title = wording.storm_worst_title(len(lines), len(summary.members))
        blocks.append(SectionBlock(text=MarkdownTextObject(text="\n".join([title, *lines]))))
    blocks.append(_context(wording.storm_more(more) if more else "", since))
    advice = wording.storm_advice(summary.clusters, re.escape(summary.shared_prefix))
    blocks.append(SectionBlock(text=MarkdownTextObject(text=clip(advice, MAX_SECTION_TEXT))))
    fallback = wording.storm_fallback(storm.folded, summary.still_open, ended)
    return fallback, [b.to_dict() for b in blocks]


def _worst_lines(summary: StormSummary) -> list[str]:
    """One line per group, worst first, as many as `summary.worst` and one section's text allow."""
    lines: list[str] = []
    used = len(wording.storm_worst_title(summary.worst, len(summary.members))) + 1
    for m in summary.members[: summary.worst]:
        line = wording.storm_member(m.cluster, m.group, m.severity, m.peak_lag, m.open)
        if used + len(line) + 1 > MAX_SECTION_TEXT:
            break
        lines.append(line)
        used += len(line) + 1
    return lines
