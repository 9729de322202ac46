"""Runs heartbeat: a run whose replica died is finished as interrupted within three beats, said in its thread
and the audit, and the group is free for new proposals; a run that still beats is left alone."""

from __future__ import annotations

import json

import pytest
import redis

from lagbot.core import keys
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.approvals import State
from lagbot.service.heartbeat import STALE_BEATS, RunHeartbeat
from lagbot.service.remediate import Remediator
from tests.support.bot_process import wait_for
from tests.support.k8s_shop import Shop
from tests.support.remediator_rig import NOW, _broker, deficit, events, k8s, remediator, slack
from tests.support.verdicts import CLUSTER, GROUP

pytestmark = pytest.mark.integration
__all__ = ["_broker", "k8s", "slack"]  # fixtures from tests.support.remediator_rig


def incident_bot(redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop) -> Remediator:
    r = remediator(redis_client, slack, k8s, wired=True, remediations={"scale": {"max_replicas": 8, "cooldown": 0}})
    bot = r.bot
    bot.settings = bot.settings.model_copy(
        update={"slack": bot.settings.slack.model_copy(update={"default_channel": "C1"})}
    )
    bot.leadership.tick()
    return r


def proposal_ids(slack: SlackEmulator) -> list[str]:
    return [
        str(element["value"])
        for message in slack.history("C1")
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block.get("elements", [])
        if str(element.get("action_id", "")).startswith("approve:")
    ]


def test_a_run_whose_heartbeat_stopped_is_interrupted_in_its_thread_and_audit_and_frees_the_group(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    r = incident_bot(redis_client, slack, k8s)
    bot = r.bot
    interval = bot.settings.leader.run_heartbeat
    assert bot.apply([deficit()], now=NOW) == 1
    bot.deliver()
    [proposal_id] = proposal_ids(slack)

    # Approved and started on a replica that beat once, then was killed (no finish, no more beats).
    approval = r.proposals.approve(proposal_id, "U0ONCALL1", now=NOW)
    assert approval.verdict.value == "run"
    RunHeartbeat(r.heartbeats, proposal_id, interval=interval, clock=lambda: NOW).beat()
    assert redis_client.exists(f"lagbot:busy:{CLUSTER}:{GROUP}") == 1

    assert r.reap(now=NOW + STALE_BEATS * interval) == []  # silent, but not for long yet
    assert r.reap(now=NOW + STALE_BEATS * interval + 1) == [proposal_id]
    assert r.reap(now=NOW + 3_600) == []  # once

    finished = r.proposals.get(proposal_id)
    assert finished is not None and finished.state is State.FAILED
    expected = "interrupted: scale stopped reporting (no heartbeat for 30 s, its replica stopped); check the workload"
    assert finished.detail == expected + " before trying again"
    assert redis_client.exists(f"lagbot:busy:{CLUSTER}:{GROUP}") == 0  # new runs are possible again
    assert r.heartbeats.beating() == [] and redis_client.zcard(keys.PROPOSALS_HEARTBEAT) == 0

    [failed] = [e for e in bot.audit.latest(CLUSTER, GROUP, 50) if e.event == "failed"]
    assert (failed.user, failed.detail["data"], failed.detail["detail"]) == (
        "lagbot",
        {"interrupted": True},
        expected + " before trying again",
    )
    assert [e for e, _ in events(r)] == ["proposed", "failed"]

    bot.deliver()
    [root] = slack.channel("C1")
    last = slack.thread("C1", root.ts)[-1]
    assert last.text == f":x: *Scale orders 2 -&gt; 4* failed: {expected} before trying again"
    assert "remediation *scale*: interrupted" in json.dumps(slack.channel("C1")[0].blocks)


def test_a_run_that_still_beats_is_not_interrupted(redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop) -> None:
    r = incident_bot(redis_client, slack, k8s)
    bot = r.bot
    assert bot.apply([deficit()], now=NOW) == 1
    bot.deliver()
    [proposal_id] = proposal_ids(slack)
    assert r.proposals.approve(proposal_id, "U0ONCALL1", now=NOW).verdict.value == "run"
    clock = {"now": NOW}
    with RunHeartbeat(r.heartbeats, proposal_id, interval=0.05, clock=lambda: clock["now"]):
        clock["now"] = NOW + 1_000  # time passes; the run keeps beating
        wait_for(
            "a beat at the new time",
            lambda: redis_client.zscore(keys.PROPOSALS_HEARTBEAT, proposal_id) == NOW + 1_000,
            5,
        )
        assert r.reap(now=NOW + 1_000 + 1) == []
    assert r.proposals.get(proposal_id).state is State.RUNNING
