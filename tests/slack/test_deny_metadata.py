"""The deny modal's private_metadata (the clicked message, so the denial can retire it) and the reason read from a
submission of any shape: pure, no app."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lagbot.slack.payloads import MAX_PRIVATE_METADATA, action_value, clicked_message, deny_metadata, reason

CLICK: dict[str, Any] = {
    "actions": [{"action_id": "deny:p1", "value": "p1"}],
    "container": {"channel_id": "C1", "is_ephemeral": False, "message_ts": "1.2"},
    "message": {"ts": "1.2", "text": "proposal", "blocks": [{"type": "section"}, {"type": "actions", "elements": []}]},
    "response_url": "https://hooks.example/r",
}


def test_the_clicked_message_rides_in_the_metadata_and_comes_back() -> None:
    text = deny_metadata("p1", CLICK)
    assert len(text) <= MAX_PRIVATE_METADATA
    back = clicked_message(text)
    assert action_value(back) == "p1"
    assert back["message"] == CLICK["message"]
    assert back["container"] == {"channel_id": "C1", "is_ephemeral": False}
    assert back["response_url"] == "https://hooks.example/r"


def test_a_message_too_big_for_the_metadata_leaves_only_the_proposal_id() -> None:
    big = {**CLICK, "message": {**CLICK["message"], "text": "x" * MAX_PRIVATE_METADATA}}
    text = deny_metadata("p1", big)
    assert json.loads(text) == {"actions": [{"value": "p1"}]}
    assert "message" not in clicked_message(text)


@pytest.mark.parametrize("metadata", ["p1", "", None, "[]", '{"actions": []}', '{"actions": "x"}', "{", 7])
def test_any_other_metadata_is_a_bare_proposal_id(metadata: object) -> None:
    back = clicked_message(metadata)
    assert action_value(back) == str(metadata or "") and "message" not in back


@pytest.mark.parametrize(
    ("body", "typed"),
    [
        ({"view": {"state": {"values": {"reason": {"text": {"value": " why "}}}}}}, " why "),
        ({"view": {"state": {"values": {"reason": {"text": {"value": None}}}}}}, ""),
        ({"view": {"state": {"values": {"reason": []}}}}, ""),
        ({"view": {"state": "x"}}, ""),
        ({"view": [1, 2]}, ""),
        ({"view": None}, ""),
        ({}, ""),
    ],
)
def test_the_reason_is_read_from_a_submission_of_any_shape(body: dict[str, Any], typed: str) -> None:
    assert reason(body.get("view")) == typed
