"""The plain-text channel transcript the demo prints: markup removed, tables aligned, only real edits shown."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from lagbot.devkit.transcript import ChannelWatcher, message_lines, plain, table_lines


@pytest.mark.parametrize(
    ("mrkdwn", "text"),
    [
        ("*WARN* `orders` on prod", "WARN orders on prod"),
        ("→ _scale_", "→ scale"),
        ("a_b_c stays, user_events too", "a_b_c stays, user_events too"),
        ("Approved by <@U0ONCALL>: running", "Approved by @U0ONCALL: running"),
        (
            "see <https://example.com/x|the runbook> or <https://example.com/y>",
            "see the runbook or https://example.com/y",
        ),
        ("in <#C123|alerts>", "in alerts"),
        ("`a&lt;b&gt;` &amp; more", "a<b> & more"),
        (":white_check_mark: done :not_a_known_one:", "✔ done :not_a_known_one:"),
        ("```\ntable\n```", "\ntable\n"),
        ("~old~ new", "old new"),
    ],
)
def test_plain(mrkdwn: str, text: str) -> None:
    assert plain(mrkdwn) == text


def cells(*row: str) -> list[dict[str, str]]:
    return [{"type": "raw_text", "text": c} for c in row]


def test_table_lines_align_columns_and_right_align_where_the_block_says() -> None:
    right = {"align": "right"}
    block = {
        "type": "table",
        "rows": [cells("partition", "lag", "owner"), cells("orders/1", "1200", "w-1"), cells("orders/10", "7", "-")],
        "column_settings": [None, right, None],
    }
    assert table_lines(block) == [
        "partition   lag  owner",
        "orders/1   1200  w-1",
        "orders/10     7  -",
    ]


def test_table_lines_pad_short_rows_and_skip_an_empty_table() -> None:
    assert table_lines({"rows": [cells("a", "b"), cells("long")]}) == ["a     b", "long"]
    assert table_lines({"rows": []}) == []


def test_message_lines_render_blocks_rather_than_their_fallback_text() -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": "*Partitions*\nsecond line"}},
        {"type": "table", "rows": [cells("p", "lag"), cells("t/0", "5")]},
        {"type": "divider"},
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": "state *Stable*"}, {"type": "plain_text", "text": "x"}],
        },
        {
            "type": "actions",
            "elements": [
                {"type": "button", "text": {"type": "plain_text", "text": "Scale w 1 -> 4"}, "action_id": "approve:1"},
                {"type": "button", "text": {"type": "plain_text", "text": "Deny…"}, "action_id": "deny:1"},
            ],
        },
    ]
    assert message_lines("fallback ```table```", blocks) == [
        "Partitions",
        "second line",
        "p    lag",
        "t/0  5",
        "-" * 20,
        "state Stable · x",
        "[ Scale w 1 -> 4 ]  [ Deny… ]",
    ]


def test_message_lines_fall_back_to_text_and_name_files() -> None:
    assert message_lines("*hello*\n\nworld", []) == ["hello", "world"]
    assert message_lines("", [], [{"id": "F1", "name": "lag.png", "title": "Lag, 24 h"}]) == ["[file: Lag, 24 h]"]


@dataclass
class Msg:
    ts: str
    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    thread_ts: str | None = None
    files: list[dict[str, Any]] = field(default_factory=list)


def test_the_watcher_reports_posts_replies_and_only_edits_that_change_what_is_shown() -> None:
    history: list[Msg] = []
    watcher = ChannelWatcher(lambda: history)
    assert watcher.poll(1.0) == []

    root = Msg("100.1", "*WARN* lag 400")
    history.append(root)
    history.append(Msg("100.2", "table", thread_ts="100.1"))
    events = watcher.poll(2.0)
    assert [(e.kind, e.ts, e.thread_ts, e.lines, e.at) for e in events] == [
        ("posted", "100.1", None, ("WARN lag 400",), 2.0),
        ("reply", "100.2", "100.1", ("table",), 2.0),
    ]
    assert watcher.poll(3.0) == []

    root.text = "WARN lag 400"  # edited, but it reads the same: not news
    assert watcher.poll(4.0) == []
    root.text = "*WARN* lag 700"
    [edit] = watcher.poll(5.0)
    assert (edit.kind, edit.ts, edit.lines) == ("edited", "100.1", ("WARN lag 700",))
