"""An expired proposal's buttons are retired without a click, exactly once across replicas.

The real remediation coordinator (Redis, the Slack emulator, the Kubernetes API server) through the incident loop:
the incident opens, its first reply carries the scale buttons (the outbox keeps where Slack put that reply); past the
proposal's expiry the leader's housekeeping edits that reply (the buttons gone, a line saying it expired and when),
and two more replicas sweeping at the same moment edit nothing. A correctly signed click on the buttons afterwards
(a client that still showed them) is answered "expired" and runs nothing.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis

from lagbot.app.server import BotHTTPServer
from lagbot.core import keys
from lagbot.devkit.emulator import Message, SlackEmulator
from lagbot.service import proposal_messages
from lagbot.service.approvals import State
from lagbot.service.remediate import Remediator
from lagbot.service.remediation_stores import RedisProposalMessages
from lagbot.slack import render
from lagbot.slack.app import CommandRunner, build_app
from lagbot.slack.commands import Reply, text_reply
from lagbot.slack.replies import remediate_reply
from tests.support.k8s_shop import Shop
from tests.support.remediator_rig import NOW, _broker, deficit, events, k8s, remediator, slack
from tests.support.verdicts import GROUP
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

__all__ = ["_broker", "k8s", "slack"]  # fixtures from tests.support.remediator_rig

CHANNEL = "C0ALERTS"
SECRET = "expiry-secret"
APPROVER = "U0ONCALL1"
RULE = {"remediations": {"scale": {"max_replicas": 8, "proposal_expiry": "10m"}}}


def replica(redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop, clock: list[float]) -> Remediator:
    """One lagbot replica: its bot routes to CHANNEL and reads the time from `clock`."""
    r = remediator(redis_client, slack, k8s, wired=True, **RULE)
    bot = r.bot
    bot.settings = bot.settings.model_copy(
        update={"slack": bot.settings.slack.model_copy(update={"default_channel": CHANNEL})}
    )
    bot.clock = lambda: clock[0]
    return r


def blocks_of(args: dict[str, Any]) -> Any:
    raw = args.get("blocks")
    return json.loads(raw) if isinstance(raw, str) else raw


@contextmanager
def serving(r: Remediator, clock: list[float], run_command: CommandRunner | None = None) -> Iterator[str]:
    """The bolt app of replica `r` behind the HTTP edge, as `lagbot run` serves it: yields its events URL."""
    app = build_app(
        client=r.bot.slack,
        signing_secret=SECRET,
        run_command=run_command or (lambda *_: text_reply("unused")),
        clicks=r,
        clock=lambda: clock[0],
    )
    with BotHTTPServer(
        host="127.0.0.1", port=0, app=app, health=lambda: (True, {}), metrics=lambda: b"", signing_secret=SECRET
    ).start() as server:
        yield f"http://127.0.0.1:{server.port}/slack/events"


def test_an_expired_proposal_s_buttons_are_retired_once_and_a_late_click_runs_nothing(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    clock = [NOW]
    leader = replica(redis_client, slack, k8s, clock)
    assert leader.bot.leadership.tick()
    assert leader.bot.apply([deficit()], now=NOW) == 1  # type: ignore[list-item]
    leader.bot.deliver()

    [root] = slack.channel(CHANNEL)
    [reply] = [m for m in slack.thread(CHANNEL, root.ts) if any(b["type"] == "actions" for b in m.blocks)]
    offered = Message(reply.channel, reply.ts, reply.text, [dict(b) for b in reply.blocks], reply.thread_ts)
    [proposal_id] = {e["value"] for b in reply.blocks if b["type"] == "actions" for e in b["elements"]}
    proposal = leader.proposals.get(proposal_id)
    assert proposal is not None and proposal.expires_at == NOW + 600
    kept = RedisProposalMessages(redis_client).find(proposal_id)
    assert kept == proposal_messages.ProposalMessage(CHANNEL, reply.ts, reply.text, tuple(reply.blocks), (proposal_id,))
    assert slack.calls_to("chat.update") == []

    # At its expiry it may still be approved: housekeeping leaves it alone.
    clock[0] = NOW + 600
    leader.bot.housekeeping()
    assert slack.calls_to("chat.update") == []
    assert leader.proposals.get(proposal_id).state is State.PROPOSED  # type: ignore[union-attr]

    # Past it, the leader's housekeeping and two more replicas sweep at once: one edit, by one of them.
    clock[0] = NOW + 601
    others = [replica(redis_client, slack, k8s, clock) for _ in range(2)]
    barrier = threading.Barrier(3)
    retired: list[list[str]] = []

    def sweep(r: Remediator) -> None:
        barrier.wait()
        retired.append(r.expire_due(now=clock[0]))

    threads = [threading.Thread(target=sweep, args=(r,)) for r in [leader, *others]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(retired) == [[], [], [proposal_id]]
    leader.bot.housekeeping()  # and again later: nothing more

    line = ":hourglass: *Scale orders 2 -&gt; 4*: expired at 2026-09-21 14:23 UTC, nothing was run."
    retired_blocks = list(render.settled_blocks(offered.blocks, proposal_id, line))
    assert not any(b["type"] == "actions" for b in retired_blocks)
    assert retired_blocks[-1] == {"type": "context", "elements": [{"type": "mrkdwn", "text": line}]}
    updates = slack.calls_to("chat.update")
    assert [(c.status, c.args["channel"], c.args["ts"], c.args["text"]) for c in updates] == [
        (200, CHANNEL, reply.ts, reply.text)
    ]
    assert blocks_of(updates[0].args) == retired_blocks
    [held] = [m for m in slack.thread(CHANNEL, root.ts) if m.ts == reply.ts]
    assert (held.blocks, held.edits) == (retired_blocks, 1)
    expired = leader.proposals.get(proposal_id)
    assert expired is not None and (expired.state, expired.finished_at) == (State.EXPIRED, NOW + 600)
    assert events(leader) == [("proposed", "lagbot"), ("expired", "lagbot")]

    # A click from a client that still shows the buttons: answered "expired", nothing run, nothing approved.
    with serving(leader, clock) as url:
        status, _, key = slack.click_button(url, SECRET, user=APPROVER, message=offered, action_prefix="approve:")
        assert status == 200
        [answer] = wait_for("the click answered", lambda: slack.responses.get(key), timeout=60)
        edited = "the click's own retiring edit"
        wait_for(edited, lambda: len(slack.calls_to("chat.update")) == 2, timeout=30)
    expired_answer = "Not run: this proposal has expired: ask for a new one with `/lag remediate <group> <action>`."
    assert answer["text"] == expired_answer
    assert answer["response_type"] == "ephemeral"
    assert leader.proposals.get(proposal_id).state is State.EXPIRED  # type: ignore[union-attr]
    assert events(leader) == [("proposed", "lagbot"), ("expired", "lagbot"), ("refused", APPROVER)]
    assert leader.bot.audit.latest(proposal.cluster, GROUP, 1)[0].detail == {"reason": "expired"}
    assert k8s.replicas() == 2  # the scale never ran
    # The stale message it came from is retired the same way: the same blocks again, the same message.
    second = slack.calls_to("chat.update")[1]
    assert (second.args["ts"], blocks_of(second.args)) == (reply.ts, retired_blocks)
    assert [m.blocks for m in slack.thread(CHANNEL, root.ts) if m.ts == reply.ts] == [retired_blocks]


def test_a_lag_remediate_answer_is_retired_through_its_response_url(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    """`/lag remediate` answers in the channel through the command's response URL: no thread reply, no ts. Past the
    proposal's expiry the sweep replaces that answer through the same URL (Slack honours it for 30 minutes)."""
    clock = [NOW]
    r = replica(redis_client, slack, k8s, clock)

    def remediate(_text: str, user: str, _channel: str) -> Reply:
        return remediate_reply(r, deficit(), "scale", user, [], now=clock[0])  # type: ignore[arg-type]

    with serving(r, clock, remediate) as url:
        status, _, key = slack.slash_command(url, SECRET, text=f"remediate {GROUP} scale", user=APPROVER)
        assert status == 200
        [answer] = wait_for("the command answered", lambda: slack.responses.get(key), timeout=60)
        [proposal_id] = {e["value"] for b in answer["blocks"] if b["type"] == "actions" for e in b["elements"]}
        kept = wait_for("where it was shown kept", lambda: RedisProposalMessages(redis_client).find(proposal_id), 30)
    assert kept == proposal_messages.ProposalMessage(
        "", "", answer["text"], tuple(answer["blocks"]), (proposal_id,), slack.response_url(key)
    )

    clock[0] = NOW + 601
    assert r.expire_due(now=clock[0]) == [proposal_id]
    assert r.expire_due(now=clock[0]) == []  # once
    line = ":hourglass: *Scale orders 2 -&gt; 4*: expired at 2026-09-21 14:23 UTC, nothing was run."
    [first, replaced] = slack.responses[key]
    assert (replaced["replace_original"], replaced["text"]) == (True, first["text"])
    assert replaced["blocks"] == list(render.settled_blocks(first["blocks"], proposal_id, line))
    assert not any(b["type"] == "actions" for b in replaced["blocks"])
    assert slack.calls_to("chat.update") == []
    assert events(r) == [("proposed", APPROVER), ("expired", "lagbot")]


def test_a_reply_posted_after_its_proposal_expired_is_retired_once_it_is_there(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    """Slack was slow: the reply with the buttons was still in the outbox when the proposal expired. The sweep
    retires it once the outbox has posted it, and only once."""
    clock = [NOW]
    r = replica(redis_client, slack, k8s, clock)
    assert r.bot.leadership.tick()
    assert r.bot.apply([deficit()], now=NOW) == 1  # type: ignore[list-item]
    [proposal_id] = [p.decode() for p in redis_client.zrange(keys.PROPOSALS_EXPIRING, 0, -1)]

    clock[0] = NOW + 601
    assert r.expire_due(now=clock[0]) == [proposal_id]  # no message yet: nothing to edit
    assert slack.calls_to("chat.update") == []
    r.bot.deliver()  # the reply goes out now, with its (expired) buttons
    [root] = slack.channel(CHANNEL)
    [reply] = [m for m in slack.thread(CHANNEL, root.ts) if any(b["type"] == "actions" for b in m.blocks)]
    offered = [dict(b) for b in reply.blocks]

    assert r.expire_due(now=clock[0] + 60) == []  # nothing newly expired; the late message is retired
    assert r.expire_due(now=clock[0] + 120) == []
    line = ":hourglass: *Scale orders 2 -&gt; 4*: expired at 2026-09-21 14:23 UTC, nothing was run."
    [update] = slack.calls_to("chat.update")
    assert (update.args["ts"], blocks_of(update.args)) == (
        reply.ts,
        list(render.settled_blocks(offered, proposal_id, line)),
    )
    assert redis_client.zcard(keys.PROPOSALS_UNRETIRED) == 0
