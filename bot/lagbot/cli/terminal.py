"""The terminal form of a check: the lines of lagbot.cli.plain, styled (severity colours, a bold header, the status
coloured) and printed through rich's console.

Every line is printed as one `Text`, never read as markup (a group named `a[b]` shows `a[b]`) nor wrapped by rich:
the tables are already fitted to the terminal (lagbot.cli.fit); a headline or a cause line longer than the terminal
wraps as the terminal wraps it. Without colours this prints, character for character, what `plain_report` makes.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from lagbot.cli.fit import GAP, pad
from lagbot.cli.plain import COLUMNS, NUMERIC, Line, report_lines
from lagbot.core.model import Severity, Status
from lagbot.engine.check import CheckReport

__all__ = ["COLUMNS", "NUMERIC", "print_report", "styled"]

SEVERITY_STYLE = {Severity.OK: "green", Severity.WARN: "yellow", Severity.CRITICAL: "red", Severity.PAGE: "bold red"}
STATUS_STYLE = {Status.OK: "green", Status.WARN: "yellow"}
_KIND_STYLE = {"cluster_error": "bold red", "group_error": "red", "summary": "bold", "note": "dim"}

_UNSET = -1


def print_report(
    report: CheckReport,
    console: Console,
    width: int | None = _UNSET,
    pattern: str | None = None,
    pods: str | None = None,
) -> None:
    """Print the report on `console`, its tables fitted to `width` (by default the console's width when it is a
    terminal; None: whole tables); `pattern` is `-g`'s, if given; `pods`: why the owners' pods could not be read."""
    if width == _UNSET:
        width = console.width if console.is_terminal else None
    with console:  # buffered, written at the end: one write
        for line in report_lines(report, width, pattern, pods):
            console.print(styled(line), soft_wrap=True)


def styled(line: Line) -> Text:
    """One line of the report as rich Text with its style."""
    if line.kind == "headline" and line.verdict is not None:
        return Text(line.text, style=SEVERITY_STYLE[line.verdict.severity])
    if line.kind == "header":
        return Text(line.text, style="bold")
    if line.kind == "row" and line.partition is not None and line.layout is not None:
        return _row(line)
    return Text(line.text, style=_KIND_STYLE.get(line.kind, ""))


_STATUS_COLUMN = COLUMNS.index("STATUS")


def _row(line: Line) -> Text:
    """A table row, its STATUS cell coloured."""
    assert line.layout is not None and line.partition is not None
    layout = line.layout
    text = Text()
    for position, (column, cell, width, right) in enumerate(
        zip(layout.shown, line.cells, layout.widths, layout.right, strict=True)
    ):
        if position:
            text.append(" " * GAP)
        style = STATUS_STYLE.get(line.partition.status, "red") if column == _STATUS_COLUMN else ""
        text.append(pad(cell, width, right), style=style)
    return text
