"""The terminal's partition table, laid out by lagbot, is the table rich's `Table` printed, character for character.

The reference is rich's own Table with the layout the terminal has always used (box=None, numbers right-justified,
bold header, coloured status), fed the same cells; compared as plain text and with colours, at several widths,
for random partitions (wide characters, unknown offsets, owners, every status).
"""

from __future__ import annotations

import dataclasses
import io
import os
import random

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lagbot.cli.plain import cells, plain_width, print_plain
from lagbot.cli.terminal import (
    _STATUS_STYLE,
    COLUMNS,
    NUMERIC,
    partition_text,
    print_group,
    print_partitions,
    print_report,
    print_rich,
    wide,
)
from lagbot.core.model import Cause, GroupVerdict, Member, Status
from lagbot.engine.check import CheckReport
from tests.support.verdict_factory import partition, verdict


def rich_table(v: GroupVerdict) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column in COLUMNS:
        table.add_column(column, justify="right" if column in NUMERIC else "left", no_wrap=True)
    for p in v.partitions:
        row: list[str | Text] = list(cells(v.group, p))
        row[COLUMNS.index("STATUS")] = Text(p.status.name, style=_STATUS_STYLE.get(p.status, "red"))
        table.add_row(*row)
    return table


def random_verdict(rng: random.Random) -> GroupVerdict:
    parts = []
    for number in range(rng.randint(0, 12)):
        committed = rng.choice([None, rng.randint(0, 10 ** rng.randint(0, 12))])
        p = partition(
            rng.choice(["t", "topic-é", "日本語", "x" * rng.randint(1, 30)]),
            number,
            committed=committed,
            log_end=(committed or 0) + rng.randint(0, 10**6),
            lag_seconds=rng.choice([None, rng.random() * 1e5]),
            status=rng.choice(list(Status)),
        )
        if rng.random() < 0.5:
            owner = Member(
                member_id=f"m-{rng.randint(0, 10**9)}", client_id=rng.choice(["c", "客户"]), host="/10.0.0.1"
            )
            p = dataclasses.replace(p, owner=owner)
        parts.append(p)
    return verdict(rng.choice(["g", "group-" * rng.randint(1, 8), "ü"]), partitions=tuple(parts))


def printed(renderable: object, *, width: int, colours: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=colours, color_system="truecolor" if colours else None)
    if isinstance(renderable, Table):
        console.print(renderable)
    else:
        assert isinstance(renderable, GroupVerdict)
        print_partitions(renderable, console)
    return out.getvalue()


def test_the_table_is_rich_tables_layout_plain_and_coloured() -> None:
    rng = random.Random(15)
    compared = 0
    for _ in range(150):
        v = random_verdict(rng)
        for width in (240, 120, 70):
            if partition_text(v, width) is None:
                continue
            for colours in (False, True):
                assert printed(v, width=width, colours=colours) == printed(rich_table(v), width=width, colours=colours)
                compared += 1
    assert compared > 300


def test_a_table_wider_than_the_console_is_left_to_rich() -> None:
    wide = verdict("g" * 200, partitions=(partition("t" * 60, 0, committed=1, log_end=2),))
    assert partition_text(wide, 240) is None
    out = io.StringIO()
    print_group(wide, Console(file=out, width=240, no_color=True))
    lines = out.getvalue().splitlines()
    assert lines[1].startswith("GROUP")
    assert all(len(line) <= 240 for line in lines[1:3])


def test_names_are_printed_as_they_are_never_as_markup() -> None:
    v = verdict("team[bold]x:smile:", partitions=(partition("orders", 0, committed=1, log_end=5),))
    out = io.StringIO()
    print_group(v, Console(file=out, width=240, no_color=True))
    row = out.getvalue().splitlines()[2]
    assert row.split()[:6] == ["team[bold]x:smile:", "orders", "0", "1", "5", "4"]


TRICKY = [
    "",
    "plain words",
    "tab\there",
    "two\nlines",
    "bell\x07 and cr\r",
    "a :smile: b",
    "ratio 3:4:5",
    "日本語 " * 30,
    "[bold]markup[/bold]",
    "x" * 300,
    "ends with spaces   ",
    "ü" * 120,
]


def random_report(rng: random.Random) -> CheckReport:
    verdicts = []
    for _ in range(rng.randint(0, 5)):
        v = random_verdict(rng)
        v = dataclasses.replace(
            v,
            group=rng.choice([v.group, *TRICKY[:6]]) or "g",
            error=rng.choice([None, None, None, *TRICKY]),
            severity_reason=rng.choice(["hand-made", *TRICKY]),
            causes=tuple(
                Cause(rng.choice(["stalled", "k:v:"]), rng.choice(TRICKY), 0.5, rng.choice([None, "scale", *TRICKY]), n)
                for n in range(rng.randint(0, 3))
            ),
        )
        verdicts.append(v)
    errors = {rng.choice(["prod", "tab\tcluster"]): rng.choice(TRICKY) for _ in range(rng.randint(0, 2))}
    return CheckReport(taken_at=0.0, verdicts=verdicts, cluster_errors=errors)


def test_a_report_without_colours_is_what_rich_prints_character_for_character() -> None:
    rng = random.Random(7)
    for _ in range(300):
        report = random_report(rng)
        width = rng.choice([240, 300])
        fast, reference = io.StringIO(), io.StringIO()
        print_report(report, Console(file=fast, width=width, color_system=None))
        print_rich(report, Console(file=reference, width=width, color_system=None))
        assert fast.getvalue() == reference.getvalue()


class Stream(io.StringIO):
    """A text stream that is, or is not, a terminal."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


RICH_ENVIRONMENT = ("FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS", "LINES", "TERM", "NO_COLOR", "COLORTERM")
ENVIRONS = [
    {},
    {"FORCE_COLOR": ""},
    {"FORCE_COLOR": "1"},
    {"TTY_COMPATIBLE": "0"},
    {"TTY_COMPATIBLE": "1"},
    {"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"},
    {"TTY_COMPATIBLE": "2"},
    {"COLUMNS": "100"},
    {"COLUMNS": "300"},
    {"COLUMNS": "wide"},
    {"TERM": "dumb"},
    {"NO_COLOR": "1"},
]


@pytest.mark.parametrize("tty", [False, True], ids=["pipe", "terminal"])
@pytest.mark.parametrize("environ", ENVIRONS, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()) or "none")
def test_plain_width_is_what_rich_chooses(monkeypatch: pytest.MonkeyPatch, tty: bool, environ: dict[str, str]) -> None:
    """Where lagbot prints without rich, rich would print without colours, at that width; and lagbot does so
    wherever rich would, but for a dumb terminal (left to rich)."""
    for name in RICH_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    stream = Stream(tty)
    console = wide(Console(file=stream))
    width = plain_width(stream, os.environ)
    if width is not None:
        assert console.color_system is None and width == console.width
    elif not (tty and environ.get("TERM") == "dumb"):
        assert console.color_system is not None


def test_a_report_printed_without_rich_is_what_rich_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in RICH_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    rng = random.Random(11)
    for _ in range(200):
        report = random_report(rng)
        fast, reference = Stream(False), Stream(False)
        monkeypatch.setenv("COLUMNS", str(rng.choice([80, 240, 300])))
        width = plain_width(fast, os.environ)
        assert width is not None
        print_plain(report, fast, width)
        print_report(report, Console(file=reference))
        assert fast.getvalue() == reference.getvalue()
