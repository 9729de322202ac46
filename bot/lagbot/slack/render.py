"""Block Kit for a group's verdict: the incident's root message and its thread reply.

Pure functions from the engine's `GroupVerdict` to a `SlackMessage` (fallback text, blocks), built with
slack_sdk's models. Every message stays within Slack's limits for any number of partitions and causes: at most
50 blocks, 3,000 characters of section text, 150 of header text, one table of at most 100 rows and
20 cells. Wording lives in lagbot.slack.wording (incidents, proposals, storms).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import cast

from pydantic import JsonValue
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
from slack_sdk.models.blocks.basic_components import (
    MarkdownTextObject,
    PlainTextObject,
    RawTextObject,
    TableBlockColumnSettings,
)
from slack_sdk.models.views import View

from lagbot.core import messages
from lagbot.core.config import IncidentConfig
from lagbot.core.model import Cause, GroupVerdict, PartitionVerdict
from lagbot.service.approvals import Proposal
from lagbot.service.incidents import Change, Incident
from lagbot.service.remediation_state import RunState
from lagbot.service.remedies import remedy
from lagbot.service.slack_message import Block as JsonBlock
from lagbot.service.slack_message import SlackMessage
from lagbot.service.storms import StormSummary
from lagbot.slack.wording import incidents as incident_wording
from lagbot.slack.wording import proposals as proposal_wording
from lagbot.slack.wording import storms as storm_wording

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3_000
MAX_TABLE_ROWS = 100
MAX_CAUSES_SHOWN = 10
TABLE_COLUMNS = ("partition", "committed", "log-end", "lag", "lag s", "owner", "status")


def as_json(blocks: Iterable[Block]) -> tuple[JsonBlock, ...]:
    """slack_sdk's blocks as the JSON the service holds and Slack takes."""
    return tuple(JsonBlock(b.to_dict()) for b in blocks)


def message(text: str, blocks: Iterable[Block]) -> SlackMessage:
    """A message of fallback `text` and slack_sdk's `blocks`."""
    return SlackMessage(text, as_json(blocks))


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def lagging_first(verdict: GroupVerdict) -> list[PartitionVerdict]:
    """Partitions by lag, highest first; unknown lag after known, then by topic and partition."""
    return sorted(
        verdict.partitions,
        key=lambda p: (p.lag is None, -(p.lag or 0), p.topic, p.partition),
    )


def root_message(verdict: GroupVerdict) -> SlackMessage:
    """The incident's root message: one headline and one line of context."""
    worst = lagging_first(verdict)[0] if verdict.partitions else None
    headline = clip(incident_wording.slack_headline(verdict), MAX_SECTION_TEXT)
    context = clip(incident_wording.slack_root_context(verdict, worst), MAX_SECTION_TEXT)
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=headline)),
        ContextBlock(elements=[MarkdownTextObject(text=context)]),
    ]
    return message(incident_wording.slack_root_fallback(verdict), blocks)


def table_rows(verdict: GroupVerdict) -> list[list[str]]:
    """The table's body rows (no header): lagging first, at most 99 plus one summary row."""
    ordered = lagging_first(verdict)
    limit = MAX_TABLE_ROWS - 1  # one row is the header
    if len(ordered) <= limit:
        return [_row(p) for p in ordered]
    shown, rest = ordered[: limit - 1], ordered[limit - 1 :]
    rest_lag = sum(p.lag or 0 for p in rest)
    return [_row(p) for p in shown] + [
        incident_wording.slack_table_summary_row(len(rest), rest_lag, len(TABLE_COLUMNS))
    ]


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


def raw_cell(text: str) -> RawTextObject:
    """A table cell shown as it is (a name's mrkdwn or mentions do nothing): slack_sdk's RawTextObject. Slack refuses
    a raw_text of no text (at least one character), so an empty one shows the empty cell's mark."""
    return RawTextObject(text=text or incident_wording.EMPTY_CELL)


def partition_table(verdict: GroupVerdict) -> TableBlock:
    """The partitions as a table of raw_text cells, the numbers right-aligned."""
    rows = [list(TABLE_COLUMNS), *table_rows(verdict)]
    cells = [[raw_cell(messages.visible(cell)) for cell in row] for row in rows]
    right = TableBlockColumnSettings(align="right")
    settings: list[TableBlockColumnSettings | None] = [None, right, right, right, right, None, None]
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
        SectionBlock(text=MarkdownTextObject(text=clip(incident_wording.slack_cause(c, remedy(c)), MAX_SECTION_TEXT)))
        for c in shown
    ]
    if len(causes) > len(shown):
        blocks.append(
            ContextBlock(
                elements=[MarkdownTextObject(text=incident_wording.slack_more_causes(len(causes) - len(shown)))]
            )
        )
    return blocks


def thread_reply(verdict: GroupVerdict) -> SlackMessage:
    """The first reply of an incident's thread: the per-partition table, then the likely causes."""
    blocks: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=clip(incident_wording.slack_table_title(verdict), MAX_SECTION_TEXT))),
        partition_table(verdict),
    ]
    if verdict.causes:
        blocks += [DividerBlock(), *cause_blocks(verdict.causes)]
    else:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=incident_wording.slack_no_causes())]))
    assert len(blocks) <= MAX_BLOCKS
    return message(incident_wording.slack_thread_fallback(verdict, table_fallback(verdict)), blocks)


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
    return incident_wording.incident_remediation_line(remediation.action, remediation.state, detail)


def incident_root(incident: Incident, verdict: GroupVerdict, config: IncidentConfig, now: float) -> SlackMessage:
    """The root message of an incident: the verdict's headline while open, green once resolved (with the lag of the
    check that resolved it: the root is not edited after that)."""
    extra = remediation_line(incident)
    if not incident.is_open:
        lasted = incident.duration(now)
        headline = incident_wording.incident_resolved_headline(
            incident.group, incident.cluster, lasted, incident.peak_lag, incident.peak_severity.label, verdict.total_lag
        )
        blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=clip(headline, MAX_SECTION_TEXT)))]
        if extra:
            blocks.append(_context(extra))
        fallback = messages.incident_resolved_fallback(incident.group, incident.cluster, lasted, incident.peak_lag)
        return message(fallback, blocks)
    root = root_message(verdict)
    status = incident_wording.incident_open_context(incident.duration(now), incident.peak_lag, incident.reopened)
    recovering = (
        incident_wording.incident_recovering(now - incident.below_since, config.resolve_after)
        if incident.below_since is not None
        else ""
    )
    return SlackMessage(root.text, (*root.blocks, *as_json([_context(status, recovering, extra)])))


def change_reply(change: Change, detail: str, incident: Incident, verdict: GroupVerdict, now: float) -> SlackMessage:
    """The thread reply for a meaningful change of an incident."""
    if change is Change.OPENED:
        return thread_reply(verdict)
    if change is Change.REOPENED:
        blocks = thread_reply(verdict).blocks
        line = clip(incident_wording.incident_reopened_reply(verdict), MAX_SECTION_TEXT)
        head = SectionBlock(text=MarkdownTextObject(text=line))
        return SlackMessage(line, (*as_json([head]), *blocks[: MAX_BLOCKS - 1]))
    if change in (Change.SEVERITY_UP, Change.SEVERITY_DOWN):
        line = incident_wording.incident_severity_reply(detail, verdict)
    elif change is Change.NEW_CAUSE and verdict.causes:
        line = incident_wording.incident_new_cause_reply(detail, verdict.causes[0], remedy(verdict.causes[0]))
    elif change is Change.RESOLVED:
        line = incident_wording.incident_resolved_reply(incident.duration(now), incident.peak_lag, verdict.total_lag)
    else:
        line = detail
    block = SectionBlock(text=MarkdownTextObject(text=clip(line, MAX_SECTION_TEXT)))
    return message(clip(line, 3_000), [block])


# ---------------------------------------------------------------------------------------------------
# Remediation proposals: buttons that carry only a proposal id, a confirm dialog for risky ones
# ---------------------------------------------------------------------------------------------------

MAX_BUTTON_TEXT = 75
MAX_ACTIONS = 25
DENY_CALLBACK = "deny_reason"


def proposal_blocks(proposals: list[Proposal], *, now: float) -> tuple[JsonBlock, ...]:
    """A title, one line per plan, and one actions block: approve (with a confirm when risky) and deny."""
    if not proposals:
        return ()
    shown = proposals[: MAX_ACTIONS // 2]
    expires_in = min(p.expires_at for p in shown) - now
    lines = [
        proposal_wording.proposal_line(p.plan.summary, p.plan.steps, p.approvals_required, p.plan.risk) for p in shown
    ]
    text = clip("\n".join([proposal_wording.proposals_title(expires_in), *lines]), MAX_SECTION_TEXT)
    elements = []
    for p in shown:
        elements.append(_approve_button(p))
        elements.append(ButtonElement(text=proposal_wording.deny_button(), action_id=f"deny:{p.id}", value=p.id))
    return as_json([SectionBlock(text=MarkdownTextObject(text=text)), ActionsBlock(elements=elements)])


def _approve_button(p: Proposal) -> ButtonElement:
    risky = p.plan.risk != "low" or p.plan.confirm is not None
    confirm = (
        ConfirmObject(
            title=proposal_wording.proposal_confirm_title(),
            text=clip(proposal_wording.proposal_confirm_text(p.plan.summary, p.plan.confirm), 300),
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


def settled_blocks(blocks: Sequence[Mapping[str, object]], proposal_id: str, line: str) -> tuple[JsonBlock, ...]:
    """A message's blocks with the buttons of one proposal removed (an actions block left empty goes too)
    and a line saying who approved it and how it ended. `blocks`: as lagbot sent them, or as a click carries them."""
    kept: list[JsonBlock] = []
    for block in blocks:
        if block.get("type") == "actions":
            listed = block.get("elements")
            elements = [e for e in listed if not _button_of(e, proposal_id)] if isinstance(listed, list) else []
            if not elements:
                continue
            block = {**block, "elements": elements}
        kept.append(JsonBlock(cast("dict[str, JsonValue]", dict(block))))  # Slack's JSON, as it came
    context = ContextBlock(elements=[MarkdownTextObject(text=clip(line, MAX_SECTION_TEXT))])
    return (*kept, *as_json([context]))[-MAX_BLOCKS:]


def _button_of(element: object, proposal_id: str) -> bool:
    """Whether a block element is one of the proposal's buttons (its action id is `<verb>:<proposal id>`)."""
    return isinstance(element, dict) and str(element.get("action_id", "")).split(":", 1)[-1] == proposal_id


def settled(shown: SlackMessage, proposal_id: str, line: str) -> SlackMessage:
    """The message without the proposal's buttons and with the line that says how it ended (`settled_blocks`)."""
    return SlackMessage(shown.text, settled_blocks(shown.blocks, proposal_id, line))


def deny_modal(proposal: Proposal, metadata: str | None = None) -> View:
    """The modal asking for a reason to deny; its private_metadata is `metadata` (lagbot.slack.app's, which says
    where the clicked message is), else the proposal id."""
    reason = InputBlock(
        block_id="reason",
        label=PlainTextObject(text=clip(proposal_wording.deny_modal_label(proposal.plan.summary), 2_000)),
        element=PlainTextInputElement(action_id="text", multiline=True, max_length=500),
    )
    return View(
        type="modal",
        callback_id=DENY_CALLBACK,
        private_metadata=proposal.id if metadata is None else metadata,
        title=PlainTextObject(text=proposal_wording.deny_modal_title()),
        submit=PlainTextObject(text="Deny"),
        close=PlainTextObject(text="Cancel"),
        blocks=[reason],
    )


def with_blocks(shown: SlackMessage, extra: Sequence[JsonBlock]) -> SlackMessage:
    """A message with more blocks appended, never beyond Slack's 50."""
    return SlackMessage(shown.text, (*shown.blocks, *extra)[:MAX_BLOCKS]) if extra else shown


def replaced_root(shown: SlackMessage, cluster: str, group: str) -> SlackMessage:
    """The root that replaces a lost one: the note that says so, above the newest root's text and blocks."""
    note = incident_wording.root_replaced(cluster, group)
    blocks = (*as_json([ContextBlock(elements=[MarkdownTextObject(text=note)])]), *shown.blocks)
    return SlackMessage(f"{note}\n{shown.text}".strip(), blocks[:MAX_BLOCKS])


def storm_summary(summary: StormSummary) -> SlackMessage:
    """A storm's one summary message: how many incidents, the worst groups first, how to narrow the watch."""
    storm, ended = summary.storm, not summary.storm.is_on
    headline = storm_wording.storm_headline(storm.folded, summary.still_open, summary.threshold, summary.window, ended)
    lines = _worst_lines(summary)
    since = storm_wording.storm_since(datetime.fromtimestamp(storm.started_at, UTC).strftime("%a %H:%M"))
    more = len(summary.members) - len(lines)
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=clip(headline, MAX_SECTION_TEXT)))]
    if lines:
        title = storm_wording.storm_worst_title(len(lines), len(summary.members))
        blocks.append(SectionBlock(text=MarkdownTextObject(text="\n".join([title, *lines]))))
    blocks.append(_context(storm_wording.storm_more(more) if more else "", since))
    advice = storm_wording.storm_advice(summary.clusters, re.escape(summary.shared_prefix))
    blocks.append(SectionBlock(text=MarkdownTextObject(text=clip(advice, MAX_SECTION_TEXT))))
    fallback = storm_wording.storm_fallback(storm.folded, summary.still_open, ended)
    return message(fallback, blocks)


def _worst_lines(summary: StormSummary) -> list[str]:
    """One line per group, worst first, as many as `summary.worst` and one section's text allow."""
    lines: list[str] = []
    used = len(storm_wording.storm_worst_title(summary.worst, len(summary.members))) + 1
    for m in summary.members[: summary.worst]:
        line = storm_wording.storm_member(m.cluster, m.group, m.severity, m.peak_lag, m.open)
        if used + len(line) + 1 > MAX_SECTION_TEXT:
            break
        lines.append(line)
        used += len(line) + 1
    return lines
