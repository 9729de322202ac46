"""The remediation coordinator in one process: real Redis, the Slack emulator, the real Kubernetes API server.

What the end-to-end tests cannot reach quickly: auto-approval (only low risk, never in a maintenance
window), the KEDA hand-back after the hold, proposal wording, and the audit of each step.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import redis

from lagbot.core import keys
from lagbot.core.model import Cause, Severity, Status
from lagbot.devkit.emulator import SlackEmulator
from lagbot.remediations.base import Progress
from lagbot.remediations.drain import wording as remediations_drain_wording
from lagbot.remediations.executors.kubernetes import KEDA_PAUSED, KubernetesExecutor
from lagbot.service.approvals import State
from lagbot.service.bot import Bot
from lagbot.service.checkpoints import CheckPoint
from lagbot.service.incidents import Incident
from lagbot.service.remediate import Remediator
from lagbot.service.remediation_state import RemediationState, RunState
from lagbot.service.restores import RESTORE_LEASE
from lagbot.slack.replies import remediate_args
from tests.support.bot_process import wait_for
from tests.support.k8s_shop import Shop
from tests.support.remediator_rig import NOW, _broker, deficit, events, k8s, remediator, slack
from tests.support.verdicts import CLUSTER, GROUP, partition, verdict

pytestmark = pytest.mark.integration

__all__ = ["_broker", "k8s", "slack"]  # fixtures from tests.support.remediator_rig


def test_a_restore_interrupted_by_a_dying_replica_is_run_by_another_after_the_lease(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    rule = {"remediations": {"scale": {"max_replicas": 8, "hold_for": "10m"}}}
    r = remediator(redis_client, slack, k8s, **rule)
    [proposal], _ = r.propose(deficit(), now=NOW, incident=None)  # type: ignore[arg-type]
    assert r.click(proposal.id, "U0ONCALL1", now=NOW).ephemeral.startswith(":white_check_mark:")
    paused = {"owner": "shop", KEDA_PAUSED: "4"}
    assert k8s.annotations() == paused

    def dies(_workload: object) -> KubernetesExecutor:
        raise KeyboardInterrupt  # stands in for the process being killed in the middle of the restore

    dying = Remediator(r.bot, proposals=r.proposals, directory=r.directory, executor_for=dies)
    with pytest.raises(KeyboardInterrupt):
        dying.restore_due(now=NOW + 600)
    assert k8s.annotations() == paused  # not handed back

    other = remediator(redis_client, slack, k8s, **rule)  # another replica
    assert other.restore_due(now=NOW + 600 + RESTORE_LEASE - 1) == []  # still claimed by the dead one
    [outcome] = other.restore_due(now=NOW + 600 + RESTORE_LEASE)
    assert outcome.ok, outcome.detail
    assert k8s.annotations() == {"owner": "shop"}
    assert other.restore_due(now=NOW + 3_600) == []  # once it ran, it is gone
    assert redis_client.zcard("lagbot:restores") == 0 and redis_client.hlen("lagbot:restores:previous") == 0


def test_a_scale_on_keda_is_handed_back_to_the_autoscaler_once_after_the_hold(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    r = remediator(redis_client, slack, k8s, remediations={"scale": {"max_replicas": 8, "hold_for": "10m"}})
    [proposal], skipped = r.propose(deficit(), now=NOW, incident=None)  # type: ignore[arg-type]
    assert skipped == [] and proposal.plan.summary == "Scale orders 2 -> 4"
    # No incident thread to speak in: the approver is told the result privately.
    answer = r.click(proposal.id, "U0ONCALL1", now=NOW).ephemeral
    assert (
        answer == ":white_check_mark: *Scale orders 2 -&gt; 4* done: scaled deployment shop/orders from 2 to 4 replicas"
    )
    assert k8s.replicas() == 4
    assert k8s.annotations() == {"owner": "shop", KEDA_PAUSED: "4"}

    assert r.restore_due(now=NOW + 599) == []  # the hold is not over
    [outcome] = r.restore_due(now=NOW + 600)
    assert outcome.ok, outcome.detail
    assert k8s.annotations() == {"owner": "shop"}
    assert r.restore_due(now=NOW + 700) == []  # once
    assert events(r) == [
        ("proposed", "lagbot"),
        ("approved", "U0ONCALL1"),
        ("succeeded", "lagbot"),
        ("restored", "lagbot"),
    ]


def test_auto_approve_runs_a_low_risk_action_without_a_click_but_not_in_a_maintenance_window(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    stalled = partition(0, committed=0, log_end=500, status=Status.STALL)  # owner unknown: a rolling restart
    v = replace(verdict([stalled]), causes=(Cause("stuck_consumer", "stuck", 0.9, rank=1),))
    monday = {"days": ["mon"], "start": "14:00", "end": "15:00", "timezone": "UTC"}
    quiet = remediator(redis_client, slack, k8s, remediations={"restart": {"auto_approve": True}}, maintenance=[monday])
    [waiting], _ = quiet.propose(v, now=NOW, incident=None)
    quiet.run_auto_approved(now=NOW)
    assert quiet.proposals.get(waiting.id).state is State.PROPOSED  # type: ignore[union-attr]
    assert (k8s.restarted_at(), k8s.replicas()) == (None, 2)  # nothing ran

    redis_client.flushdb()
    auto = remediator(redis_client, slack, k8s, remediations={"restart": {"auto_approve": True}})
    [ran], _ = auto.propose(v, now=NOW, incident=None)
    assert auto.proposals.get(ran.id).state is State.PROPOSED  # type: ignore[union-attr]  # runs after delivery
    auto.run_auto_approved(now=NOW)
    done = auto.proposals.get(ran.id)
    assert done is not None and (done.state, done.approvals) == (State.SUCCEEDED, ("lagbot",)), done
    assert k8s.restarted_at() is not None  # the rolling restart (owners unknown to Kafka here)
    assert ("approved", "lagbot") in events(auto)


def test_remediate_arguments_are_parsed_or_refused_with_the_usage() -> None:
    assert remediate_args("scale", ["4"]) == {"replicas": 4}
    assert remediate_args("scale", []) == {}
    assert remediate_args("reset_offsets", ["shift", "-5"]) == {"mode": "shift", "shift": -5}
    assert remediate_args("reset_offsets", ["latest"]) == {"mode": "latest"}
    assert remediate_args("drain", ["s3a://bucket/backlog"]) == {"sink": "s3a://bucket/backlog"}
    for action, args in [("scale", ["four"]), ("reset_offsets", []), ("reset_offsets", ["shift"]), ("restart", ["x"])]:
        with pytest.raises(ValueError, match="Usage: `/lag remediate <group> "):
            remediate_args(action, args)


def test_an_auto_approved_run_speaks_in_its_incident_thread_after_the_root(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    """Through the incident loop: the run waits until the root and first reply are delivered."""
    r = remediator(redis_client, slack, k8s, wired=True, remediations={"restart": {"auto_approve": True}})
    bot = r.bot
    bot.settings = bot.settings.model_copy(
        update={"slack": bot.settings.slack.model_copy(update={"default_channel": "C1"})}
    )
    bot.leadership.tick()
    stalled = partition(0, committed=0, log_end=500, status=Status.STALL)
    v = replace(verdict([stalled]), causes=(Cause("stuck_consumer", "stuck", 0.9, rank=1),))

    assert bot.apply([v], now=NOW) == 1
    bot.deliver()
    r.run_auto_approved(now=NOW)
    deliver_all(bot)  # the run's progress lines are delivered in the background, then by the leader

    [root] = slack.channel("C1")
    texts = [m.text for m in slack.thread("C1", root.ts)]
    assert texts[0].startswith("Partitions of")  # the first reply: table and causes (edited with the root)
    assert texts[1] == ":wrench: A remediation can now be proposed for this incident:"  # the buttons' own reply
    assert texts[2] == ":gear: Approved by the policy (auto-approve): running *Rolling restart of orders*"
    assert texts[3] == "rolling restart of orders ..."  # the remediation's own progress line
    assert texts[4].startswith(":white_check_mark: *Rolling restart of orders* done: ")
    assert bot.outbox.dead_letters() == []
    assert "remediation *restart*: verifying" in str(root.blocks)  # the root shows where the action is


def test_the_rebalance_our_own_restart_caused_is_expected_not_a_new_cause(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    """Membership changes within the settle period of our restart are its rebalance: no rebalance_churn reply.
    The settle period is (settle_checks 2 + 1) x check_interval 60 s = 180 s from when the restart finished."""
    r = remediator(redis_client, slack, k8s, wired=True, remediations={"restart": {"auto_approve": True}})
    bot = r.bot
    bot.settings = bot.settings.model_copy(
        update={"slack": bot.settings.slack.model_copy(update={"default_channel": "C1"})}
    )
    bot.leadership.tick()
    stalled = partition(0, committed=0, log_end=500, status=Status.STALL)
    stuck = Cause("stuck_consumer", "stuck", 0.9, rank=1)
    v = replace(verdict([stalled]), causes=(stuck,))
    assert bot.apply([v], now=NOW) == 1
    bot.deliver()
    r.run_auto_approved(now=NOW)
    incident = bot.incidents.get(CLUSTER, GROUP)
    assert incident is not None
    state = r.state(incident.id)
    assert state is not None
    assert (state.action, state.state) == ("restart", "verifying"), state
    assert (state.executed_at, state.settle_until) == (NOW, NOW + 180.0)
    [root] = slack.channel("C1")
    replies = len(slack.thread("C1", root.ts))

    def churn(*changed_at: float) -> Cause:
        evidence: dict[str, object] = {"changed_at": list(changed_at), "rebalancing_at": []}
        return Cause("rebalance_churn", "membership changed 2 times", 0.95, rank=1, evidence=evidence)

    # Two changes at +60 s and +120 s: the restart's own rebalance. No new-cause reply, churn not stated.
    bot.apply([replace(v, causes=(churn(NOW + 60, NOW + 120), replace(stuck, rank=2)))], now=NOW + 120)
    deliver_all(bot)
    texts = [m.text for m in slack.thread("C1", root.ts)]
    assert not any("New likely cause" in t for t in texts[replies:])
    after = bot.incidents.get(CLUSTER, GROUP)
    assert after is not None and "rebalance_churn" not in after.causes_stated

    # Two changes after the settle period (+240 s, +300 s): churn of its own, said once.
    bot.apply([replace(v, causes=(churn(NOW + 240, NOW + 300), replace(stuck, rank=2)))], now=NOW + 300)
    deliver_all(bot)
    texts = [m.text for m in slack.thread("C1", root.ts)]
    [said] = [t for t in texts[replies:] if "New likely cause" in t]
    assert said.startswith(":mag: New likely cause (was stuck_consumer): *1. rebalance_churn*"), said


def deliver_all(bot: Bot) -> None:
    """Deliver until the outbox is empty: a delivery returns at once while another (the run's background
    delivery of its progress lines) holds the outbox lock, as the leader's scheduled delivery would retry."""
    wait_for("the outbox to empty", lambda: (bot.deliver(), not bot.outbox.pending())[1], timeout=30)


def test_a_run_that_crashes_or_whose_process_died_is_finished_as_failed_once(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    r = remediator(redis_client, slack, k8s, remediations={"scale": {"max_replicas": 8, "cooldown": 0}})
    [crashing], _ = r.propose(deficit(), now=NOW, incident=None)  # type: ignore[arg-type]
    working = r.executor_for
    r.executor_for = lambda workload: (_ for _ in ()).throw(RuntimeError("the API server went away"))
    answer = r.click(crashing.id, "U0ONCALL1", now=NOW)
    finished = r.proposals.get(crashing.id)
    assert finished is not None and finished.state is State.FAILED
    assert "RuntimeError: the API server went away" in finished.detail and "failed" in (answer.ephemeral or "")
    assert redis_client.exists("lagbot:busy:prod:orders-consumer") == 0  # the group is free again

    # A run whose process died: it stays 'running' in Redis until its longest run is over, then is reaped.
    r.executor_for = working
    [second], _ = r.propose(deficit(), now=NOW + 4000, incident=None)  # type: ignore[arg-type]
    approval = r.proposals.approve(second.id, "U0ONCALL1", now=NOW + 4000, longest_run=60)
    assert approval.verdict.value == "run"  # ... and then nobody runs it (the process "died")
    assert r.reap(now=NOW + 4059) == []
    assert r.reap(now=NOW + 4061) == [second.id]
    reaped = r.proposals.get(second.id)
    assert reaped is not None and reaped.state is State.FAILED and "did not report a result" in reaped.detail
    assert r.reap(now=NOW + 5000) == []
    assert [e for e, _ in events(r)].count("failed") == 2


def test_verification_is_the_remediation_s_own_the_drain_judges_by_its_drained_ends(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    """After a drain, the check loop asks the drain (Remediation.verify), not the generic rules: offsets below
    the ends it drained mean nothing was committed (no change), at once; the generic rules would still wait for
    their settle checks. Committed at the ends and the severity back to OK: resolved."""
    r = remediator(redis_client, slack, k8s, remediations={"drain": {"sinks": {"paths": ["/srv/drains"]}}})
    behind = deficit()
    [proposal], _ = r.propose(
        behind,  # type: ignore[arg-type]
        now=NOW,
        incident=None,
        actions=["drain"],
        given={"sink": "/srv/drains/orders"},
    )
    assert proposal.action == "drain" and proposal.plan.after["offsets"] == 60_000
    incident = Incident(
        "inc-drain", CLUSTER, GROUP, "C0LAG", NOW, Severity.WARN, Severity.WARN, 60_000, None, Status.WARN, NOW
    )
    v = behind
    baseline = CheckPoint(NOW, v.total_lag, v.status, v.severity, v.produce_rate, v.consume_rate, v.error)  # type: ignore[attr-defined]
    verifying = RemediationState("drain", RunState.VERIFYING, "", id=proposal.id, checks=(baseline,))
    r.runs.write(incident.id, verifying)

    r.verify_step(incident, behind, now=NOW + 30)  # type: ignore[arg-type]
    state = r.runs.read(incident.id)[0]
    assert state is not None
    assert (state.state, state.progress) == ("no_change", Progress.NO_CHANGE)
    assert state.detail == remediations_drain_wording.drain_verify_behind(6)

    drained = replace(
        verdict([partition(p, committed=10_000, log_end=10_000) for p in range(6)], produce=0.0, consume=0.0),
        severity=Severity.OK,
        status=Status.OK,
    )
    r.runs.write(incident.id, verifying)
    r.verify_step(incident, drained, now=NOW + 60)
    state = r.runs.read(incident.id)[0]
    assert state is not None
    assert (state.state, state.detail) == ("resolved", remediations_drain_wording.drain_verify_resolved(0))

    # A verification an earlier lagbot left in Redis (format 1, its check points positional lists) goes on.
    old_baseline = [NOW, v.total_lag, v.status.name, v.severity.label, v.produce_rate, v.consume_rate, v.error]  # type: ignore[attr-defined]
    old = {"v": 1, "action": "drain", "state": "verifying", "detail": "", "id": proposal.id, "checks": [old_baseline]}
    redis_client.set(keys.remediation(incident.id), json.dumps(old))
    assert r.runs.read(incident.id)[0] == verifying
    r.verify_step(incident, drained, now=NOW + 60)
    state = r.runs.read(incident.id)[0]
    assert state is not None
    assert (state.state, state.detail) == ("resolved", remediations_drain_wording.drain_verify_resolved(0))
    assert [point.at for point in state.checks] == [NOW, NOW + 60]
