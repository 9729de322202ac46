"""The outbox on a real redis-server and the Slack emulator: in order, nothing lost, nothing sent twice."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
import redis
from slack_sdk import WebClient
from slack_sdk.web import SlackResponse

from lagbot.core import keys as redis_keys
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.outbox import POST_ROOT, REPLY, UPDATE_ROOT, Operation
from lagbot.service.outbox_stores import RedisOutbox
from lagbot.service.proposal_messages import ProposalMessage
from lagbot.service.remediation_stores import RedisProposalMessages
from lagbot.service.slack_api import slack_client
from lagbot.service.slack_message import Block, SlackMessage
from tests.support.cut_proxy import CutProxy
from tests.support.slack_messages import deliver, section_message

pytestmark = pytest.mark.integration

TOKEN = "xoxb-outbox-test"


def op(kind: str, text: str, incident: str = "i1", channel: str = "C1") -> Operation:
    return Operation(kind, incident, "prod", "orders", channel, section_message(text))


def test_root_then_replies_then_edit_in_order(redis_client: redis.Redis, slack: SlackEmulator) -> None:
    outbox = RedisOutbox(redis_client)
    for operation in [op(POST_ROOT, "root v1"), op(REPLY, "table"), op(UPDATE_ROOT, "root v2")]:
        outbox.enqueue(operation, now=1.0)

    report = deliver(outbox, slack_client(TOKEN, slack.api_url))

    assert (report.sent, report.failed_transient, report.dead, report.pending) == (3, 0, 0, 0)
    [root] = slack.channel("C1")
    assert (root.text, root.edits) == ("root v2", 1)
    assert [m.text for m in slack.thread("C1", root.ts)] == ["table"]
    assert outbox.root("i1") == ("C1", root.ts)
    assert [c.method for c in slack.calls] == ["chat.postMessage", "chat.postMessage", "chat.update"]
    assert redis_client.keys("lagbot:outbox:queue:*") == []


def test_consecutive_edits_are_coalesced(redis_client: redis.Redis, slack: SlackEmulator) -> None:
    outbox = RedisOutbox(redis_client)
    outbox.enqueue(op(POST_ROOT, "root"), now=1.0)
    deliver(outbox, slack_client(TOKEN, slack.api_url))
    for i in range(5):
        outbox.enqueue(op(UPDATE_ROOT, f"edit {i}"), now=2.0)
    outbox.enqueue(op(REPLY, "reply"), now=2.0)
    outbox.enqueue(op(UPDATE_ROOT, "edit 5"), now=2.0)

    assert outbox.pending() == 3
    deliver(outbox, slack_client(TOKEN, slack.api_url))
    assert [(c.method, c.args["text"]) for c in slack.calls[1:]] == [
        ("chat.update", "edit 4"),
        ("chat.postMessage", "reply"),
        ("chat.update", "edit 5"),
    ]


def test_one_rate_limit_is_waited_out_by_the_retry_handler(redis_client: redis.Redis, slack: SlackEmulator) -> None:
    outbox = RedisOutbox(redis_client)
    outbox.enqueue(op(POST_ROOT, "root"), now=1.0)
    slack.fail("chat.postMessage", status=429, retry_after=1, times=1)
    report = deliver(outbox, slack_client(TOKEN, slack.api_url, retries=1))
    assert (report.sent, report.pending) == (1, 0)
    assert [c.status for c in slack.calls_to("chat.postMessage")] == [429, 200]
    assert [m.text for m in slack.channel("C1")] == ["root"]


def test_rate_limited_beyond_retries_is_resumed_next_cycle_in_order(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    outbox = RedisOutbox(redis_client)
    client = slack_client(TOKEN, slack.api_url, retries=1)
    outbox.enqueue(op(POST_ROOT, "root"), now=1.0)
    outbox.enqueue(op(REPLY, "reply"), now=1.0)
    outbox.enqueue(op(POST_ROOT, "other root", incident="i2"), now=1.0)
    slack.fail("chat.postMessage", status=429, retry_after=1, times=2)  # more than the handler's one retry
    errors: list[tuple[str, str]] = []

    first = deliver(outbox, client, on_error=lambda m, e: errors.append((m, e)))

    # Rate limited: the round stops (the other incident's queue is not tried either), nothing is lost.
    assert (first.sent, first.failed_transient, first.pending) == (0, 1, 3)
    assert errors == [("chat.postMessage", "ratelimited")]
    assert slack.channel("C1") == []

    second = deliver(outbox, client)
    assert (second.sent, second.pending) == (3, 0)
    root, other = slack.channel("C1")
    assert (root.text, other.text) == ("root", "other root")
    assert [m.text for m in slack.thread("C1", root.ts)] == ["reply"]
    assert len(slack.messages) == 3


def test_server_errors_beyond_retries_keep_the_operation(redis_client: redis.Redis, slack: SlackEmulator) -> None:
    outbox = RedisOutbox(redis_client)
    client = slack_client(TOKEN, slack.api_url, retries=1)
    outbox.enqueue(op(POST_ROOT, "root"), now=1.0)
    slack.fail("chat.postMessage", status=500, times=2)
    assert deliver(outbox, client).pending == 1
    assert slack.channel("C1") == []
    assert deliver(outbox, client).sent == 1
    assert [m.text for m in slack.channel("C1")] == ["root"]


def test_a_permanent_error_goes_to_dead_letters_and_does_not_block(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    outbox = RedisOutbox(redis_client)
    bad = Operation(POST_ROOT, "i1", "prod", "orders", "C1", SlackMessage("bad", (Block({"type": "no-such-block"}),)))
    outbox.enqueue(bad, now=1.0)
    outbox.enqueue(op(REPLY, "reply to a root that never was"), now=1.0)
    outbox.enqueue(op(POST_ROOT, "fine", incident="i2"), now=1.0)
    errors: list[tuple[str, str]] = []

    report = deliver(outbox, slack_client(TOKEN, slack.api_url), on_error=lambda m, e: errors.append((m, e)))

    assert (report.sent, report.dead, report.pending) == (1, 2, 0)
    assert errors == [("chat.postMessage", "invalid_blocks")]
    assert [d.error for d in outbox.dead_letters()] == ["no_root_message", "invalid_blocks"]
    assert [m.text for m in slack.channel("C1")] == ["fine"]


def test_slack_unreachable_keeps_everything(redis_client: redis.Redis) -> None:
    outbox = RedisOutbox(redis_client)
    outbox.enqueue(op(POST_ROOT, "root"), now=1.0)
    outbox.enqueue(op(POST_ROOT, "root", incident="i2"), now=1.0)
    client = slack_client(TOKEN, "http://127.0.0.1:9/api/", retries=0)
    report = deliver(outbox, client)
    assert (report.sent, report.failed_transient, report.pending) == (0, 1, 2)


def test_the_table_reply_follows_the_root_edits_and_a_reply_with_buttons_is_found_again(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    outbox = RedisOutbox(redis_client)
    table = replace(op(REPLY, "table v1"), is_table=True)
    offer = replace(op(REPLY, "offer"), proposals=("p1", "p2"))
    v2 = replace(op(UPDATE_ROOT, "root v2"), table=section_message("table v2"))
    v3 = replace(op(UPDATE_ROOT, "root v3"), table=section_message("table v3"))
    for operation in [op(POST_ROOT, "root v1"), table, offer, v2, v3]:
        outbox.enqueue(operation, now=1.0)

    report = deliver(outbox, slack_client(TOKEN, slack.api_url))

    assert (report.sent, report.dead, report.pending) == (4, 0, 0)  # v3 replaced v2, still queued last
    [root] = slack.channel("C1")
    first, offered = slack.thread("C1", root.ts)
    assert [(m.text, m.edits) for m in (root, first, offered)] == [("root v3", 1), ("table v3", 1), ("offer", 0)]
    assert first.blocks == section_message("table v3").json_blocks()
    updates = [(c.args["ts"], c.args["text"]) for c in slack.calls_to("chat.update")]
    assert updates == [(root.ts, "root v3"), (first.ts, "table v3")]
    for proposal in ("p1", "p2"):
        kept = ProposalMessage("C1", offered.ts, "offer", offer.message.blocks, ("p1", "p2"))
        assert RedisProposalMessages(redis_client).find(proposal) == kept
    assert RedisProposalMessages(redis_client).find("p3") is None

    outbox.enqueue(op(UPDATE_ROOT, "root v4"), now=2.0)  # an edit without a table leaves the table alone
    deliver(outbox, slack_client(TOKEN, slack.api_url))
    assert [(c.args["ts"], c.args["text"]) for c in slack.calls_to("chat.update")][2:] == [(root.ts, "root v4")]


def test_an_operation_holds_its_optional_fields_only_when_set_and_reads_one_without_them() -> None:
    plain = op(REPLY, "reply")
    fields = {"v", "op", "incident_id", "cluster", "group", "channel", "message"}
    assert set(json.loads(plain.encode())) == fields
    assert json.loads(plain.encode())["message"] == {"text": "reply", "blocks": plain.message.json_blocks()}
    assert Operation.decode(plain.encode()) == plain
    full = replace(plain, proposals=("p1",), is_table=True, table=section_message("t"))
    assert json.loads(full.encode())["table"] == {"text": "t", "blocks": section_message("t").json_blocks()}
    assert Operation.decode(full.encode()) == full


def test_operations_queued_by_the_release_before_are_sent_after_an_upgrade(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    """Version 1 held the text and blocks beside the operation and the table as a [text, blocks] pair: what an older
    replica left queued is sent as it meant it, the table reply followed by the root edit that carries it."""
    blocks = {name: section_message(name).json_blocks() for name in ("root v1", "table v1", "root v2", "table v2")}

    def v1(op: str, text: str, **more: object) -> str:
        fields = {"incident_id": "i1", "cluster": "prod", "group": "orders", "channel": "C1"}
        return json.dumps({"v": 1, "op": op, **fields, "text": text, "blocks": blocks[text], **more})

    queued = [
        v1(POST_ROOT, "root v1"),
        v1(REPLY, "table v1", is_table=True),
        v1(UPDATE_ROOT, "root v2", table=["table v2", blocks["table v2"]]),
    ]
    redis_client.rpush(redis_keys.outbox_queue("i1"), *queued)
    redis_client.zadd(redis_keys.OUTBOX_PENDING, {"i1": 1.0})

    report = deliver(RedisOutbox(redis_client), slack_client(TOKEN, slack.api_url))

    assert (report.sent, report.dead, report.pending) == (3, 0, 0)
    [root] = slack.channel("C1")
    [table] = slack.thread("C1", root.ts)
    sent = [
        (c.method, c.args.get("thread_ts"), c.args.get("ts"), c.args["text"], c.args["blocks"]) for c in slack.calls
    ]
    assert sent == [
        ("chat.postMessage", None, None, "root v1", blocks["root v1"]),
        ("chat.postMessage", root.ts, None, "table v1", blocks["table v1"]),
        ("chat.update", None, root.ts, "root v2", blocks["root v2"]),
        ("chat.update", None, table.ts, "table v2", blocks["table v2"]),
    ]


class CutsAfterPosting(WebClient):
    """The Web API client, which cuts Redis (through `proxy`) right after Slack accepted the next chat.postMessage
    whose text is `text`: the send happened, its record cannot."""

    def __init__(self, proxy: CutProxy, text: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.redis_proxy, self.text = proxy, text

    def chat_postMessage(self, **kwargs: Any) -> SlackResponse:
        response = super().chat_postMessage(**kwargs)
        if kwargs.get("text") == self.text:
            self.text = ""
            self.redis_proxy.cut()
        return response


def test_a_reply_sent_whose_record_failed_is_recorded_after_redis_is_back_not_sent_again(
    redis_client: redis.Redis, redis_server: EmbeddedRedis, slack: SlackEmulator
) -> None:
    with CutProxy(redis_server.port).start() as proxy:
        cut_client = redis.Redis(host="127.0.0.1", port=proxy.port, socket_timeout=2, socket_connect_timeout=2)
        outbox = RedisOutbox(cut_client)
        for operation in [op(POST_ROOT, "root"), op(REPLY, "the proposal"), op(REPLY, "after")]:
            outbox.enqueue(operation, now=1.0)
        client = CutsAfterPosting(proxy, "the proposal", token=TOKEN, base_url=slack.api_url)

        with pytest.raises(redis.ConnectionError):  # Slack took the reply; Redis is gone before it is recorded
            deliver(outbox, client)
        [root] = slack.channel("C1")
        assert [m.text for m in slack.thread("C1", root.ts)] == ["the proposal"]
        assert [op_.op for op_ in map(Operation.decode, redis_client.lrange(redis_keys.outbox_queue("i1"), 0, -1))] == [
            REPLY,
            REPLY,
        ]  # still queued: only this outbox knows it went out

        proxy.restore()
        report = deliver(outbox, client)
        assert (report.sent, report.failed_transient, report.dead, report.pending) == (2, 0, 0, 0)
        assert [m.text for m in slack.thread("C1", root.ts)] == ["the proposal", "after"]  # once each, in order
        assert [c.args["text"] for c in slack.calls_to("chat.postMessage")] == ["root", "the proposal", "after"]
        assert redis_client.keys("lagbot:outbox:queue:*") == []


def test_a_send_another_replica_recorded_meanwhile_is_forgotten_not_recorded_twice(
    redis_client: redis.Redis, redis_server: EmbeddedRedis, slack: SlackEmulator
) -> None:
    with CutProxy(redis_server.port).start() as proxy:
        outbox = RedisOutbox(redis.Redis(host="127.0.0.1", port=proxy.port, socket_timeout=2))
        outbox.enqueue(op(POST_ROOT, "root"), now=1.0)
        outbox.enqueue(op(REPLY, "one"), now=1.0)
        with pytest.raises(redis.ConnectionError):
            deliver(outbox, CutsAfterPosting(proxy, "one", token=TOKEN, base_url=slack.api_url))
        # Meanwhile the queue moved on without this outbox: another replica found the post in the thread.
        other = RedisOutbox(redis_client)
        assert deliver(other, slack_client(TOKEN, slack.api_url)).sent == 1
        other.enqueue(op(REPLY, "two"), now=2.0)
        proxy.restore()
        report = deliver(outbox, slack_client(TOKEN, slack.api_url))
        assert (report.sent, report.pending) == (1, 0)
        [root] = slack.channel("C1")
        assert [m.text for m in slack.thread("C1", root.ts)] == ["one", "two"]  # found by its metadata, not resent
        assert [c.args["text"] for c in slack.calls_to("chat.postMessage")] == ["root", "one", "two"]
        assert [c.args["ts"] for c in slack.calls_to("conversations.replies")] == [root.ts]
