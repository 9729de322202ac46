"""The replies to `/lag remediate` and `/lag audit`: proposals with their buttons, the group's audit trail."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from lagbot.core import messages
from lagbot.core.model import GroupVerdict
from lagbot.remediations import registry
from lagbot.remediations.base import ArgsError
from lagbot.service.bot import Bot
from lagbot.service.remediate import Remediator
from lagbot.slack import render
from lagbot.slack.commands import Reply, text_reply
from lagbot.slack.wording import commands as wording


def remediate_reply(
    remediator: Remediator, verdict: GroupVerdict, action: str, user: str, args: Sequence[str], *, now: float
) -> Reply:
    """Propose `action` for the group on a user's request: buttons for everyone in the channel."""
    try:
        given = remediate_args(action, args)
    except ValueError as exc:
        return text_reply(str(exc))
    incident = remediator.bot.incidents.get(verdict.cluster, verdict.group)
    # A thread to speak in: an open incident's own (one folded into a storm summary has none: answered here only)
    live = incident if incident is not None and incident.is_open and incident.storm is None else None
    proposals, skipped = remediator.propose(
        verdict, now=now, incident=live, actions=[action], requested_by=user, given=given
    )
    if not proposals:
        return text_reply("\n".join(skipped) or messages.remediation_not_offered(action, "no plan"))
    blocks = render.proposal_blocks(proposals, now=now)
    return Reply(
        text=proposals[0].plan.summary, blocks=list(blocks), public=True, proposals=tuple(p.id for p in proposals)
    )


def remediate_args(action: str, args: Sequence[str]) -> dict[str, Any]:
    """The parameters a user gave after the action, as the remediation's own grammar reads them.

    Raises ValueError with the usage when they do not parse.
    """
    if action not in registry.names():  # refused when proposed, by name; only its arguments are judged here
        if args:
            raise ValueError(wording.remediate_usage(action, ""))
        return {}
    remediation = registry.get(action)
    try:
        return remediation.parse_args(args)
    except ArgsError:
        raise ValueError(wording.remediate_usage(action, remediation.args_usage)) from None


def audit_reply(bot: Bot, cluster: str, group: str, *, n: int = 15) -> Reply:
    entries = bot.audit.latest(cluster, group, n)
    if not entries:
        return text_reply(wording.audit_empty(group))
    lines = [
        messages.audit_line(
            datetime.fromtimestamp(e.at, UTC).strftime("%Y-%m-%d %H:%M:%SZ"),
            e.event,
            e.user,
            e.action,
            str(e.detail.get("detail") or e.detail.get("reason") or e.detail.get("plan") or ""),
        )
        for e in entries
    ]
    return text_reply("\n".join(lines))
