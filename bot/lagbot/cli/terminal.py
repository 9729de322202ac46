"""The terminal form of a check: the table of `kafka-consumer-groups.sh --describe`, plus status and causes.

A group's table is laid out here as one `Text` (the layout of rich's `Table` with `box=None`: columns two
spaces apart, numbers right-justified, the header bold, the status coloured): rich's own `Table` measures and
pads every cell through its renderable protocol, about 40 us a cell, which made printing 2,000 partitions
take a second. Cells are printed as they are (a group named `a[b]` shows `a[b]`, never read as markup).
A table wider than the console falls back to rich's `Table`, which crops its cells the way it always did.
Printed without colours, the report is laid out by lagbot.cli.plain (whose table this is, as `COLUMNS` and `cells`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:
    from rich.table import Table

from lagbot.cli import wording
from lagbot.cli.plain import COLUMNS, MIN_WIDTH, NUMERIC, RIGHT, cell_width, cells, plain_report, plain_table
from lagbot.core.messages import visible
from lagbot.core.model import GroupVerdict, Severity, Status
from lagbot.engine.check import CheckReport

__all__ = ["COLUMNS", "NUMERIC", "print_report", "print_rich", "wide"]

_SEVERITY_STYLE = {Severity.OK: "green", Severity.WARN: "yellow", Severity.CRITICAL: "red", Severity.PAGE: "bold red"}
_STATUS_STYLE = {Status.OK: "green", Status.WARN: "yellow"}


def print_report(report: CheckReport, console: Console) -> None:
    """Print every cluster error, then one section per group: summary line, partition table, causes."""
    console = wide(console)
    if console.color_system is None and not console.record:
        try:
            console.file.write(plain_report(report, console.width, lambda: console))
            console.file.flush()
        except BrokenPipeError:  # the reader went away (`| head`): what rich's own print does then
            console.on_broken_pipe()
    else:
        print_rich(report, console)


def print_rich(report: CheckReport, console: Console) -> None:
    """`print_report` through rich's print, item by item (colours, or a recording console)."""
    with console:  # buffered, written at the end: one write instead of four per group
        for cluster, error in sorted(report.cluster_errors.items()):
            console.print(Text(wording.cli_cluster_error(cluster, error), style="bold red"), soft_wrap=True)
        if not report.verdicts and not report.cluster_errors:
            console.print(wording.cli_no_groups())
        for verdict in report.verdicts:
            console.print()
            print_group(verdict, console)


def wide(console: Console) -> Console:
    """The console at least MIN_WIDTH wide: tables are never squeezed to the terminal."""
    if console.width >= MIN_WIDTH:
        return console
    return Console(file=console.file, width=MIN_WIDTH, force_terminal=console.is_terminal, no_color=console.no_color)


def print_group(verdict: GroupVerdict, console: Console) -> None:
    style = _SEVERITY_STYLE[verdict.severity]
    console.print(Text(wording.cli_group_headline(verdict), style=style), soft_wrap=True)
    if verdict.error:
        console.print(Text(visible(verdict.error), style="red"), soft_wrap=True)
        return
    print_partitions(verdict, console)
    for cause in verdict.causes:
        console.print(wording.cli_cause_line(cause), markup=False, highlight=False)


def print_partitions(verdict: GroupVerdict, console: Console) -> None:
    """The group's partition table: laid out here when it fits the console, else by rich's Table."""
    text = partition_text(verdict, console.width, styled=console.color_system is not None)
    if text is None:
        console.print(partition_table(verdict))
    else:  # every line fits: nothing to wrap or crop
        console.print(text, no_wrap=True, overflow="ignore", crop=False)


_STATUS_COLUMN = COLUMNS.index("STATUS")


def partition_text(verdict: GroupVerdict, width: int, *, styled: bool = True) -> Text | None:
    """The group's partition table as one Text, or None when it is wider than `width` (rich's Table then).

    Unstyled (for a console that prints no colours) it is one plain string, which rich prints fastest.
    """
    if not styled:
        table = plain_table(verdict, width)
        return None if table is None else Text(table, end="\n")
    rows = [cells(verdict.group, p) for p in verdict.partitions]
    widths = _widths(rows)
    if sum(widths) + 2 * (len(widths) - 1) > width:
        return None
    text = Text()
    for i, column in enumerate(COLUMNS):  # rich styles each header cell and each padding space on its own
        if i:
            text.append(" ", style="bold")
            text.append(" ", style="bold")
        text.append(_fit(column, widths[i], RIGHT[i]), style="bold")
    for p, row in zip(verdict.partitions, rows, strict=True):
        text.append("\n")
        status_style = _STATUS_STYLE.get(p.status, "red")
        for i, cell in enumerate(row):
            if i:
                text.append("  ")
            text.append(_fit(cell, widths[i], RIGHT[i]), style=status_style if i == _STATUS_COLUMN else None)
    return text


def _widths(rows: list[tuple[str, ...]]) -> list[int]:
    widths = [cell_width(column) for column in COLUMNS]
    for row in rows:
        for i, cell in enumerate(row):
            size = cell_width(cell)
            if size > widths[i]:
                widths[i] = size
    return widths


def _fit(cell: str, width: int, right: bool) -> str:
    pad = " " * (width - cell_width(cell))
    return pad + cell if right else cell + pad


def partition_table(verdict: GroupVerdict) -> Table:
    """The same table as rich's Table: for a table wider than the console, which rich crops."""
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column, right in zip(COLUMNS, RIGHT, strict=True):
        table.add_column(column, justify="right" if right else "left", no_wrap=True)
    for p in verdict.partitions:
        row: list[str | Text] = [Text(cell) for cell in cells(verdict.group, p)]
        row[_STATUS_COLUMN] = Text(p.status.name, style=_STATUS_STYLE.get(p.status, "red"))
        table.add_row(*row)
    return table
