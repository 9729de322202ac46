"""`/lag report`, `/lag history <group>`, `/lag thresholds <group>` and the weekly report digest, on top of `Bot`.

What is read comes from lagbot.service.history_read (the history's two tiers, the incidents, the audit trail); what
is said from lagbot.service.wording (plain text, names escaped here for Slack) and lagbot.slack.wording. Tables are
shown as code blocks (aligned columns); every text is clipped to Slack's limits. Nothing here changes a setting:
the thresholds reply shows the YAML to review.
"""

from __future__ import annotations

from collections.abc import Sequence

from slack_sdk.models.blocks import ContextBlock, SectionBlock
from slack_sdk.models.blocks.basic_components import MarkdownTextObject

from lagbot.core.digest_config import DAY, DigestConfig
from lagbot.core.messages import slack_escape
from lagbot.service import wording as said
from lagbot.service.bot import Bot
from lagbot.service.digest import ComposedDigest
from lagbot.service.history_read import (
    GroupHistory,
    daily_rows,
    peaks_by_day,
    read_group,
    read_groups,
    suggest,
    suggestion_table,
    weekly_report,
)
from lagbot.service.pattern_notes import patterns_of
from lagbot.service.patterns import PatternRules, describe
from lagbot.service.report import GroupReport
from lagbot.service.slack_message import Block as JsonBlock
from lagbot.service.slack_message import SlackMessage
from lagbot.slack.commands import Reply
from lagbot.slack.render import MAX_SECTION_TEXT, clip

MOST_GROUPS = 15
"""Groups listed in a report (worst first); the rest are counted."""
FENCE = "```"


def _section(text: str) -> JsonBlock:
    return JsonBlock(SectionBlock(text=MarkdownTextObject(text=clip(text, MAX_SECTION_TEXT))).to_dict())


def _code(lines: Sequence[str]) -> str:
    body = clip("\n".join(lines), MAX_SECTION_TEXT - 2 * len(FENCE) - 2)
    return f"{FENCE}\n{body}\n{FENCE}"


def _reply(title: str, *parts: str, public: bool) -> Reply:
    blocks = [_section(title), *(_section(p) for p in parts if p)]
    return Reply(text=clip("\n".join([title, *parts]), 3_900), blocks=blocks, public=public)


# ---------------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------------


def report_groups(bot: Bot, channel: str | None) -> list[tuple[str, str]]:
    """The groups with a stored history that are routed to `channel` (every one when none is, or no channel)."""
    every = [(c.name, g) for c in bot.settings.clusters for g in bot.history.groups(c.name)]
    if channel is None:
        return every
    return [k for k in every if bot.channel_for(*k) == channel] or every


def read_report(bot: Bot, channel: str | None, days: float, *, now: float) -> tuple[list[GroupReport], int,
                                                                                   list[GroupHistory]]:  # fmt: skip
    pasts = read_groups(bot.history, bot.incidents, bot.audit, report_groups(bot, channel), since=now - days * DAY,
                        until=now)  # fmt: skip
    return weekly_report(pasts), len(pasts), pasts


def report_lines(reports: Sequence[GroupReport], total: int, days: float) -> tuple[str, list[str]]:
    """(title, one line per group, worst first, for Slack)."""
    if not reports:
        return said.report_empty(days * DAY), []
    shown = reports[:MOST_GROUPS]
    lines = ["• " + said.report_line(f"`{slack_escape(r.group)}`", slack_escape(r.cluster), r) for r in shown]
    return f"*{said.report_title(days * DAY, len(reports), total)}*", lines


def report_reply(bot: Bot, channel: str, days: int, *, public: bool, now: float) -> Reply:
    reports, total, _ = read_report(bot, channel, days, now=now)
    title, lines = report_lines(reports, total, days)
    return _reply(title, "\n".join(lines), public=public)


def compose_report(bot: Bot, config: DigestConfig, *, now: float) -> ComposedDigest:
    """The weekly report as a digest (`report: true`): the lines, and the chart of the month of the worst groups."""
    from lagbot.slack.history_chart import span_chart

    reports, total, _ = read_report(bot, config.channel, config.period / DAY, now=now)
    title, lines = report_lines(reports, total, config.period / DAY)
    month = 30 * DAY
    worst = [(r.cluster, r.group) for r in reports[:5]]
    pasts = read_groups(bot.history, bot.incidents, None, worst, since=now - month, until=now)
    series = {f"{p.group} ({p.cluster})": peaks_by_day(p, config.zone) for p in pasts}
    chart = span_chart(series, since=now - month, until=now, tz=config.zone, title=said.report_chart_title())
    blocks = (_section(title), *([_section("\n".join(lines))] if lines else []))
    text = clip("\n".join([title, *lines]), 3_900)
    return ComposedDigest(
        message=SlackMessage(text, blocks),
        chart_png=chart if reports else None,
        chart_alt=said.report_chart_title(),
    )


# ---------------------------------------------------------------------------------------------------
# A group's history and its thresholds
# ---------------------------------------------------------------------------------------------------


def history_reply(bot: Bot, cluster: str, group: str, days: int, *, public: bool, now: float) -> Reply:
    past = read_group(bot.history, bot.incidents, bot.audit, cluster, group, since=now - days * DAY, until=now)
    shown_group, shown_cluster = f"`{slack_escape(group)}`", slack_escape(cluster)
    if not past.series:
        return _reply(said.history_no_points(shown_group, shown_cluster), public=public)
    kept = bot.settings.digest.history
    rows = daily_rows(past, kept.zone)
    table = [said.history_columns()] + [
        said.history_cells(r.day, r.peak_lag, r.peak_seconds, r.warn_seconds, r.critical_seconds,
                           r.unreadable_seconds, r.incidents) for r in rows
    ]  # fmt: skip
    patterns = patterns_of(bot.history, cluster, group, now=now, tz=kept.zone, width=kept.rollup_resolution,
                           rules=PatternRules(min_points=1))  # fmt: skip
    title = f"*{said.history_title(shown_group, shown_cluster, days * DAY, len(past.series))}*"
    return _reply(title, _code(said.columns(table)), said.history_patterns([describe(p) for p in patterns]),
                  public=public)  # fmt: skip


def thresholds_reply(bot: Bot, cluster: str, group: str, days: int, *, now: float) -> Reply:
    """The suggestion, only to whoever asked (an approver: lagbot.slack.guard checked)."""
    past = read_group(bot.history, bot.incidents, bot.audit, cluster, group, since=now - days * DAY, until=now)
    made = suggest(past, bot.thresholds_for(cluster, group).warn, bot.settings.incidents)
    title = f"*{said.suggestion_title(f'`{slack_escape(group)}`', slack_escape(cluster), made.points, days * DAY)}*"
    basis = (
        said.suggestion_no_proposal() if made.proposal is None else said.suggestion_basis(made.proposal.healthy_points)
    )
    snippet = _code([slack_escape(made.snippet.rstrip())]) if made.snippet is not None else ""
    table = _code([slack_escape(line) for line in said.columns(suggestion_table(made))])
    reply = _reply(title, basis, table, snippet, public=False)
    return Reply(reply.text, [*reply.blocks, _note()], public=False)


def _note() -> JsonBlock:
    return JsonBlock(ContextBlock(elements=[MarkdownTextObject(text=said.suggestion_never_applied())]).to_dict())
