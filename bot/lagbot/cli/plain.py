"""`lagbot check`'s report as lines of text: what lagbot.cli.terminal prints, styled on a console with colours, and
what `print_plain` writes as it is to a pipe, a file or a terminal without colours (without importing rich's console,
~35 ms of CPU, about a tenth of a whole `lagbot check` of 200 groups).

The report, top to bottom: the clusters that could not be read, then one section per group, the groups in trouble
first (`by_trouble`): its headline, its partition table (laid out to fit the terminal by lagbot.cli.fit) and its
likely causes; last, one line that sums it up. Every name the cluster sends is shown with its control characters
escaped (`shown`): a group named with an escape sequence cannot move the cursor or recolour the terminal.
"""

from __future__ import annotations

import builtins
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from lagbot.cli import wording
from lagbot.cli.fit import COLUMNS, NUMERIC, RIGHT, Layout, cell_width, fit, lines
from lagbot.core import messages
from lagbot.core.model import GroupVerdict, PartitionVerdict
from lagbot.service.remedies import remedy

if TYPE_CHECKING:
    from lagbot.engine.check import CheckReport

__all__ = ["COLUMNS", "NUMERIC", "RIGHT", "cell_width", "cells", "plain_report", "print_plain", "table_width"]


def plain_output(stream: IO[str], environ: Mapping[str, str]) -> bool:
    """Whether rich would print to `stream` without colours, so `print_plain` prints what it would.

    rich prints without colours to what is not a terminal: a stream whose `isatty()` is false, unless FORCE_COLOR is
    set and not empty or TTY_COMPATIBLE is 1 (TTY_COMPATIBLE=0 means not a terminal whatever the stream); NO_COLOR
    set means no colours. Windows, IPython and IDLE, which rich treats on their own, are left to it.
    """
    if sys.platform == "win32" or hasattr(builtins, "get_ipython") or _in_idle():
        return False
    tty_compatible = environ.get("TTY_COMPATIBLE", "")
    if tty_compatible == "1":
        return False
    if tty_compatible != "0":
        force_color = environ.get("FORCE_COLOR")
        if force_color is not None and force_color != "":
            return False
        if force_color is None and _isatty(stream):
            return False
    return True


def table_width(stream: IO[str], environ: Mapping[str, str]) -> int | None:
    """The width tables are fitted to: COLUMNS when it is a number, else the terminal's when `stream` is one; None
    (the whole table, nothing cut) for a pipe or a file."""
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not _isatty(stream):
        return None
    try:
        return os.get_terminal_size(stream.fileno()).columns or None
    except (AttributeError, ValueError, OSError):
        return None


def _in_idle() -> bool:
    return getattr(sys.stdin, "__module__", "").startswith("idlelib")


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except ValueError:  # a closed stream is no terminal
        return False


def print_plain(
    report: CheckReport, stream: IO[str], width: int | None, pattern: str | None = None, pods: str | None = None
) -> None:
    """Write the report as `plain_report` lays it out, in one write."""
    try:
        stream.write(plain_report(report, width, pattern, pods))
        stream.flush()
    except BrokenPipeError:  # the reader went away (`| head`): nothing left to tell it
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        raise SystemExit(1) from None


@dataclass(frozen=True)
class Line:
    """One line of the report and what it is (lagbot.cli.terminal styles it by `kind`)."""

    text: str
    kind: str
    """'cluster_error', 'blank', 'headline', 'group_error', 'header', 'row', 'note', 'cause' or 'summary'."""
    verdict: GroupVerdict | None = None
    partition: PartitionVerdict | None = None
    layout: Layout | None = None
    cells: tuple[str, ...] = ()
    """A row's cells as shown (cut to their columns), in the order of `layout.shown`."""


def report_lines(
    report: CheckReport, width: int | None, pattern: str | None = None, pods: str | None = None
) -> list[Line]:
    """The report, line by line, tables fitted to `width` (None: whole); `pattern` is `-g`'s, if given; `pods`: why
    the owners' pods could not be read (lagbot.cli.pods), said once before the summary."""
    out: list[Line] = []
    for cluster, error in sorted(report.cluster_errors.items()):
        out.append(Line(shown(wording.cli_cluster_error(cluster, error)), "cluster_error"))
    if not report.verdicts and not report.cluster_errors:
        out.append(Line(shown(wording.cli_no_groups_matched(pattern) if pattern else wording.cli_no_groups()), "note"))
    for verdict in by_trouble(report.verdicts):
        out.append(Line("", "blank"))
        out.append(Line(shown(wording.cli_group_headline(verdict)), "headline", verdict))
        if verdict.error:
            out.append(Line(shown(verdict.error), "group_error", verdict))
            continue
        out.extend(table_lines(verdict, width))
        out.extend(Line(shown(wording.cli_cause_line(c, remedy(c))), "cause", verdict) for c in verdict.causes)
    if pods is not None:
        out.append(Line("", "blank"))
        out.append(Line(shown(pods), "note"))
    if report.verdicts:
        out.append(Line("", "blank"))
        out.append(Line(shown(wording.cli_summary(report.verdicts, report.cluster_errors)), "summary"))
    return out


def table_lines(verdict: GroupVerdict, width: int | None) -> list[Line]:
    """The group's partition table, fitted to `width`, then a note naming the columns left out to fit."""
    rows = [cells(verdict.group, p) for p in verdict.partitions]
    layout = fit(rows, width)
    text = lines(layout, rows)
    out = [Line(text[0], "header", verdict, layout=layout)]
    out.extend(
        Line(line, "row", verdict, p, layout, layout.row(row))
        for line, p, row in zip(text[1:], verdict.partitions, rows, strict=True)
    )
    if layout.hidden:
        out.append(Line(wording.cli_columns_hidden(layout.hidden, width or 0), "note", verdict))
    return out


def plain_report(report: CheckReport, width: int | None, pattern: str | None = None, pods: str | None = None) -> str:
    """The report as plain text, fitted to `width` (None: tables whole)."""
    return "".join(line.text + "\n" for line in report_lines(report, width, pattern, pods))


TROUBLE_ORDER = "unreadable", "page", "critical", "warn", "ok"


def by_trouble(verdicts: Sequence[GroupVerdict]) -> list[GroupVerdict]:
    """The groups in trouble first: unreadable, then by severity (page, critical, warn), then the most lag in seconds
    and messages; the groups at ok last, lagging before idle; names break ties."""
    return sorted(verdicts, key=_trouble)


def _trouble(v: GroupVerdict) -> tuple[int, int, float, int, str]:
    return (
        0 if v.error else 1,
        -int(v.severity),
        -(v.max_lag_seconds or 0.0),
        -(v.total_lag or 0),
        v.group,
    )


def cells(group: str, p: PartitionVerdict) -> tuple[str, ...]:
    """A partition's row of the table, in `COLUMNS` order, names shown with control characters escaped."""
    owner = p.owner
    return (
        shown(group),
        shown(p.topic),
        str(p.partition),
        "-" if p.committed is None else str(p.committed),
        str(p.log_end),
        "-" if p.lag is None else str(p.lag),
        shown(owner.member_id) if owner else "-",
        shown(owner.host) if owner else "-",
        shown(owner.client_id) if owner else "-",
        p.status.name,
        messages.lag_seconds_cell(p.lag_seconds, p.lag_seconds_lower_bound),
    )


def shown(text: str) -> str:
    """`text` as a terminal shows it: names from the cluster keep no control, bidi or invisible character
    (lagbot.core.messages `visible`: `\\x1b`, `\\t`, `\\u202e` written out)."""
    return messages.visible(text)
