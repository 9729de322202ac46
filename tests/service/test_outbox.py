"""The outbox on a real redis-server and the Slack emulator: in order, nothing lost, nothing sent twice."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import redis

from lagbot.devkit.emulator import SlackEmulator
from lagbot.service import proposal_messages
from lagbot.service.bot import slack_client
from lagbot.service.outbox import POST_ROOT, REPLY, UPDATE_ROOT, Operation
from lagbot.service.outbox_stores import RedisOutbox
from lagbot.service.proposal_messages import ProposalMessage

pytestmark = pytest.mark.integration

TOKEN = "xoxb-outbox-test"


def op(kind: str, text: str, incident: str = "i1", channel: str = "C1") -> Operation:
    block = {"type": "section", "text": {"type": "mrkdwn", "text": text}}
    return Operation(kind, incident, "prod", "orders", channel, text, [block])


def test_root_then_replies_then_edit_in_order(redis_client: redis.Redis, slack: SlackEmulator) -> None:
    outbox = RedisOutbox(redis_client)
    for operation in [op(POST_ROOT, "root v1"), op(REPLY, "table"), op(UPDATE_ROOT, "root v2")]:
        outbox.enqueue(operation, now=1.0)

    report = outbox.deliver(slack_client(TOKEN, slack.api_url))

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
    outbox.deliver(slack_client(TOKEN, slack.api_url))
    for i in range(5):
        outbox.enqueue(op(UPDATE_ROOT, f"edit {i}"), now=2.0)
    outbox.enqueue(op(REPLY, "reply"), now=2.0)
    outbox.enqueue(op(UPDATE_ROOT, "edit 5"), now=2.0)

    assert outbox.pending() == 3
    outbox.deliver(slack_client(TOKEN, slack.api_url))
    assert [(c.method, c.args["text"]) for c in slack.calls[1:]] == [
        ("chat.update", "edit 4"),
        ("chat.postMessage", "reply"),
        ("chat.update", "edit 5"),
    ]


def test_one_rate_limit_is_waited_out_by_the_retry_handler(redis_client: redis.Redis, slack: SlackEmulator) -> None:
    outbox = RedisOutbox(redis_client)
    outbox.enqueue(op(POST_ROOT, "root"), now=1.0)
    slack.fail("chat.postMessage", status=429, retry_after=1, times=1)
    report = outbox.deliver(slack_client(TOKEN, slack.api_url, retries=1))
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

    first = outbox.deliver(client, on_error=lambda m, e: errors.append((m, e)))

    # Rate limited: the round stops (the other incident's queue is not tried either), nothing is lost.
    assert (first.sent, first.failed_transient, first.pending) == (0, 1, 3)
    assert errors == [("chat.postMessage", "ratelimited")]
    assert slack.channel("C1") == []

    second = outbox.deliver(client)
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
    assert outbox.deliver(client).pending == 1
    assert slack.channel("C1") == []
    assert outbox.deliver(client).sent == 1
    assert [m.text for m in slack.channel("C1")] == ["root"]


def test_a_permanent_error_goes_to_dead_letters_and_does_not_block(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    outbox = RedisOutbox(redis_client)
    bad = Operation(POST_ROOT, "i1", "prod", "orders", "C1", "bad", [{"type": "no-such-block"}])
    outbox.enqueue(bad, now=1.0)
    outbox.enqueue(op(REPLY, "reply to a root that never was"), now=1.0)
    outbox.enqueue(op(POST_ROOT, "fine", incident="i2"), now=1.0)
    errors: list[tuple[str, str]] = []

    report = outbox.deliver(slack_client(TOKEN, slack.api_url), on_error=lambda m, e: errors.append((m, e)))

    assert (report.sent, report.dead, report.pending) == (1, 2, 0)
    assert errors == [("chat.postMessage", "invalid_blocks")]
    assert [d.error for d in outbox.dead_letters()] == ["no_root_message", "invalid_blocks"]
    assert [m.text for m in slack.channel("C1")] == ["fine"]


def test_slack_unreachable_keeps_everything(redis_client: redis.Redis) -> None:
    outbox = RedisOutbox(redis_client)
    outbox.enqueue(op(POST_ROOT, "root"), now=1.0)
    outbox.enqueue(op(POST_ROOT, "root", incident="i2"), now=1.0)
    client = slack_client(TOKEN, "http://127.0.0.1:9/api/", retries=0)
    report = outbox.deliver(client)
    assert (report.sent, report.failed_transient, report.pending) == (0, 1, 2)


def test_the_table_reply_follows_the_root_edits_and_a_reply_with_buttons_is_found_again(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    outbox = RedisOutbox(redis_client)
    table = replace(op(REPLY, "table v1"), is_table=True)
    offer = replace(op(REPLY, "offer"), proposals=("p1", "p2"))
    v2 = replace(op(UPDATE_ROOT, "root v2"), table=("table v2", op(REPLY, "table v2").blocks))
    v3 = replace(op(UPDATE_ROOT, "root v3"), table=("table v3", op(REPLY, "table v3").blocks))
    for operation in [op(POST_ROOT, "root v1"), table, offer, v2, v3]:
        outbox.enqueue(operation, now=1.0)

    report = outbox.deliver(slack_client(TOKEN, slack.api_url))

    assert (report.sent, report.dead, report.pending) == (4, 0, 0)  # v3 replaced v2, still queued last
    [root] = slack.channel("C1")
    first, offered = slack.thread("C1", root.ts)
    assert [(m.text, m.edits) for m in (root, first, offered)] == [("root v3", 1), ("table v3", 1), ("offer", 0)]
    assert first.blocks == op(REPLY, "table v3").blocks
    updates = [(c.args["ts"], c.args["text"]) for c in slack.calls_to("chat.update")]
    assert updates == [(root.ts, "root v3"), (first.ts, "table v3")]
    for proposal in ("p1", "p2"):
        kept = ProposalMessage("C1", offered.ts, "offer", offer.blocks, ("p1", "p2"))
        assert proposal_messages.find(redis_client, proposal) == kept
    assert proposal_messages.find(redis_client, "p3") is None

    outbox.enqueue(op(UPDATE_ROOT, "root v4"), now=2.0)  # an edit without a table leaves the table alone
    outbox.deliver(slack_client(TOKEN, slack.api_url))
    assert [(c.args["ts"], c.args["text"]) for c in slack.calls_to("chat.update")][2:] == [(root.ts, "root v4")]


def test_an_operation_holds_its_optional_fields_only_when_set_and_reads_one_without_them() -> None:
    plain = op(REPLY, "reply")
    fields = {"v", "op", "incident_id", "cluster", "group", "channel", "text", "blocks"}
    assert set(json.loads(plain.encode())) == fields
    assert Operation.decode(plain.encode()) == plain
    full = replace(plain, proposals=("p1",), is_table=True, table=("t", plain.blocks))
    assert json.loads(full.encode())["table"] == ["t", plain.blocks]
    assert Operation.decode(full.encode()) == full
