"""The partition table laid out to fit a terminal `width` columns wide: which columns are shown, how wide, with which
header, and how a name too long for its column is cut. Pure: cells in, cells out (lagbot.cli.plain and
lagbot.cli.terminal print them).

The whole table (the columns of `kafka-consumer-groups.sh --describe`, plus STATUS and LAG-SECONDS) is shown when it
fits. When it does not, in this order until it does: the owner columns are dropped, the longest first (CONSUMER-ID,
HOST, then GROUP, which the headline above the table names, then CLIENT-ID); the numeric columns take short headers
(CURRENT, LOG-END, LAG-S); the topic is cut in the middle to what is left, never below `MIN_NAME` columns. Numbers
and STATUS are never cut nor dropped: LAG is what the command exists for. Without a width (printed to a pipe or a
file, where nothing wraps) the whole table is shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len

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

DROPPED_FIRST = ("CONSUMER-ID", "HOST", "GROUP", "CLIENT-ID")
"""The columns a narrow terminal loses, in this order: who owns a partition, and the group's name (in the headline)."""
SHORT_HEADERS = {"PARTITION": "P", "CURRENT-OFFSET": "CURRENT", "LOG-END-OFFSET": "LOG-END", "LAG-SECONDS": "LAG-S"}
"""Headers for a terminal too narrow for Kafka's own (numbers are never cut)."""
CUT = ("TOPIC", "CLIENT-ID", "GROUP")
"""The name columns cut to fit, the first one first (the others are dropped before it is cut)."""
MIN_NAME = 8
"""A name column is cut to no fewer columns than this (less would not tell names apart)."""
ELLIPSIS = "…"
GAP = 2
"""Spaces between columns."""


@dataclass(frozen=True)
class Layout:
    """The table as it is printed: the indexes (in `COLUMNS`) of the columns shown, their headers and widths, and the
    columns left out."""

    shown: tuple[int, ...]
    headers: tuple[str, ...]
    widths: tuple[int, ...]
    hidden: tuple[str, ...]

    @property
    def right(self) -> tuple[bool, ...]:
        return tuple(RIGHT[i] for i in self.shown)

    def total(self) -> int:
        return sum(self.widths) + GAP * (len(self.widths) - 1)

    def row(self, cells: Sequence[str]) -> tuple[str, ...]:
        """A row of all the `COLUMNS`' cells, as shown: the hidden ones out, the long names cut."""
        return tuple(cut(cells[i], width) for i, width in zip(self.shown, self.widths, strict=True))


def cell_width(text: str) -> int:
    """The columns a terminal gives `text` (ASCII printable: its length)."""
    return len(text) if text.isascii() and text.isprintable() else cell_len(text)


def cut(text: str, width: int) -> str:
    """`text` in at most `width` columns: as it is when it fits, else its start and end around an ellipsis (the end of
    a name is what often tells two apart: `orders.v1`, `orders.v2`)."""
    if cell_width(text) <= width:
        return text
    keep = max(width - 1, 0)
    head = _take(text, (keep + 1) // 2)
    tail = _take(text[::-1], keep - cell_width(head))[::-1]
    return head + ELLIPSIS + tail


def _take(text: str, width: int) -> str:
    """The longest start of `text` that fits in `width` columns."""
    out, used = [], 0
    for char in text:
        size = cell_width(char)
        if used + size > width:
            break
        out.append(char)
        used += size
    return "".join(out)


def natural_widths(rows: Sequence[Sequence[str]]) -> list[int]:
    """Each column's width with every cell whole and Kafka's headers."""
    widths = [cell_width(column) for column in COLUMNS]
    for row in rows:
        for i, cell in enumerate(row):
            size = cell_width(cell)
            if size > widths[i]:
                widths[i] = size
    return widths


def fit(rows: Sequence[Sequence[str]], width: int | None) -> Layout:
    """The layout of `rows` (each in `COLUMNS` order) for a terminal `width` columns wide (None: no limit)."""
    natural = natural_widths(rows)
    shown = list(range(len(COLUMNS)))
    headers = dict(enumerate(COLUMNS))
    widths = dict(enumerate(natural))

    def total() -> int:
        return sum(widths[i] for i in shown) + GAP * (len(shown) - 1)

    if width is None or total() <= width:
        return _layout(shown, headers, widths)
    for name in DROPPED_FIRST:
        shown.remove(COLUMNS.index(name))
        if total() <= width:
            return _layout(shown, headers, widths)
    for name, short in SHORT_HEADERS.items():
        i = COLUMNS.index(name)
        headers[i] = short
        widths[i] = max([cell_width(short), *(cell_width(row[i]) for row in rows)])
    topic = COLUMNS.index("TOPIC")
    widths[topic] = max(min(natural[topic], MIN_NAME), natural[topic] - (total() - width))
    return _layout(shown, headers, widths)


def _layout(shown: list[int], headers: dict[int, str], widths: dict[int, int]) -> Layout:
    return Layout(
        shown=tuple(shown),
        headers=tuple(headers[i] for i in shown),
        widths=tuple(widths[i] for i in shown),
        hidden=tuple(COLUMNS[i] for i in range(len(COLUMNS)) if i not in shown),
    )


def lines(layout: Layout, rows: Sequence[Sequence[str]]) -> list[str]:
    """The table's lines (header first), unstyled: columns `GAP` apart, numbers right-justified, no trailing spaces
    beyond the last column's width."""
    right = layout.right
    return [
        _line(layout.headers, layout.widths, right),
        *(_line(layout.row(row), layout.widths, right) for row in rows),
    ]


def _line(cells: Sequence[str], widths: Sequence[int], right: Sequence[bool]) -> str:
    return (" " * GAP).join(pad(cell, w, r) for cell, w, r in zip(cells, widths, right, strict=True))


def pad(cell: str, width: int, right: bool) -> str:
    room = " " * max(width - cell_width(cell), 0)
    return room + cell if right else cell + room
