"""The terminal form of a check: the table of `kafka-consumer-groups.sh --describe`, plus status and causes."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from bot import messages
from bot.check import CheckReport
from bot.model import GroupVerdict, PartitionVerdict, Severity, Status

COLUMNS = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
    "STATUS",
    "LAG-SECONDS",
)
MIN_WIDTH = 240
_SEVERITY_STYLE = {Severity.OK: "green", Severity.WARN: "yellow", Severity.CRITICAL: "red", Severity.PAGE: "bold red"}
_STATUS_STYLE = {Status.OK: "green", Status.WARN: "yellow"}


def print_report(report: CheckReport, console: Console) -> None:
    """Print every cluster error, then one section per group: summary line, partition table, causes."""
    console = wide(console)
    for cluster, error in sorted(report.cluster_errors.items()):
        console.print(Text(messages.cli_cluster_error(cluster, error), style="bold red"), soft_wrap=True)
    if not report.verdicts and not report.cluster_errors:
        console.print(messages.cli_no_groups())
    for verdict in report.verdicts:
        console.print()
        print_group(verdict, console)


def wide(console: Console) -> Console:
    """Tables are never squeezed to the terminal: like kafka-consumer-groups.sh, long lines just wrap."""
    if console.width >= MIN_WIDTH:
        return console
    return Console(file=console.file, width=MIN_WIDTH, force_terminal=console.is_terminal, no_color=console.no_color)


def print_group(verdict: GroupVerdict, console: Console) -> None:
    style = _SEVERITY_STYLE[verdict.severity]
    console.print(Text(messages.cli_group_headline(verdict), style=style), soft_wrap=True)
    if verdict.error:
        console.print(Text(verdict.error, style="red"), soft_wrap=True)
        return
    console.print(partition_table(verdict))
    for cause in verdict.causes:
        console.print(messages.cli_cause_line(cause), markup=False, highlight=False)


def partition_table(verdict: GroupVerdict) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column in COLUMNS:
        numeric = column in ("PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-SECONDS")
        table.add_column(column, justify="right" if numeric else "left", no_wrap=True)
    for p in verdict.partitions:
        table.add_row(*_row(verdict.group, p))
    return table


def _row(group: str, p: PartitionVerdict) -> tuple[str | Text, ...]:
    owner = p.owner
    status = Text(p.status.name, style=_STATUS_STYLE.get(p.status, "red"))
    return (
        group,
        p.topic,
        str(p.partition),
        "-" if p.committed is None else str(p.committed),
        str(p.log_end),
        "-" if p.lag is None else str(p.lag),
        owner.member_id if owner else "-",
        owner.host if owner else "-",
        owner.client_id if owner else "-",
        status,
        messages.lag_seconds_cell(p.lag_seconds, p.lag_seconds_lower_bound),
    )
