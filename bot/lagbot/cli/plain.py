"""`lagbot check`'s report as plain text, as the terminal form (lagbot.cli.terminal) prints it on a console without
colours (a pipe, a file), made without rich's console: `print_plain`.

rich's console takes ~35 ms of CPU to import, about a tenth of a whole `lagbot check` of 200 groups, and a report
written to a pipe or a file needs none of it. `plain_width` tells from the stream and the environment when rich would
print without colours, and at which width; `plain_report` lays the report out as rich prints it, character for
character, and leaves to rich (imported then) only the lines rich would change: tabs, emoji codes, cause lines
wider than the console, tables too wide for it. tests/cli/test_terminal_layout.py compares both ways.

The table is the one `kafka-consumer-groups.sh --describe` prints, plus status and lag in seconds (`COLUMNS`).
"""

from __future__ import annotations

import builtins
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING

from rich.cells import cell_len

from lagbot.cli import wording
from lagbot.core import messages
from lagbot.core.model import GroupVerdict, PartitionVerdict

if TYPE_CHECKING:
    from rich.console import Console

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
RIGHT = tuple(column in NUMERIC for column in COLUMNS)
MIN_WIDTH = 240
"""Tables are never squeezed to the terminal: like kafka-consumer-groups.sh, long lines just wrap."""

_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))
"""The control codes rich strips from what it prints: bell, backspace, vertical tab, form feed, carriage return."""


def plain_width(stream: IO[str], environ: Mapping[str, str]) -> int | None:
    """The width rich would print a report at on `stream` (at least MIN_WIDTH), when it is sure to print it without
    colours; None whenever rich might use colours (it decides then).

    rich prints without colours to what is not a terminal: a stream whose `isatty()` is false, unless FORCE_COLOR is
    set and not empty or TTY_COMPATIBLE is 1 (TTY_COMPATIBLE=0 means not a terminal whatever the stream). Its width is
    COLUMNS when that is a number, else the size of the first of stdin, stdout, stderr that is a terminal, else 80.
    Windows, IPython and IDLE, which rich treats on their own, are left to it.
    """
    if sys.platform == "win32" or hasattr(builtins, "get_ipython") or _in_idle():
        return None
    tty_compatible = environ.get("TTY_COMPATIBLE", "")
    if tty_compatible == "1":
        return None
    if tty_compatible != "0":
        force_color = environ.get("FORCE_COLOR")
        if force_color is not None and force_color != "":
            return None
        if force_color is None and _isatty(stream):
            return None
    return max(_console_width(environ), MIN_WIDTH)


def _in_idle() -> bool:
    return getattr(sys.stdin, "__module__", "").startswith("idlelib")


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except ValueError:  # a closed stream is no terminal
        return False


def _console_width(environ: Mapping[str, str]) -> int:
    columns = environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        return int(columns)
    for fd in (0, 1, 2):
        try:
            return os.get_terminal_size(fd).columns or 80
        except (AttributeError, ValueError, OSError):  # not a terminal
            continue
    return 80


def print_plain(report: CheckReport, stream: IO[str], width: int) -> None:
    """Write the report as `plain_report` lays it out, at `width` (`plain_width`), in one write."""
    console: Console | None = None

    def rich_console() -> Console:  # made only for a line that rich would change: the console print_report makes
        nonlocal console
        if console is None:
            from rich.console import Console

            from lagbot.cli.terminal import wide

            console = wide(Console(file=stream))
        return console

    try:
        stream.write(plain_report(report, width, rich_console))
        stream.flush()
    except BrokenPipeError:  # the reader went away (`| head`): what rich's own print does then
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        raise SystemExit(1) from None


def plain_report(report: CheckReport, width: int, console: Callable[[], Console]) -> str:
    """What lagbot.cli.terminal `print_report` prints on a console without colours `width` columns wide, as one string.

    Every line that rich would print unchanged (no tab to expand, no emoji code to replace, a cause line that fits
    the width) is written here as it is, less the control codes rich strips; anything else is printed by rich on
    `console()` and captured. Character for character what rich prints, in about a tenth of the time: rich's print
    costs ~0.1 ms a call, four calls a group.
    """
    out: list[str] = []
    for cluster, error in sorted(report.cluster_errors.items()):
        out.append(_soft_line(wording.cli_cluster_error(cluster, error), console))
    if not report.verdicts and not report.cluster_errors:
        out.append(_captured(console(), wording.cli_no_groups()))
    for verdict in report.verdicts:
        out.append("\n")
        out.append(_soft_line(wording.cli_group_headline(verdict), console))
        if verdict.error:
            out.append(_soft_line(messages.visible(verdict.error), console))
            continue
        table = plain_table(verdict, width)
        if table is None or "\t" in table:
            out.append(_captured_group_table(console(), verdict))
        else:
            out.append(strip_control_codes(table) + "\n")
        for cause in verdict.causes:
            line = wording.cli_cause_line(cause)
            if "\t" in line or "\n" in line or _EMOJI_CODE.search(line) or cell_width(line) > width:
                out.append(_captured(console(), line, markup=False, highlight=False))
            else:
                out.append(strip_control_codes(line) + "\n")
    return "".join(out)


def strip_control_codes(text: str) -> str:
    """`text` less the control codes rich strips from what it prints (`_STRIPPED`)."""
    return text.translate(_STRIPPED)


_EMOJI_CODE = re.compile(r":\S*?:")
"""What could be an emoji code (`:smile:`), which rich replaces in a printed string: such lines are left to rich."""


def _soft_line(text: str, console: Callable[[], Console]) -> str:
    """`console.print(Text(text), soft_wrap=True)` without colours: the text, less control codes, unless it has tabs."""
    if "\t" in text:
        from rich.text import Text

        return _captured(console(), Text(text), soft_wrap=True)
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
    from lagbot.cli.terminal import print_partitions

    with console.capture() as capture:
        print_partitions(verdict, console)
    return capture.get()


def plain_table(verdict: GroupVerdict, width: int) -> str | None:
    """The partition table as plain lines (no final newline), or None when it is wider than `width`."""
    rows = [COLUMNS, *(cells(verdict.group, p) for p in verdict.partitions)]
    sizes = [[cell_width(cell) for cell in row] for row in rows]  # each cell measured once: most of the table's time
    widths = [max(column) for column in zip(*sizes, strict=True)]
    if sum(widths) + 2 * (len(widths) - 1) > width:
        return None
    return "\n".join(
        "  ".join(
            " " * (w - size) + cell if right else cell + " " * (w - size)
            for cell, size, w, right in zip(row, row_sizes, widths, RIGHT, strict=True)
        )
        for row, row_sizes in zip(rows, sizes, strict=True)
    )


def cell_width(text: str) -> int:
    """`cell_len` (the columns a terminal gives `text`), found without looking at each character when every one is
    printable ASCII, one column each: the cells of a table nearly always are."""
    return len(text) if text.isascii() and text.isprintable() else cell_len(text)


def cells(group: str, p: PartitionVerdict) -> tuple[str, ...]:
    """A partition's row of the table, in `COLUMNS` order."""
    owner = p.owner
    shown = messages.visible  # names from the cluster and its clients: control characters shown, never obeyed
    return (
        shown(group),
        p.topic,
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
