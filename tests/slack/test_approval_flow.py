"""An approval through the app over signed HTTP: the action starts at once, its Slack messages follow; the
proposal's message then shows who approved and the outcome, without its buttons.

Real Redis, the Slack emulator (made slow with 429s), the Kubernetes fake, the bolt app behind the bot's HTTP
server, the click signed as Slack signs it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
import redis

from lagbot.app.server import BotHTTPServer
from lagbot.core.model import Cause, Status
from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.emulator import Message, SlackEmulator
from lagbot.remediations.executors.base import Executor, Workload
from lagbot.service.remediate import Remediator
from lagbot.slack.app import build_app
from lagbot.slack.commands import text_reply
from tests.conftest import Kafka, Names
from tests.support.bot_process import SIGNING_SECRET, wait_for
from tests.support.k8s_shop import Shop
from tests.support.remediator_rig import BOOTSTRAP, NOW, TOKEN, k8s, remediator
from tests.support.verdicts import GROUP, partition, verdict

pytestmark = pytest.mark.integration
__all__ = ["k8s"]  # the fixture from tests.support.remediator_rig

APPROVER = "U0ONCALL1"


@pytest.fixture
def slack(broker: ApacheKafka) -> Iterator[SlackEmulator]:
    BOOTSTRAP["servers"] = broker.bootstrap  # the remediator's cluster is the real broker (pre-flight)
    with SlackEmulator(token=TOKEN).start() as running:
        yield running


def buttons(message: Message) -> list[dict[str, Any]]:
    return [e for b in message.blocks if b["type"] == "actions" for e in b["elements"]]


def proposed_restart(redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop) -> tuple[Remediator, Message, Message]:
    """A restart proposed for a stalled partition: the remediator, the incident's root in C1, the proposal message."""
    r = remediator(redis_client, slack, k8s, wired=True, remediations={"restart": {}})
    bot = r.bot
    bot.settings = bot.settings.model_copy(
        update={"slack": bot.settings.slack.model_copy(update={"default_channel": "C1"})}
    )
    bot.leadership.tick()
    stalled = partition(0, committed=0, log_end=500, status=Status.STALL)
    v = replace(verdict([stalled]), causes=(Cause("stuck_consumer", "stuck", 0.9, rank=1),))
    assert bot.apply([v], now=NOW) == 1
    bot.deliver()
    [root] = slack.channel("C1")
    [proposal] = [m for m in slack.thread("C1", root.ts) if buttons(m)]
    return r, root, proposal


def test_an_approved_action_starts_before_its_messages_and_the_proposal_then_shows_the_outcome(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop, kafka: Kafka, names: Names
) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 1)
    member = kafka.consumer(GROUP)  # the group exists on the broker, Empty: the restart's pre-flight describes it
    member.subscribe([topic])
    kafka.wait_assigned(member)
    member.close()
    r, root, proposal = proposed_restart(redis_client, slack, k8s)
    bot = r.bot
    shown = [b["type"] for b in proposal.blocks]  # the emulator edits the message in place
    assert shown[-1] == "actions"

    started: list[float] = []
    executor_for = r.executor_for

    def observed(workload: Workload) -> Executor:  # the real executor; only the moment it is asked for is kept
        started.append(time.monotonic())
        return executor_for(workload)

    r.executor_for = observed
    app = build_app(
        client=bot.slack,
        signing_secret=SIGNING_SECRET,
        run_command=lambda *_: text_reply("unused"),
        clicks=r,
        clock=lambda: NOW,
    )
    server = BotHTTPServer(
        host="127.0.0.1", port=0, app=app, health=lambda: (True, {}), metrics=bytes, signing_secret=SIGNING_SECRET
    )
    with server.start() as server:
        slack.fail("chat.postMessage", status=429, retry_after=3, times=2)  # Slack is slow: ~6 s per message
        clicked = time.monotonic()
        status, _, key = slack.click_button(
            f"http://127.0.0.1:{server.port}/slack/events",
            SIGNING_SECRET,
            user=APPROVER,
            message=proposal,
            action_prefix="approve:",
        )
        assert status == 200
        wait_for("the restart to start", lambda: started, timeout=30)
        assert started[0] - clicked < 2.0, f"the action started {started[0] - clicked:.1f} s after the click"

        def settled() -> Message | None:
            [now] = [m for m in slack.thread("C1", root.ts) if m.ts == proposal.ts]
            return now if now.edits and not buttons(now) else None

        edited = wait_for("the proposal message to show the outcome", settled, timeout=60)
        line = edited.blocks[-1]["elements"][0]["text"]
        assert line.startswith(f":white_check_mark: *Rolling restart of orders*: approved by <@{APPROVER}>, done: ")
        assert [b["type"] for b in edited.blocks] == [*(t for t in shown if t != "actions"), "context"]

        running_text = f":gear: Approved by <@{APPROVER}>: running *Rolling restart of orders*"
        done_text = ":white_check_mark: *Rolling restart of orders*"

        def delivered() -> list[str] | None:
            bot.deliver()  # what the leader's scheduled delivery does (no scheduler runs in this test)
            texts = [m.text for m in slack.thread("C1", root.ts)]
            return texts if running_text in texts and any(t.startswith(done_text) for t in texts) else None

        texts = wait_for("the running and the done replies", delivered, timeout=30)
        running = texts.index(running_text)
        done = next(i for i, t in enumerate(texts) if t.startswith(done_text))
        assert running < done
        assert slack.responses[key] == []  # the approver got no private refusal
    assert bot.outbox.dead_letters() == []


def test_a_denial_needs_a_reason_and_then_retires_the_proposal_message(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop, kafka: Kafka, names: Names
) -> None:
    r, root, proposal = proposed_restart(redis_client, slack, k8s)
    bot = r.bot
    shown = [b["type"] for b in proposal.blocks]
    app = build_app(
        client=bot.slack,
        signing_secret=SIGNING_SECRET,
        run_command=lambda *_: text_reply("unused"),
        clicks=r,
        clock=lambda: NOW,
    )
    server = BotHTTPServer(
        host="127.0.0.1", port=0, app=app, health=lambda: (True, {}), metrics=bytes, signing_secret=SIGNING_SECRET
    )
    with server.start() as server:
        url = f"http://127.0.0.1:{server.port}/slack/events"
        status, _, _ = slack.click_button(url, SIGNING_SECRET, user=APPROVER, message=proposal, action_prefix="deny:")
        assert status == 200
        [view] = wait_for("the deny modal", lambda: slack.views)

        for blank in ("", "   \n "):
            status, answer = slack.submit_view(
                url, SIGNING_SECRET, user=APPROVER, view=view, values={"reason": {"text": blank}}
            )
            assert (status, json.loads(answer)) == (
                200,
                {
                    "response_action": "errors",
                    "errors": {"reason": "Say why you deny it: the reason goes to the thread and the audit trail."},
                },
            )
        [still] = [m for m in slack.thread("C1", root.ts) if m.ts == proposal.ts]
        assert buttons(still) and r.proposals.get(str(buttons(proposal)[0]["value"])).denied_by is None  # type: ignore[union-attr]

        status, _ = slack.submit_view(
            url, SIGNING_SECRET, user=APPROVER, view=view, values={"reason": {"text": "replaying instead"}}
        )
        assert status == 200

        def retired() -> Message | None:
            [now] = [m for m in slack.thread("C1", root.ts) if m.ts == proposal.ts]
            return now if now.edits and not buttons(now) else None

        edited = wait_for("the proposal message to lose its buttons", retired, timeout=30)
        line = edited.blocks[-1]["elements"][0]["text"]
        assert line == f":no_entry_sign: *Rolling restart of orders*: denied by <@{APPROVER}>: replaying instead"
        assert [b["type"] for b in edited.blocks] == [*(t for t in shown if t != "actions"), "context"]
