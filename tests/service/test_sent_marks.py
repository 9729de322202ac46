"""A post interrupted before it was recorded is found in Slack by its metadata, not posted twice (lagbot.service.
sent_marks), on a real redis-server and the Slack emulator.

A replica "killed" here is an outbox whose Web API client raises right after Slack accepted a post: nothing of that
outbox runs after it (no record, nothing kept in memory), as after a kill -9. Another outbox on the same Redis, as the
next replica, then delivers the same queue.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import redis
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.web import SlackResponse

from lagbot.core import keys as redis_keys
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service import sent_marks
from lagbot.service.outbox import POST_ROOT, REPLY, UPDATE_ROOT, Operation
from lagbot.service.outbox_stores import RedisOutbox
from lagbot.service.proposal_messages import ProposalMessage
from lagbot.service.remediation_stores import RedisProposalMessages
from lagbot.service.slack_api import slack_client
from tests.support.slack_messages import deliver, section_message

pytestmark = pytest.mark.integration

TOKEN = "xoxb-outbox-test"


def op(kind: str, text: str, incident: str = "i1") -> Operation:
    return Operation(kind, incident, "prod", "orders", "C1", section_message(text))


class ReplicaKilled(BaseException):
    """The replica's end, right after Slack accepted its post: no handler of the outbox runs."""


class KilledAfterPosting(WebClient):
    """Raises ReplicaKilled right after Slack accepted the chat.postMessage whose text is `text`."""

    def __init__(self, text: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.text = text

    def chat_postMessage(self, **kwargs: Any) -> SlackResponse:
        response = super().chat_postMessage(**kwargs)
        if kwargs.get("text") == self.text:
            raise ReplicaKilled
        return response


class CannotRead(WebClient):
    """A bot token without the history scopes: Slack refuses its reads with missing_scope."""

    def conversations_replies(self, **kwargs: Any) -> SlackResponse:
        data = {"ok": False, "error": "missing_scope", "needed": "channels:history"}
        response = SlackResponse(client=self, http_verb="GET", api_url="conversations.replies", req_args={},
                                 data=data, headers={}, status_code=200)  # fmt: skip
        raise SlackApiError("missing_scope", response)


def killed_after(slack: SlackEmulator, redis_client: redis.Redis, text: str, *queued: Operation) -> None:
    """One replica queues `queued` and is killed right after Slack accepted the post of `text`."""
    outbox = RedisOutbox(redis_client)
    for operation in queued:
        outbox.enqueue(operation, now=1.0)
    with pytest.raises(ReplicaKilled):
        deliver(outbox, KilledAfterPosting(text, token=TOKEN, base_url=slack.api_url))


def texts(calls: list[Any]) -> list[str]:
    return [c.args["text"] for c in calls]


def test_a_root_posted_by_a_killed_replica_is_found_and_its_thread_continues_there(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    killed_after(slack, redis_client, "root", op(POST_ROOT, "root"), op(REPLY, "table"), op(UPDATE_ROOT, "root v2"))
    [root] = slack.channel("C1")
    assert RedisOutbox(redis_client).root("i1") is None  # Slack has it; the store never heard

    report = deliver(RedisOutbox(redis_client), slack_client(TOKEN, slack.api_url))

    assert (report.sent, report.dead, report.pending) == (3, 0, 0)
    assert [(m.ts, m.text) for m in slack.channel("C1")] == [(root.ts, "root v2")]  # one root, edited
    assert [m.text for m in slack.thread("C1", root.ts)] == ["table"]
    assert RedisOutbox(redis_client).root("i1") == ("C1", root.ts)
    assert texts(slack.calls_to("chat.postMessage")) == ["root", "table"]
    [looked] = slack.calls_to("conversations.history")
    assert looked.args["channel"] == "C1" and float(looked.args["oldest"]) < float(root.ts)


def test_a_reply_with_buttons_posted_by_a_killed_replica_is_recorded_where_it_landed(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    offer = replace(op(REPLY, "offer"), proposals=("p1",))
    killed_after(slack, redis_client, "offer", op(POST_ROOT, "root"), offer, op(REPLY, "after"))

    report = deliver(RedisOutbox(redis_client), slack_client(TOKEN, slack.api_url))

    assert (report.sent, report.pending) == (2, 0)
    [root] = slack.channel("C1")
    offered, after = slack.thread("C1", root.ts)
    assert (offered.text, after.text) == ("offer", "after")
    assert texts(slack.calls_to("chat.postMessage")) == ["root", "offer", "after"]
    kept = ProposalMessage("C1", offered.ts, "offer", offer.message.blocks, ("p1",))
    assert RedisProposalMessages(redis_client).find("p1") == kept  # its buttons can be retired
    assert redis_client.keys("lagbot:outbox:queue:*") == []


def test_every_post_carries_its_own_identity_and_only_a_begun_post_is_looked_for(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    outbox = RedisOutbox(redis_client)
    for operation in [op(POST_ROOT, "root"), op(REPLY, "one"), op(REPLY, "one")]:  # the same text twice: two posts
        outbox.enqueue(operation, now=1.0)

    assert deliver(outbox, slack_client(TOKEN, slack.api_url)).sent == 3

    posts = [c.args["metadata"] for c in slack.calls_to("chat.postMessage")]
    assert all(p["event_type"] == "lagbot_message" and p["event_payload"]["incident"] == "i1" for p in posts)
    identities = [p["event_payload"]["post"] for p in posts]
    assert [i.rsplit(".", 1)[1] for i in identities] == ["post_root", "reply", "reply"]
    assert len(set(identities)) == 3
    [root] = slack.channel("C1")
    assert [m.text for m in slack.thread("C1", root.ts)] == ["one", "one"]
    assert [c.method for c in slack.calls if c.method.startswith("conversations.")] == []  # nothing interrupted
    marks = sent_marks.Marks.decode(redis_client.get(redis_keys.outbox_sending("i1")) or b"")
    assert [m.identity for m in marks.marks] == identities


def test_a_post_slack_refused_is_looked_for_then_posted_once(redis_client: redis.Redis, slack: SlackEmulator) -> None:
    outbox = RedisOutbox(redis_client)
    client = slack_client(TOKEN, slack.api_url, retries=0)
    outbox.enqueue(op(POST_ROOT, "root"), now=1.0)
    assert deliver(outbox, client).sent == 1
    outbox.enqueue(op(REPLY, "reply"), now=2.0)
    slack.fail("chat.postMessage", status=500, times=2)
    assert deliver(outbox, client).failed_transient == 1
    assert deliver(outbox, client).failed_transient == 1
    assert deliver(outbox, client).sent == 1

    [root] = slack.channel("C1")
    assert [m.text for m in slack.thread("C1", root.ts)] == ["reply"]
    assert [(c.method, c.status) for c in slack.calls[1:]] == [
        ("chat.postMessage", 500),
        ("conversations.replies", 200),  # begun before: looked for, not there
        ("chat.postMessage", 500),
        ("conversations.replies", 200),
        ("chat.postMessage", 200),
    ]


def test_a_read_rate_limited_waits_for_the_next_delivery_and_still_finds_the_post(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    killed_after(slack, redis_client, "one", op(POST_ROOT, "root"), op(REPLY, "one"), op(REPLY, "two"))
    outbox = RedisOutbox(redis_client)
    client = slack_client(TOKEN, slack.api_url, retries=0)
    errors: list[tuple[str, str]] = []
    slack.fail("conversations.replies", status=429, times=1)

    report = deliver(outbox, client, on_error=lambda method, error: errors.append((method, error)))
    assert (report.sent, report.failed_transient, report.pending) == (0, 1, 2)
    assert errors == [("conversations.replies", "ratelimited")]
    report = deliver(outbox, client)
    assert (report.sent, report.pending) == (2, 0)

    [root] = slack.channel("C1")
    assert [m.text for m in slack.thread("C1", root.ts)] == ["one", "two"]


def test_without_the_history_scope_an_interrupted_post_is_sent_again_and_the_refusal_is_told(
    redis_client: redis.Redis, slack: SlackEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    killed_after(slack, redis_client, "one", op(POST_ROOT, "root"), op(REPLY, "one"))
    errors: list[tuple[str, str]] = []

    report = deliver(RedisOutbox(redis_client), CannotRead(token=TOKEN, base_url=slack.api_url),
                     on_error=lambda method, error: errors.append((method, error)))  # fmt: skip

    assert (report.sent, report.pending) == (1, 0)
    [root] = slack.channel("C1")
    assert [m.text for m in slack.thread("C1", root.ts)] == ["one", "one"]  # as before marks: at least once
    assert errors == [("conversations.replies", "missing_scope")]
    assert "could not look for an interrupted post in Slack: posting it again" in caplog.messages


def test_an_operation_queued_before_marks_is_posted_as_it_was(redis_client: redis.Redis, slack: SlackEmulator) -> None:
    redis_client.rpush(redis_keys.outbox_queue("i1"), op(POST_ROOT, "root").encode())  # no key: an older release's
    redis_client.zadd(redis_keys.OUTBOX_PENDING, {"i1": 1.0})

    assert deliver(RedisOutbox(redis_client), slack_client(TOKEN, slack.api_url)).sent == 1

    [call] = slack.calls_to("chat.postMessage")
    assert call.args["text"] == "root" and "metadata" not in call.args
    assert redis_client.get(redis_keys.outbox_sending("i1")) is None


def test_unreadable_marks_never_block_a_post(redis_client: redis.Redis, slack: SlackEmulator) -> None:
    redis_client.set(redis_keys.outbox_sending("i1"), "not marks")
    outbox = RedisOutbox(redis_client)
    outbox.enqueue(op(POST_ROOT, "root"), now=1.0)

    assert deliver(outbox, slack_client(TOKEN, slack.api_url)).sent == 1
    assert [m.text for m in slack.channel("C1")] == ["root"]
    assert len(sent_marks.Marks.decode(redis_client.get(redis_keys.outbox_sending("i1")) or b"").marks) == 1


def test_marks_keep_the_newest_few_and_a_mark_begun_again_moves_last() -> None:
    marks = sent_marks.Marks()
    for n, identity in enumerate(["a", "b", "c", "d", "e", "b"]):
        marks = marks.begun(identity, now=float(n))
    assert [(m.identity, m.at) for m in marks.marks] == [("c", 2.0), ("d", 3.0), ("e", 4.0), ("b", 5.0)]
    assert marks.of("a") is None and marks.of("b") == sent_marks.Mark("b", 5.0)
    assert sent_marks.Marks.decode(marks.encode()) == marks
