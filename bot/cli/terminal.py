"""The terminal form of a check: the table of `kafka-consumer-groups.sh --describe`, plus status and causes.

A group's table is laid out here as one `Text` (the layout of rich's `Table` with `box=None`: columns two
spaces apart, numbers right-justified, the header bold, the status coloured): rich's own `Table` measures and
pads every cell through its renderable protocol, about 40 us a cell, which made printing 2,000 partitions
take a second. Cells are printed as they are (a group named `a[b]` shows `a[b]`, never read as markup).
A table wider than the console falls back to rich's `Table`, which crops its cells the way it always did.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console
from rich.control import strip_control_codes
from rich.text import Text

if TYPE_CHECKING:
    from rich.table import Table

from lagbot.cli import wording
from lagbot.core import messages
from lagbot.core.model import GroupVerdict, PartitionVerdict, Severity, Status
from lagbot.engine.check import CheckReport

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
NUMERIC = frozenset({"PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-SECONDS"})
MIN_WIDTH = 240
_SEVERITY_STYLE = {Severity.OK: "green", Severity.WARN: "yellow", Severity.CRITICAL: "red", Severity.PAGE: "bold red"}
_STATUS_STYLE = {Status.OK: "green", Status.WARN: "yellow"}


def print_report(report: CheckReport, console: Console) -> None:
    """Print every cluster error, then one section per group: summary line, partition table, causes."""
    console = wide(console)
    if console.color_system is None and not console.record:
        try:
            console.file.write(plain_report(report, console))
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


def plain_report(report: CheckReport, console: Console) -> str:
    """What `print_report` prints on a console without colours (a pipe, a file, NO_COLOR), as one string.

    Every line that rich would print unchanged (no tab to expand, no emoji code to replace, a cause line that fits
    the width) is written here as it is, less the control codes rich strips; anything else is printed by rich on
    `console` and captured. Character for character what rich prints (tests/cli/test_terminal_layout.py), in about
    a tenth of the time: rich's print costs ~0.1 ms a call, four calls a group.
    """
    out: list[str] = []
    width = console.width  # asked once: rich works it out from the terminal at every ask
    for cluster, error in sorted(report.cluster_errors.items()):
        out.append(_soft_line(wording.cli_cluster_error(cluster, error), console))
    if not report.verdicts and not report.cluster_errors:
        out.append(_captured(console, wording.cli_no_groups()))
    for verdict in report.verdicts:
        out.append("\n")
        out.append(_soft_line(wording.cli_group_headline(verdict), console))
        if verdict.error:
            out.append(_soft_line(verdict.error, console))
            continue
        table = _plain_table(verdict, width)
        if table is None or "\t" in table:
            out.append(_captured_group_table(console, verdict))
        else:
            out.append(strip_control_codes(table) + "\n")
        for cause in verdict.causes:
            line = wording.cli_cause_line(cause)
            if "\t" in line or "\n" in line or _EMOJI_CODE.search(line) or _cell_width(line) > width:
                out.append(_captured(console, line, markup=False, highlight=False))
            else:
                out.append(strip_control_codes(line) + "\n")
    return "".join(out)


_EMOJI_CODE = re.compile(r":\S*?:")
"""What could be an emoji code (`:smile:`), which rich replaces in a printed string: such lines are left to rich."""


def _soft_line(text: str, console: Console) -> str:
    """`console.print(Text(text), soft_wrap=True)` without colours: the text, less control codes, unless it has tabs."""
    if "\t" in text:
        return _captured(console, Text(text), soft_wrap=True)
    return strip_control_codes(text) + "\n"


def _captured(
    console: Console,
    renderable: object,
    *,
    markup: bool | None = None,
    highlight: bool | None = None,
    soft_wrap: bool = False,
) -> str:
    with console.capture() as capture:
        console.print(renderable, markup=markup, highlight=highlight, soft_wrap=soft_wrap)
    return capture.get()


def _captured_group_table(console: Console, verdict: GroupVerdict) -> str:
    with console.capture() as capture:
        print_partitions(verdict, console)
    return capture.get()


def wide(console: Console) -> Console:
    """Tables are never squeezed to the terminal: like kafka-consumer-groups.sh, long lines just wrap."""
    if console.width >= MIN_WIDTH:
        return console
    return Console(file=console.file, width=MIN_WIDTH, force_terminal=console.is_terminal, no_color=console.no_color)


def print_group(verdict: GroupVerdict, console: Console) -> None:
    style = _SEVERITY_STYLE[verdict.severity]
    console.print(Text(wording.cli_group_headline(verdict), style=style), soft_wrap=True)
    if verdict.error:
        console.print(Text(verdict.error, style="red"), soft_wrap=True)
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
_RIGHT = tuple(column in NUMERIC for column in COLUMNS)


def partition_text(verdict: GroupVerdict, width: int, *, styled: bool = True) -> Text | None:
    """The group's partition table as one Text, or None when it is wider than `width` (rich's Table then).

    Unstyled (for a console that prints no colours) it is one plain string, which rich prints fastest.
    """
    if not styled:
        table = _plain_table(verdict, width)
        return None if table is None else Text(table, end="\n")
    rows = [_cells(verdict.group, p) for p in verdict.partitions]
    widths = _widths(rows)
    if sum(widths) + 2 * (len(widths) - 1) > width:
        return None
    text = Text()
    for i, column in enumerate(COLUMNS):  # rich styles each header cell and each padding space on its own
        if i:
            text.append(" ", style="bold")
            text.append(" ", style="bold")
        text.append(_fit(column, widths[i], _RIGHT[i]), style="bold")
    for p, row in zip(verdict.partitions, rows, strict=True):
        text.append("\n")
        status_style = _STATUS_STYLE.get(p.status, "red")
        for i, cell in enumerate(row):
            if i:
                text.append("  ")
            text.append(_fit(cell, widths[i], _RIGHT[i]), style=status_style if i == _STATUS_COLUMN else None)
    return text


def _plain_table(verdict: GroupVerdict, width: int) -> str | None:
    """The partition table as plain lines (no final newline), or None when it is wider than `width`."""
    rows = [COLUMNS, *(_cells(verdict.group, p) for p in verdict.partitions)]
    sizes = [[_cell_width(cell) for cell in row] for row in rows]  # each cell measured once: most of the table's time
    widths = [max(column) for column in zip(*sizes, strict=True)]
    if sum(widths) + 2 * (len(widths) - 1) > width:
        return None
    return "\n".join(
        "  ".join(
            " " * (w - size) + cell if right else cell + " " * (w - size)
            for cell, size, w, right in zip(row, row_sizes, widths, _RIGHT, strict=True)
        )
        for row, row_sizes in zip(rows, sizes, strict=True)
    )


def _cell_width(text: str) -> int:
    """`cell_len` (the columns a terminal gives `text`), found without looking at each character when every one is
    printable ASCII, one column each: the cells of a table nearly always are."""
    return len(text) if text.isascii() and text.isprintable() else cell_len(text)


def _widths(rows: list[tuple[str, ...]]) -> list[int]:
    widths = [_cell_width(column) for column in COLUMNS]
    for row in rows:
        for i, cell in enumerate(row):
            size = _cell_width(cell)
            if size > widths[i]:
                widths[i] = size
    return widths


def _fit(cell: str, width: int, right: bool) -> str:
    pad = " " * (width - _cell_width(cell))
    return pad + cell if right else cell + pad


def partition_table(verdict: GroupVerdict) -> Table:
    """The same table as rich's Table: for a table wider than the console, which rich crops."""
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column, right in zip(COLUMNS, _RIGHT, strict=True):
        table.add_column(column, justify="right" if right else "left", no_wrap=True)
    for p in verdict.partitions:
        cells: list[str | Text] = [Text(cell) for cell in _cells(verdict.group, p)]
        cells[_STATUS_COLUMN] = Text(p.status.name, style=_STATUS_STYLE.get(p.status, "red"))
        table.add_row(*cells)
    return table


def _cells(group: str, p: PartitionVerdict) -> tuple[str, ...]:
    owner = p.owner
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
        p.status.name,
        messages.lag_seconds_cell(p.lag_seconds, p.lag_seconds_lower_bound),
    )
