"""The readers of what Slack sends a listener (lagbot.slack.payloads), on payloads as Slack sends them and as bolt
hands them over (`command`, `action`, `view`: bolt's own extraction from the request's body); and a bad or missing
field read as empty, never an exception. Pure: no app, no network."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest
from slack_bolt.request.payload_utils import to_action, to_command, to_view

from lagbot.core import messages
from lagbot.core.model import Status
from lagbot.slack.payloads import (
    Click,
    Denial,
    ShownMessage,
    SlashCommand,
    clicked_message,
    deny_metadata,
    read_click,
    read_command,
    read_denial,
    read_shown,
)
from lagbot.slack.render import DENY_CALLBACK, TABLE_COLUMNS, partition_table, table_rows
from tests.support.verdicts import member, partition, verdict

USER = "U0APPROVER"
TRIGGER = "13345224609.738474920.8088930838d88f008e0"
RESPONSE_URL = "https://hooks.slack.com/actions/T0SHOP/1234/abcd"
BUTTONS: list[dict[str, Any]] = [
    {"type": "section", "block_id": "s1", "text": {"type": "mrkdwn", "text": "*Restart orders*"}},
    {
        "type": "actions",
        "block_id": "a1",
        "elements": [
            {"type": "button", "action_id": "approve:p1", "value": "p1", "text": {"type": "plain_text", "text": "Go"}},
            {"type": "button", "action_id": "deny:p1", "value": "p1", "text": {"type": "plain_text", "text": "Deny"}},
        ],
    },
]


def slash_command_form(**fields: str) -> dict[str, str]:
    """A `/lag` request's form body as Slack posts it, parsed as bolt parses a form."""
    sent = {
        "token": "unused-verification-token",
        "team_id": "T0SHOP",
        "team_domain": "shop",
        "channel_id": "C0ALERTS",
        "channel_name": "alerts",
        "user_id": USER,
        "user_name": "ana",
        "command": "/lag",
        "text": "group prod orders-consumer",
        "api_app_id": "A0LAGBOT",
        "is_enterprise_install": "false",
        "response_url": "https://hooks.slack.com/commands/T0SHOP/1/xyz",
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
    }
    sent.update(fields)
    return dict(parse_qsl(urlencode(sent), keep_blank_values=True))


def block_actions(action_id: str = "approve:p1", **fields: Any) -> dict[str, Any]:
    """A click on a proposal message's button in a channel, as Slack sends its payload."""
    body: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": USER, "username": "ana", "name": "ana", "team_id": "T0SHOP"},
        "api_app_id": "A0LAGBOT",
        "token": "unused-verification-token",
        "container": {
            "type": "message",
            "message_ts": "1700000000.000200",
            "channel_id": "C0ALERTS",
            "is_ephemeral": False,
            "thread_ts": "1700000000.000100",
        },
        "trigger_id": TRIGGER,
        "team": {"id": "T0SHOP", "domain": "shop"},
        "is_enterprise_install": False,
        "channel": {"id": "C0ALERTS", "name": "alerts"},
        "message": {
            "type": "message",
            "subtype": "bot_message",
            "text": "Restart orders",
            "ts": "1700000000.000200",
            "bot_id": "B0LAGBOT",
            "thread_ts": "1700000000.000100",
            "blocks": BUTTONS,
        },
        "state": {"values": {}},
        "response_url": RESPONSE_URL,
        "actions": [
            {
                "action_id": action_id,
                "block_id": "a1",
                "text": {"type": "plain_text", "text": "Go", "emoji": True},
                "value": "p1",
                "style": "primary",
                "type": "button",
                "action_ts": "1700000001.000300",
            }
        ],
    }
    body.update(fields)
    return body


def view_submission(reason: object, metadata: str) -> dict[str, Any]:
    """The deny modal submitted, as Slack sends its payload (no message, no response_url)."""
    return {
        "type": "view_submission",
        "team": {"id": "T0SHOP", "domain": "shop"},
        "user": {"id": USER, "username": "ana", "name": "ana", "team_id": "T0SHOP"},
        "api_app_id": "A0LAGBOT",
        "token": "unused-verification-token",
        "trigger_id": "13345224609.738474920.8088930838d88f008e1",
        "view": {
            "id": "V0DENY",
            "team_id": "T0SHOP",
            "type": "modal",
            "callback_id": DENY_CALLBACK,
            "private_metadata": metadata,
            "state": {"values": {"reason": {"text": {"type": "plain_text_input", "value": reason}}}},
            "hash": "1700000002.abcd",
            "title": {"type": "plain_text", "text": "Deny"},
            "app_id": "A0LAGBOT",
            "bot_id": "B0LAGBOT",
        },
        "response_urls": [],
        "is_enterprise_install": False,
    }


SHOWN = ShownMessage(
    ts="1700000000.000200",
    text="Restart orders",
    blocks=tuple(BUTTONS),
    channel="C0ALERTS",
    ephemeral=False,
    response_url=RESPONSE_URL,
)


# -- slash commands ----------------------------------------------------------------------------------------------


def test_a_slash_command_is_read_from_what_bolt_gives_as_command() -> None:
    command = to_command(slash_command_form())
    assert command is not None
    assert read_command(command) == SlashCommand("group prod orders-consumer", USER, "C0ALERTS")


def test_a_slash_command_keeps_its_text_as_typed() -> None:
    text = "  remediate prod <!channel> *bold* `x`  "
    command = to_command(slash_command_form(text=text))
    assert command is not None
    assert read_command(command).text == text


@pytest.mark.parametrize(
    "command",
    [{"command": "/lag"}, {"command": "/lag", "text": None, "user_id": 7, "channel_id": ["C1"]}],
    ids=["missing", "not-strings"],
)
def test_a_slash_command_field_missing_or_not_a_string_reads_empty(command: dict[str, object]) -> None:
    assert read_command(command) == SlashCommand("", "", "")


# -- button clicks -----------------------------------------------------------------------------------------------


def test_a_click_is_read_from_what_bolt_gives_as_action_and_the_body() -> None:
    body = block_actions()
    action = to_action(body)
    assert action is not None and action["action_id"] == "approve:p1"  # bolt's `action`: the clicked button
    assert read_click(action, body) == Click(
        proposal_id="p1",
        user=USER,
        trigger_id=TRIGGER,
        response_url=RESPONSE_URL,
        shown=SHOWN,
    )


def test_a_click_on_an_ephemeral_message_carries_no_message() -> None:
    """Slack sends no `message` for a click on an ephemeral message: it is edited through the response_url only."""
    body = block_actions(container={"type": "message", "message_ts": "1.2", "channel_id": "C1", "is_ephemeral": True})
    del body["message"]
    action = to_action(body)
    assert action is not None
    click = read_click(action, body)
    assert (click.proposal_id, click.response_url, click.shown) == ("p1", RESPONSE_URL, None)


CLICKED = Click("p1", USER, TRIGGER, RESPONSE_URL, SHOWN)


@pytest.mark.parametrize(
    ("action", "fields", "expected"),
    [
        pytest.param({"action_id": "approve:p1"}, {}, replace(CLICKED, proposal_id=""), id="no-value"),
        pytest.param({"value": 7}, {}, replace(CLICKED, proposal_id=""), id="value-not-a-string"),
        pytest.param({"value": "p1"}, {"user": None}, replace(CLICKED, user=""), id="no-user"),
        pytest.param({"value": "p1"}, {"user": {"id": 5}}, replace(CLICKED, user=""), id="user-id-not-a-string"),
        pytest.param({"value": "p1"}, {"user": USER}, replace(CLICKED, user=""), id="user-not-an-object"),
        pytest.param(
            {"value": "p1"},
            {"trigger_id": None, "response_url": 3},
            replace(CLICKED, trigger_id="", response_url="", shown=replace(SHOWN, response_url="")),
            id="trigger-and-url-not-strings",
        ),
        pytest.param({"value": "p1"}, {"message": "hello"}, replace(CLICKED, shown=None), id="message-not-an-object"),
        pytest.param(
            {"value": "p1"},
            {"container": [1], "message": {"ts": 1.5, "text": None, "blocks": ["x", BUTTONS[1], None]}},
            replace(CLICKED, shown=ShownMessage("", "", (BUTTONS[1],), "", False, RESPONSE_URL)),
            id="message-fields-of-other-types",
        ),
        pytest.param(
            {"value": "p1"},
            {"message": {"blocks": {"type": "actions"}}},
            replace(CLICKED, shown=ShownMessage("", "", (), "C0ALERTS", False, RESPONSE_URL)),
            id="blocks-not-a-list",
        ),
    ],
)
def test_a_click_field_missing_or_of_another_type_reads_empty(
    action: dict[str, object], fields: dict[str, object], expected: Click
) -> None:
    assert read_click(action, block_actions(**fields)) == expected


# -- the deny modal ----------------------------------------------------------------------------------------------


def test_a_denial_is_read_from_what_bolt_gives_as_view_with_the_clicked_message_from_its_metadata() -> None:
    clicked = block_actions("deny:p1")
    body = view_submission("  too risky at peak  ", deny_metadata("p1", clicked))
    view = to_view(body)
    assert view is not None and view["callback_id"] == DENY_CALLBACK  # bolt's `view`: the submitted modal
    assert read_denial(view, body) == Denial(reason="too risky at peak", user=USER, proposal_id="p1", shown=SHOWN)


def test_the_clicked_message_comes_back_from_the_metadata_as_the_click_carried_it() -> None:
    for fields in ({}, {"container": {"channel_id": "C1", "is_ephemeral": True}}, {"response_url": None}):
        clicked = block_actions("deny:p1", **fields)
        assert read_shown(clicked_message(deny_metadata("p1", clicked))) == read_shown(clicked)


def test_a_modal_whose_metadata_is_a_bare_proposal_id_denies_without_a_message() -> None:
    body = view_submission("no", "p1")
    view = to_view(body)
    assert view is not None
    assert read_denial(view, body) == Denial(reason="no", user=USER, proposal_id="p1", shown=None)


@pytest.mark.parametrize(
    ("reason", "expected"), [("", ""), ("  \n\t ", ""), (None, ""), (42, ""), (["why"], ""), (" why ", "why")]
)
def test_a_reason_blank_or_not_a_string_reads_empty(reason: object, expected: str) -> None:
    body = view_submission(reason, "p1")
    assert read_denial(body["view"], body).reason == expected


@pytest.mark.parametrize(
    "view",
    [{}, {"state": None}, {"state": {"values": []}}, {"private_metadata": None}, {"private_metadata": 5}],
    ids=["empty", "state-null", "values-not-an-object", "metadata-null", "metadata-not-a-string"],
)
def test_a_submission_of_another_shape_reads_empty(view: dict[str, object]) -> None:
    denial = read_denial(view, {"user": {"id": USER}})
    assert denial.reason == "" and denial.shown is None
    assert denial.proposal_id == str(view.get("private_metadata") or "")


# -- raw-text cells ----------------------------------------------------------------------------------------------


def raw(text: str) -> dict[str, str]:
    return {"type": "raw_text", "text": text}


def test_the_partition_table_renders_the_same_json_with_slack_sdks_raw_text_cells() -> None:
    """The JSON the table was sent as when its cells were hand-made dicts, byte for byte (keys sorted): a hostile
    topic name shown escaped, '-' where a value is unknown, the number columns right-aligned."""
    v = verdict(
        [
            partition(0, committed=10, log_end=50, status=Status.STALL, owner=member(1, 0), topic="or\x1bders\u202e"),
            partition(1, committed=None, log_end=7),
        ]
    )
    right = {"align": "right"}
    before = {
        "type": "table",
        "column_settings": [None, right, right, right, right, None, None],
        "rows": [
            [raw(c) for c in ("partition", "committed", "log-end", "lag", "lag s", "owner", "status")],
            [
                raw(c)
                for c in ("or\\x1bders\\u202e/0", "10", "50", "40", "-", "client-1@10.0.0.1 (member m-1)", "STALL")
            ],
            [raw(c) for c in ("orders/1", "-", "7", "-", "-", "-", "OK")],
        ],
    }
    after = partition_table(v).to_dict()
    assert after == before
    assert json.dumps(after, sort_keys=True) == json.dumps(before, sort_keys=True)


def test_the_summary_rows_empty_cells_show_a_mark_slack_accepts() -> None:
    """Beyond 99 partitions the last row sums the rest (the least lagging), its other cells marked empty: Slack
    refuses a raw_text cell of no text (at least one character; the emulator refuses it as Slack does), so each shows
    the empty cell's mark."""
    v = verdict([partition(i, committed=0, log_end=1_000 + i, topic="<!here>*t*") for i in range(150)])
    rows = [list(TABLE_COLUMNS), *table_rows(v)]
    before = [[{"type": "raw_text", "text": messages.visible(cell)} for cell in row] for row in rows]
    after = partition_table(v).to_dict()
    assert after["rows"] == before
    assert before[-1] == [raw("… 52 more"), raw("-"), raw("-"), raw(str(sum(1_000 + i for i in range(52)))),
                          raw("-"), raw("-"), raw("-")]  # fmt: skip
    assert before[1][0] == raw("<!here>*t*/149")
