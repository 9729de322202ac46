"""The terminal report: tables fitted to the terminal (owner columns dropped when narrow, names cut, LAG never), the
groups in trouble first, a closing summary line, names with control characters escaped; printed through rich (with
colours) or without it (to a pipe), the same characters.

Hand-made verdicts with the long names the issue reproduced: a 184-character group name, a 52-character consumer id.
tests/cli/test_check_terminal.py runs the same layouts through `lagbot check` on Apache Kafka.
"""

from __future__ import annotations

import dataclasses
import io
import os
import random
import re

import pytest
from rich.console import Console

from lagbot.cli.fit import COLUMNS, MIN_NAME, cut, fit
from lagbot.cli.plain import by_trouble, cells, plain_output, plain_report, print_plain, shown, table_width
from lagbot.cli.terminal import print_report
from lagbot.cli.wording import cli_summary
from lagbot.core.model import Cause, CauseKind, Fact, GroupState, Member, Severity, Status
from lagbot.engine.check import CheckReport
from tests.support.verdict_factory import partition, verdict

LONG_GROUP = "payments.settlement.reconciliation." + "x" * 149  # 184 characters
CONSUMER = "consumer-orders-worker-1-5f0c2d7e-9b1a-4c3e-8d2f-7a6b"  # 52 characters
OWNER = Member(member_id=CONSUMER, client_id="orders-worker-1", host="/10.20.30.40")
WIDTHS = (80, 100, 120, 200)


def owned(topic: str, number: int, committed: int, log_end: int, status: Status = Status.OK) -> object:
    return dataclasses.replace(
        partition(topic, number, committed=committed, log_end=log_end, status=status), owner=OWNER
    )


def long_names() -> CheckReport:
    parts = tuple(
        owned("orders.events.v2", n, committed=1_000_000 * n, log_end=1_000_000 * n + 1234 * (n + 1)) for n in range(3)
    )
    lagging = verdict(LONG_GROUP, partitions=parts, total_lag=1234 * 6, severity=Severity.WARN, status=Status.WARN)
    short = verdict("billing", partitions=(owned("invoices", 0, committed=10, log_end=10),))
    return CheckReport(taken_at=0.0, verdicts=[short, lagging], clusters=["prod"])


def table(text: str) -> list[list[str]]:
    """The lines of each table in a printed report: from a header line (it starts with a column name) to the line
    before the next blank, cause or note line."""
    tables, current = [], None
    for line in text.splitlines():
        if re.match(r"^(GROUP|TOPIC)\s", line):
            current = [line]
            tables.append(current)
        elif current is not None and line and not line.startswith("  "):
            current.append(line)
        else:
            current = None
    return tables


@pytest.mark.parametrize("width", WIDTHS)
def test_the_table_fits_the_terminal_and_always_shows_lag(width: int) -> None:
    out = plain_report(long_names(), width)
    [lagging, billing] = table(out)
    for line in lagging + billing:
        assert len(line) <= width, f"{len(line)} > {width}: {line!r}"
    for lines, lags in ((lagging, ["1234", "2468", "3702"]), (billing, ["0"])):
        lag_at = lines[0].split().index("LAG")
        assert [row.split()[lag_at] for row in lines[1:]] == lags


def test_which_columns_each_width_shows() -> None:
    shown_at = {width: tuple(table(plain_report(long_names(), width))[0][0].split()) for width in (*WIDTHS, 400)}
    every = tuple(COLUMNS)
    assert shown_at[400] == every  # everything fits: Kafka's table as it is
    assert shown_at[200] == tuple(c for c in every if c not in ("CONSUMER-ID", "HOST", "GROUP"))
    assert shown_at[120] == tuple(c for c in every if c not in ("CONSUMER-ID", "HOST", "GROUP"))
    assert shown_at[100] == ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "STATUS", "LAG-SECONDS")
    assert shown_at[80] == ("TOPIC", "P", "CURRENT", "LOG-END", "LAG", "STATUS", "LAG-S")


def test_a_note_names_the_columns_left_out() -> None:
    out = plain_report(long_names(), 100)
    assert "  (GROUP, CONSUMER-ID, HOST, CLIENT-ID left out to fit 100 columns; --json has every column)" in out
    assert "left out" not in plain_report(long_names(), None)


def test_without_a_width_nothing_is_cut_or_left_out() -> None:
    out = plain_report(long_names(), None)
    [lagging, _] = table(out)
    assert lagging[0].split() == list(COLUMNS)
    assert lagging[1].split()[0] == LONG_GROUP and CONSUMER in lagging[1]


def test_a_long_topic_is_cut_in_the_middle_to_fit() -> None:
    topic = "com.example.payments.settlement." + "t" * 80 + ".v2"
    v = verdict("g", partitions=(partition(topic, 0, committed=5, log_end=9),))
    report = CheckReport(taken_at=0.0, verdicts=[v])
    [lines] = table(plain_report(report, 80))
    assert all(len(line) <= 80 for line in lines)
    cell = lines[1].split()[0]
    assert cell.startswith("com.example.") and cell.endswith("tttt.v2") and "…" in cell
    assert lines[1].split()[1:5] == ["0", "5", "9", "4"]


def test_cut() -> None:
    assert cut("orders", 10) == "orders"
    assert cut("abcdefghij", 5) == "ab…ij"
    assert cut("orders.v1.events", 9) == "orde…ents"
    assert cut("日本語日本語", 7) == "日…本語"  # wide characters: 2 columns each, never split in two
    assert all(len(cut("x" * 50, w)) == w for w in range(1, 20))


def test_numbers_are_never_cut_even_when_nothing_fits() -> None:
    v = verdict("g", partitions=(partition("t" * 40, 0, committed=123_456_789_012, log_end=123_456_799_012),))
    [lines] = table(plain_report(CheckReport(taken_at=0.0, verdicts=[v]), 40))
    row = lines[1].split()
    assert row[1:5] == ["0", "123456789012", "123456799012", "10000"]
    assert len(row[0]) == MIN_NAME


def test_groups_in_trouble_come_first_and_a_summary_closes() -> None:
    def g(name: str, severity: Severity, lag: int, state: GroupState = GroupState.STABLE) -> object:
        return verdict(name, severity=severity, total_lag=lag, lag_seconds=float(lag), state=state)

    verdicts = [
        g("a-ok", Severity.OK, 0),
        g("b-idle", Severity.OK, 0, GroupState.EMPTY),
        g("c-warn-small", Severity.WARN, 10),
        g("d-critical", Severity.CRITICAL, 5),
        g("e-warn-big", Severity.WARN, 900),
        dataclasses.replace(g("f-unreadable", Severity.OK, 0), error="describing failed", status=Status.ERR),
        g("g-page", Severity.PAGE, 1),
    ]
    order = [v.group for v in by_trouble(verdicts)]  # type: ignore[arg-type]
    assert order == ["f-unreadable", "g-page", "d-critical", "e-warn-big", "c-warn-small", "a-ok", "b-idle"]
    report = CheckReport(taken_at=0.0, verdicts=verdicts, clusters=["prod"])  # type: ignore[arg-type]
    lines = plain_report(report, 120).splitlines()
    headlines = [line.split(" ")[0] for line in lines if " (prod) · severity " in line]
    assert headlines == order
    assert lines[-1] == "7 groups: 1 unreadable, 1 page, 1 critical, 2 warn, 1 idle, 1 ok"


def test_the_summary_names_unreachable_clusters() -> None:
    v = verdict("g")
    assert cli_summary([v], {"prod": "down"}) == "1 group: 1 ok; cluster prod unreachable"
    assert cli_summary([v, v], {}) == "2 groups: 2 ok"


def test_control_characters_in_names_are_escaped_never_sent_to_the_terminal() -> None:
    hostile = "evil\x1b[2J\x1b]0;owned\x07\ttab\u202eright"
    v = verdict(hostile, partitions=(partition(hostile, 0, committed=1, log_end=3),))
    out = plain_report(CheckReport(taken_at=0.0, verdicts=[v], cluster_errors={"c\x1b": "x\x1b"}), None)
    assert "\x1b" not in out and "\x07" not in out and "\t" not in out and "\u202e" not in out
    assert shown(hostile) == "evil\\x1b[2J\\x1b]0;owned\\x07\\ttab\\u202eright"
    assert out.count(shown(hostile)) == 3  # the headline, the GROUP and TOPIC cells
    assert cells(hostile, v.partitions[0])[:2] == (shown(hostile), shown(hostile))


def test_names_are_printed_as_they_are_never_as_markup_or_emoji() -> None:
    v = verdict("team[bold]x:smile:", partitions=(partition("orders", 0, committed=1, log_end=5),))
    out = io.StringIO()
    print_report(CheckReport(taken_at=0.0, verdicts=[v]), Console(file=out, width=200, color_system="truecolor"), 200)
    assert "team[bold]x:smile:" in out.getvalue() and "😄" not in out.getvalue()


FACTS = [frozenset(), frozenset(Fact), frozenset({Fact.SLOW_OWNER}), frozenset({Fact.ONGOING, Fact.SCALABLE})]
"""Facts that make every shipped remediation answer some kind, and none: the lines with and without a remedy."""
TRICKY = ["", "plain", "tab\there", "two\nlines", "a :smile: b", "[bold]m[/bold]", "日本語 " * 30, "x" * 300, "ü" * 99]


def random_report(rng: random.Random) -> CheckReport:
    verdicts = []
    for _ in range(rng.randint(0, 5)):
        parts = []
        for number in range(rng.randint(0, 6)):
            committed = rng.choice([None, rng.randint(0, 10 ** rng.randint(0, 12))])
            p = partition(
                rng.choice(["t", "topic-é", "日本語", "x" * rng.randint(1, 90)]),
                number,
                committed=committed,
                log_end=(committed or 0) + rng.randint(0, 10**6),
                lag_seconds=rng.choice([None, rng.random() * 1e5]),
                status=rng.choice(list(Status)),
            )
            if rng.random() < 0.5:
                member = Member(f"m-{rng.randint(0, 10**40)}", rng.choice(["c", "客户"]), "/10.0.0.1")
                p = dataclasses.replace(p, owner=member)
            parts.append(p)
        v = verdict(
            rng.choice(["g", "group-" * rng.randint(1, 30), "ü", *TRICKY[:5]]) or "g",
            partitions=tuple(parts),
            severity=rng.choice(list(Severity)),
            state=rng.choice(list(GroupState)),
        )
        v = dataclasses.replace(
            v,
            error=rng.choice([None, None, None, *TRICKY]) or None,
            causes=tuple(
                Cause(rng.choice(["k:v:", *CauseKind]), rng.choice(TRICKY), 0.5, n, facts=rng.choice(FACTS))
                for n in range(rng.randint(0, 3))
            ),
        )
        verdicts.append(v)
    errors = {rng.choice(["prod", "tab\tcluster"]): rng.choice(TRICKY) for _ in range(rng.randint(0, 2))}
    return CheckReport(taken_at=0.0, verdicts=verdicts, cluster_errors=errors)


def test_printed_through_rich_or_not_the_same_characters_and_every_table_line_fits() -> None:
    rng = random.Random(7)
    for _ in range(300):
        report = random_report(rng)
        width = rng.choice([80, 100, 120, 200, None])
        plain = plain_report(report, width)
        through_rich, coloured = io.StringIO(), io.StringIO()
        print_report(report, Console(file=through_rich, width=width or 80, color_system=None), width)
        print_report(report, Console(file=coloured, width=width or 80, color_system="truecolor"), width)
        assert through_rich.getvalue() == plain
        assert re.sub(r"\x1b\[[0-9;]*m", "", coloured.getvalue()) == plain
        if width is not None:
            for lines in table(plain):
                widest_numbers = 12 + 7 + 12 + 12 + 7 + 6 + 12 + 2 * 6 + MIN_NAME
                assert all(len(line) <= max(width, widest_numbers) for line in lines)


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
    {"COLUMNS": "100"},
    {"COLUMNS": "wide"},
    {"NO_COLOR": "1"},
]


@pytest.mark.parametrize("tty", [False, True], ids=["pipe", "terminal"])
@pytest.mark.parametrize("environ", ENVIRONS, ids=lambda e: ",".join(f"{k}={v}" for k, v in e.items()) or "none")
def test_plain_output_where_rich_would_print_no_colours(
    monkeypatch: pytest.MonkeyPatch, tty: bool, environ: dict[str, str]
) -> None:
    for name in RICH_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    stream = Stream(tty)
    if plain_output(stream, os.environ):
        assert Console(file=stream).color_system is None
    else:
        assert Console(file=stream).color_system is not None


def test_table_width_is_columns_else_none_for_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert table_width(Stream(False), os.environ) is None
    monkeypatch.setenv("COLUMNS", "100")
    assert table_width(Stream(False), os.environ) == 100
    monkeypatch.setenv("COLUMNS", "wide")
    assert table_width(Stream(False), os.environ) is None


def test_print_plain_writes_plain_report() -> None:
    stream = Stream(False)
    print_plain(long_names(), stream, 120)
    assert stream.getvalue() == plain_report(long_names(), 120)


def test_fit_keeps_every_column_when_it_fits() -> None:
    rows = [cells("g", partition("t", 0, committed=1, log_end=2))]
    layout = fit(rows, 200)
    assert layout.hidden == () and layout.headers == COLUMNS
