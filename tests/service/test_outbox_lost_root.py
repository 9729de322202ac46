"""A lost root message (deleted, or lost by Slack): the outbox posts a new root that says it replaces the lost
one, with the newest root text, and the thread continues there; nothing is dead-lettered."""

from __future__ import annotations

import pytest
import redis

from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.outbox import POST_ROOT, REPLY, UPDATE_ROOT, Operation
from lagbot.service.outbox_stores import RedisOutbox
from lagbot.service.slack_api import slack_client
from lagbot.slack.wording import incidents as slack_wording
from tests.support.slack_messages import deliver, section_message

pytestmark = pytest.mark.integration
TOKEN = "xoxb-lost-root"


def op(kind: str, text: str) -> Operation:
    return Operation(kind, "i1", "prod", "orders", "C1", section_message(text))


def test_a_reply_to_a_deleted_root_goes_to_a_replacement_root(redis_client: redis.Redis, slack: SlackEmulator) -> None:
    outbox = RedisOutbox(redis_client)
    client = slack_client(TOKEN, slack.api_url)
    outbox.enqueue(op(POST_ROOT, "root v1"), now=1.0)
    outbox.enqueue(op(UPDATE_ROOT, "root v2"), now=1.0)
    outbox.enqueue(op(REPLY, "first reply"), now=1.0)
    assert deliver(outbox, client).sent == 3
    [lost] = slack.channel("C1")
    slack.delete("C1", lost.ts)

    outbox.enqueue(op(REPLY, "second reply"), now=2.0)
    outbox.enqueue(op(REPLY, "third reply"), now=2.0)
    report = deliver(outbox, client)

    assert (report.sent, report.dead, report.pending) == (3, 0, 0)
    [new_root] = slack.channel("C1")
    note = slack_wording.root_replaced("prod", "orders")
    assert new_root.text == f"{note}\nroot v2"  # the newest root text, under the note
    assert new_root.blocks[0] == {"type": "context", "elements": [{"type": "mrkdwn", "text": note}]}
    assert new_root.blocks[1:] == op(UPDATE_ROOT, "root v2").message.json_blocks()
    assert [m.text for m in slack.thread("C1", new_root.ts)] == ["second reply", "third reply"]  # in order
    assert outbox.root("i1") == ("C1", new_root.ts)
    assert [c.response["error"] for c in slack.calls if not c.response["ok"]] == ["thread_not_found"]  # type: ignore[index]
    assert outbox.dead_letters() == []


def test_an_edit_of_a_deleted_root_is_the_replacement_root_and_later_edits_go_to_it(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    outbox = RedisOutbox(redis_client)
    client = slack_client(TOKEN, slack.api_url)
    outbox.enqueue(op(POST_ROOT, "root v1"), now=1.0)
    assert deliver(outbox, client).sent == 1
    [lost] = slack.channel("C1")
    slack.delete("C1", lost.ts)

    outbox.enqueue(op(UPDATE_ROOT, "root v2"), now=2.0)
    outbox.enqueue(op(REPLY, "reply"), now=2.0)
    outbox.enqueue(op(UPDATE_ROOT, "root v3"), now=2.0)
    assert deliver(outbox, client).sent == 3

    [new_root] = slack.channel("C1")
    note = slack_wording.root_replaced("prod", "orders")
    assert (new_root.text, new_root.edits) == (f"{note}\nroot v3", 1)  # replaced with v2, then edited: still says so
    assert [m.text for m in slack.thread("C1", new_root.ts)] == ["reply"]
    assert [(c.method, c.args["text"]) for c in slack.calls[1:]] == [
        ("chat.update", "root v2"),
        ("chat.postMessage", f"{note}\nroot v2"),
        ("chat.postMessage", "reply"),
        ("chat.update", f"{note}\nroot v3"),
    ]
    assert [c.response.get("error") for c in slack.calls[1:]] == ["message_not_found", None, None, None]  # type: ignore[union-attr]
    assert outbox.dead_letters() == []
