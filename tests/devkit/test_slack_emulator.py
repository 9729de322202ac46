"""The Slack Web API emulator, driven by the real slack_sdk WebClient over HTTP on loopback."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler, ServerErrorRetryHandler

from lagbot.devkit.emulator import SlackEmulator

pytestmark = pytest.mark.integration

TOKEN = "xoxb-lagbot-test"


@pytest.fixture
def slack() -> Iterator[SlackEmulator]:
    with SlackEmulator(
        token=TOKEN,
        users={"U1": {"name": "ana", "real_name": "Ana Oncall"}},
        usergroups={"S1": ["U1", "U2"]},
    ).start() as running:
        yield running


def client(slack: SlackEmulator, token: str = TOKEN, **kwargs: Any) -> WebClient:
    return WebClient(token=token, base_url=slack.api_url, **kwargs)


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def test_requires_the_bot_token(slack: SlackEmulator) -> None:
    assert client(slack).auth_test()["user_id"] == "U0LAGBOT"
    with pytest.raises(SlackApiError) as wrong:
        client(slack, token="xoxb-someone-else").auth_test()
    assert wrong.value.response["error"] == "invalid_auth"
    with pytest.raises(SlackApiError) as missing:
        WebClient(base_url=slack.api_url).auth_test()
    assert missing.value.response["error"] == "not_authed"
    assert [(c.method, c.token, c.response["ok"]) for c in slack.calls_to("auth.test")] == [  # type: ignore[index]
        ("auth.test", TOKEN, True),
        ("auth.test", "xoxb-someone-else", False),
        ("auth.test", None, False),
    ]


def test_thread_and_edit_in_place(slack: SlackEmulator) -> None:
    web = client(slack)
    root = web.chat_postMessage(channel="C1", text="lag on orders", blocks=[section("*orders* lag 4.2 M")])
    reply = web.chat_postMessage(channel="C1", thread_ts=root["ts"], text="table", blocks=[section("p0 ...")])
    web.chat_update(channel="C1", ts=root["ts"], text="resolved", blocks=[section(":white_check_mark: resolved")])

    [top] = slack.channel("C1")
    assert (top.ts, top.text, top.edits) == (root["ts"], "resolved", 1)
    assert top.blocks == [section(":white_check_mark: resolved")]
    assert [m.ts for m in slack.thread("C1", root["ts"])] == [reply["ts"]]
    assert [c.method for c in slack.calls] == ["chat.postMessage", "chat.postMessage", "chat.update"]
    with pytest.raises(SlackApiError) as missing:
        web.chat_update(channel="C1", ts="1.000001", text="x")
    assert missing.value.response["error"] == "message_not_found"
    with pytest.raises(SlackApiError) as no_thread:
        web.chat_postMessage(channel="C1", thread_ts="9.000009", text="x")
    assert no_thread.value.response["error"] == "thread_not_found"


@pytest.mark.parametrize(
    ("blocks", "pointer"),
    [
        ([section("x")] * 51, "/blocks"),
        ([section("x" * 3001)], "/blocks/0/text/text"),
        ([{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}], "/blocks/0/text/text"),
        ([{"type": "header", "text": {"type": "mrkdwn", "text": "h"}}], "/blocks/0/text/type"),
        (
            [{"type": "actions", "elements": [
                {"type": "button", "text": {"type": "plain_text", "text": "b" * 76}, "action_id": "a"}]}],
            "/blocks/0/elements/0/text/text",
        ),
        (
            [{"type": "actions", "elements": [
                {"type": "button", "text": {"type": "plain_text", "text": "ok"}, "value": "v" * 2001}]}],
            "/blocks/0/elements/0/value",
        ),
        ([{"type": "table", "rows": [[{"type": "raw_text", "text": "c"}]] * 101}], "/blocks/0/rows"),
        ([{"type": "table", "rows": [[{"type": "raw_text", "text": "c"}] * 21]}], "/blocks/0/rows/0"),
        ([{"type": "table", "rows": [[{"type": "raw_text", "text": "c"}]]}] * 2, "/blocks"),
        ([{"type": "table", "rows": [[{"type": "raw_text", "text": "c"}, {"type": "raw_text", "text": ""}]]}],
         "/blocks/0/rows/0/1/text"),
        ([{"type": "carousel"}], "/blocks/0/type"),
        ([{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}], "/blocks/0/fields"),
    ],
    ids=["51-blocks", "section-3001", "header-151", "header-mrkdwn", "button-text-76", "button-value-2001",
         "table-101-rows", "table-21-cells", "two-tables", "empty-cell", "unknown-type", "11-fields"],
)  # fmt: skip
def test_block_kit_limits_answer_invalid_blocks(slack: SlackEmulator, blocks: list[Any], pointer: str) -> None:
    with pytest.raises(SlackApiError) as rejected:
        client(slack).chat_postMessage(channel="C1", text="t", blocks=blocks)
    response = rejected.value.response
    assert response["error"] == "invalid_blocks"
    assert any(f"[json-pointer:{pointer}]" in e for e in response["errors"])
    assert response["response_metadata"]["messages"][0].startswith("[ERROR] ")
    assert slack.channel("C1") == []


def test_limits_are_inclusive(slack: SlackEmulator) -> None:
    button = {"type": "button", "text": {"type": "plain_text", "text": "b" * 75}, "value": "v" * 2000}
    blocks = [section("x" * 3000), {"type": "header", "text": {"type": "plain_text", "text": "h" * 150}}]
    blocks += [{"type": "actions", "elements": [button]}]
    blocks += [{"type": "table", "rows": [[{"type": "raw_text", "text": "c"}] * 20] * 100}]
    blocks += [section("y")] * (50 - len(blocks))
    assert client(slack).chat_postMessage(channel="C1", text="t", blocks=blocks)["ok"]


def test_message_metadata_is_kept_and_read_back_only_when_asked(slack: SlackEmulator) -> None:
    web = client(slack)
    meta = {"event_type": "lagbot_message", "event_payload": {"post": "k1.post_root"}}
    root = web.chat_postMessage(channel="C1", text="root", metadata=meta)
    reply = web.chat_postMessage(channel="C1", thread_ts=root["ts"], text="reply")
    assert float(root["ts"]) < float(reply["ts"])  # epoch microseconds, increasing

    [shown] = web.conversations_history(channel="C1", include_all_metadata=True)["messages"]
    assert (shown["ts"], shown["text"], shown["metadata"]) == (root["ts"], "root", meta)
    assert "metadata" not in web.conversations_history(channel="C1")["messages"][0]
    thread = web.conversations_replies(channel="C1", ts=root["ts"], include_all_metadata=True)["messages"]
    assert [(m["text"], m.get("metadata"), m.get("thread_ts")) for m in thread] == [
        ("root", meta, None),  # the parent first, as Slack answers
        ("reply", None, root["ts"]),
    ]
    for bad in [{"event_payload": {}}, {"event_type": "has space"}, "not json"]:
        with pytest.raises(SlackApiError) as refused:
            web.chat_postMessage(channel="C1", text="x", metadata=bad)
        assert refused.value.response["error"] == "invalid_metadata_format"
    with pytest.raises(SlackApiError) as missing:
        web.conversations_replies(channel="C1", ts="1.000001")
    assert missing.value.response["error"] == "thread_not_found"


def test_history_is_newest_first_paged_by_cursor_and_bounded_by_oldest(slack: SlackEmulator) -> None:
    web = client(slack)
    posted = [web.chat_postMessage(channel="C1", text=f"m{n}")["ts"] for n in range(5)]
    web.chat_postMessage(channel="C2", text="elsewhere")

    first = web.conversations_history(channel="C1", limit=2)
    assert [m["text"] for m in first["messages"]] == ["m4", "m3"] and first["has_more"]
    cursor = first["response_metadata"]["next_cursor"]
    second = web.conversations_history(channel="C1", limit=2, cursor=cursor)
    last = web.conversations_history(channel="C1", limit=2, cursor=second["response_metadata"]["next_cursor"])
    assert [m["text"] for m in second["messages"] + last["messages"]] == ["m2", "m1", "m0"]
    assert not last["has_more"] and last["response_metadata"]["next_cursor"] == ""
    since = web.conversations_history(channel="C1", oldest=posted[2])  # exclusive, as Slack's
    assert [m["text"] for m in since["messages"]] == ["m4", "m3"]


def test_rate_limit_carries_retry_after_and_slack_sdk_retries(slack: SlackEmulator) -> None:
    slack.fail("chat.postMessage", status=429, retry_after=1, times=1)
    with pytest.raises(SlackApiError) as limited:
        client(slack).chat_postMessage(channel="C1", text="once")
    assert limited.value.response.status_code == 429
    assert limited.value.response.headers["Retry-After"] == "1"

    slack.fail("chat.postMessage", status=429, retry_after=1, times=1)
    patient = client(slack, retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=2)])
    assert patient.chat_postMessage(channel="C1", text="twice")["ok"]
    assert [c.status for c in slack.calls_to("chat.postMessage")] == [429, 429, 200]
    assert [m.text for m in slack.channel("C1")] == ["twice"]


def test_server_error_and_slack_sdk_retries(slack: SlackEmulator) -> None:
    slack.fail("chat.update", status=500, times=1)
    web = client(slack, retry_handlers=[ServerErrorRetryHandler(max_retry_count=1)])
    ts = web.chat_postMessage(channel="C1", text="a")["ts"]
    assert web.chat_update(channel="C1", ts=ts, text="b")["ok"]
    assert [c.status for c in slack.calls_to("chat.update")] == [500, 200]


def test_files_upload_v2_into_a_thread(slack: SlackEmulator) -> None:
    web = client(slack)
    root = web.chat_postMessage(channel="C1", text="digest")
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10
    uploaded = web.files_upload_v2(
        channel="C1", thread_ts=root["ts"], content=png, filename="lag.png", title="Lag, last 24 h"
    )
    file_id = uploaded["file"]["id"]
    assert slack.uploads[file_id] == png
    [share] = slack.thread("C1", root["ts"])
    assert [(f["id"], f["name"], f["title"], f["length"]) for f in share.files] == [
        (file_id, "lag.png", "Lag, last 24 h", len(png))
    ]
    assert [c.method for c in slack.calls] == [
        "chat.postMessage",
        "files.getUploadURLExternal",
        "upload",
        "files.completeUploadExternal",
    ]


def test_users_usergroups_ephemeral_and_views(slack: SlackEmulator) -> None:
    web = client(slack)
    assert web.users_info(user="U1")["user"]["real_name"] == "Ana Oncall"
    assert web.usergroups_users_list(usergroup="S1")["users"] == ["U1", "U2"]
    with pytest.raises(SlackApiError) as unknown:
        web.usergroups_users_list(usergroup="S9")
    assert unknown.value.response["error"] == "no_such_subteam"
    assert web.chat_postEphemeral(channel="C1", user="U1", text="only you")["ok"]
    assert [(e["user"], e["text"]) for e in slack.ephemeral] == [("U1", "only you")]
    view = {"type": "modal", "title": {"type": "plain_text", "text": "Deny"}, "blocks": [section("why?")]}
    opened = web.views_open(trigger_id="123.456.abc", view=view)
    assert opened["view"]["id"].startswith("V") and slack.views[0]["blocks"] == [section("why?")]
    with pytest.raises(SlackApiError) as bad:
        web.views_open(trigger_id="", view=view)
    assert bad.value.response["error"] == "invalid_trigger_id"


def test_response_url_keeps_what_is_posted(slack: SlackEmulator) -> None:
    url = slack.response_url()
    payload = {"response_type": "ephemeral", "text": "usage: /lag <group>", "blocks": [section("usage")]}
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=5) as answer:
        assert answer.status == 200
    key = url.rsplit("/", 1)[1]
    assert slack.responses[key] == [payload]
    bad = urllib.request.Request(url, data=json.dumps({"blocks": [section("x" * 3001)]}).encode(), method="POST")
    with pytest.raises(urllib.error.HTTPError) as rejected:
        urllib.request.urlopen(bad, timeout=5)
    assert rejected.value.code == 400
    assert slack.responses[key] == [payload]
