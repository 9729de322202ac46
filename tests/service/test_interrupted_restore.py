"""A run whose process dies after it changed the workload is reaped and its change undone: real Redis, the real
Kubernetes API server (a KEDA-managed Deployment), the real broker for the drain's pre-flight.

The process's death is a KeyboardInterrupt raised by the executor right after its change (nothing of the run's own
clean-up runs after it, as after kill -9); then the heartbeat stops and the leader's housekeeping (`reap`, then
`restore_due`) finds the run silent. tests/app/test_drain_kill_fault.py kills a real `lagbot run` mid-drain.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import redis

from lagbot.devkit.emulator import SlackEmulator
from lagbot.remediations import registry
from lagbot.remediations.base import Outcome
from lagbot.remediations.executors.base import Workload
from lagbot.remediations.executors.kubernetes import KEDA_PAUSED, KubernetesExecutor
from lagbot.service.approvals import State
from lagbot.service.heartbeat import STALE_BEATS, RunHeartbeat
from lagbot.service.remediate import Remediator
from tests.conftest import Kafka, Names
from tests.support.drain_rig import verdict_of
from tests.support.k8s_shop import Shop
from tests.support.remediator_rig import NOW, _broker, deficit, events, k8s, remediator, slack
from tests.support.verdicts import CLUSTER, member

pytestmark = pytest.mark.integration

__all__ = ["_broker", "k8s", "slack"]  # fixtures from tests.support.remediator_rig

HEARTBEAT = 10.0  # the default leader.run_heartbeat
SILENT = NOW + STALE_BEATS * HEARTBEAT + 1


class DiesAfter(KubernetesExecutor):
    """The real executor; the process "dies" (KeyboardInterrupt) right after the named call changed the workload, or
    the run breaks there (`error`: an unexpected exception out of the remediation's own clean-up)."""

    def __init__(self, real: KubernetesExecutor, call: str, error: type[BaseException] = KeyboardInterrupt) -> None:
        super().__init__(real.config)
        self.call = call
        self.error = error

    def scale(self, workload: Workload, replicas: int) -> Outcome:
        super().scale(workload, replicas)
        if self.call == "scale":
            raise self.error
        raise AssertionError("not reached")

    def set_paused_replicas(self, workload: Workload, replicas: int | None) -> Outcome:
        outcome = super().set_paused_replicas(workload, replicas)
        if self.call == "set_paused_replicas":
            raise self.error
        return outcome


def trail(r: Remediator, group: str) -> list[tuple[str, str]]:
    return [(e.event, e.user) for e in reversed(r.bot.audit.latest(CLUSTER, group, 50))]


def dies_mid_run(r: Remediator, proposal_id: str, call: str) -> None:
    """Approve, beat once at NOW, run until the executor's `call` changed the workload, then die there."""
    approval = r.proposals.approve(proposal_id, "U0ONCALL1", now=NOW, longest_run=7_200)
    assert approval.verdict.value == "run" and approval.proposal is not None
    RunHeartbeat(r.heartbeats, proposal_id, interval=HEARTBEAT, clock=r.bot.clock).beat()
    workload = r.rule(approval.proposal.cluster, approval.proposal.group).workload
    assert workload is not None
    real = r.executor_for(workload)
    assert isinstance(real, KubernetesExecutor)
    r.executor_for = lambda _workload: DiesAfter(real, call)
    context = r.execution_context(approval.proposal)
    with pytest.raises(KeyboardInterrupt):
        registry.get(approval.proposal.action).execute(approval.proposal.plan, context)
    r.executor_for = lambda _workload: real


def test_a_drain_whose_process_died_after_the_pause_is_reaped_and_its_consumers_restored(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop, kafka: Kafka, names: Names, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 300)
    kafka.commit(group, {(topic, 0): 0, (topic, 1): 0})
    drain = {"sink": str(tmp_path / "sink"), "master": "local[1]", "manifest_dir": str(tmp_path / "m")}
    r = remediator(redis_client, slack, k8s, drain=drain, remediations={"drain": {"cooldown": 0}})
    # As proposed while its consumers ran (the Deployment's pods stand for them: they never join the group).
    seen = dataclasses.replace(verdict_of(kafka, group), cluster=CLUSTER, members=(member(1, 0, 1, topic=topic),))
    [proposal], skipped = r.propose(seen, now=NOW, incident=None, actions=["drain"])
    assert skipped == [] and proposal.plan.after["pause"] is True
    assert k8s.replicas() == 2 and k8s.annotations() == {"owner": "shop"}

    dies_mid_run(r, proposal.id, "scale")
    assert k8s.replicas() == 0 and k8s.annotations() == {"owner": "shop", KEDA_PAUSED: "0"}  # paused, then died
    # What the drain held before pausing: in Redis, not due (a live run undoes its own pause).
    assert redis_client.hexists("lagbot:restores:previous", proposal.id) and redis_client.zcard("lagbot:restores") == 0

    assert r.reap(now=NOW + STALE_BEATS * HEARTBEAT - 1) == []  # still beating, as far as anyone knows
    assert r.reap(now=SILENT) == [proposal.id]
    reaped = r.proposals.get(proposal.id)
    assert reaped is not None and reaped.state is State.FAILED and "stopped reporting" in reaped.detail
    [outcome] = r.restore_due(now=SILENT)
    assert outcome.ok, outcome.detail
    assert outcome.detail == (
        "consumers restored: orders back to 2 replica(s); ScaledObject orders-so not paused: KEDA scales it again "
        "as before"
    )
    assert k8s.replicas() == 2 and k8s.annotations() == {"owner": "shop"}  # read back from the API server
    assert r.restore_due(now=SILENT + 600) == []  # once
    assert r.reap(now=SILENT + 600) == []
    assert redis_client.zcard("lagbot:restores") == 0 and redis_client.hlen("lagbot:restores:previous") == 0
    assert trail(r, group) == [("proposed", "lagbot"), ("failed", "lagbot"), ("restored", "lagbot")]
    [restored] = [e for e in r.bot.audit.latest(CLUSTER, group, 10) if e.event == "restored"]
    assert restored.detail == {"detail": outcome.detail}


def test_a_drain_reaped_when_its_restore_cannot_run_says_exactly_what_to_restore_by_hand(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop, kafka: Kafka, names: Names, tmp_path: Path
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 100)
    kafka.commit(group, {(topic, 0): 0})
    drain = {"sink": str(tmp_path / "sink"), "master": "local[1]", "manifest_dir": str(tmp_path / "m")}
    r = remediator(redis_client, slack, k8s, drain=drain, remediations={"drain": {"cooldown": 0}})
    seen = dataclasses.replace(verdict_of(kafka, group), cluster=CLUSTER, members=(member(1, 0, topic=topic),))
    [proposal], _ = r.propose(seen, now=NOW, incident=None, actions=["drain"])
    dies_mid_run(r, proposal.id, "scale")

    def unreachable(_workload: object) -> KubernetesExecutor:
        raise ValueError("no executor is configured")

    r.executor_for = unreachable
    assert r.reap(now=SILENT) == [proposal.id]
    [outcome] = r.restore_due(now=SILENT)
    assert not outcome.ok
    assert outcome.detail == (
        "RESTORE FAILED: scale orders back to 2 by hand (no executor is configured for it); RESTORE FAILED: "
        "ScaledObject orders-so needs its autoscaling.keda.sh/paused-replicas removed by hand"
    )
    assert k8s.replicas() == 0  # nothing could restore it: the words above are what a human must do
    assert trail(r, group) == [("proposed", "lagbot"), ("failed", "lagbot"), ("restore_failed", "lagbot")]


def test_a_scale_whose_process_died_after_pausing_keda_hands_the_autoscaler_back_when_reaped(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    r = remediator(redis_client, slack, k8s, remediations={"scale": {"max_replicas": 8, "hold_for": "10m"}})
    [proposal], _ = r.propose(deficit(), now=NOW, incident=None)  # type: ignore[arg-type]
    dies_mid_run(r, proposal.id, "set_paused_replicas")
    assert k8s.annotations() == {"owner": "shop", KEDA_PAUSED: "4"} and k8s.replicas() == 2

    assert r.reap(now=SILENT) == [proposal.id]
    [outcome] = r.restore_due(now=SILENT)  # at once, not after the hold: the run is over
    assert outcome.ok, outcome.detail
    assert k8s.annotations() == {"owner": "shop"} and k8s.replicas() == 2
    assert r.restore_due(now=NOW + 3_600) == []
    assert events(r) == [("proposed", "lagbot"), ("failed", "lagbot"), ("restored", "lagbot")]


def test_a_scale_that_crashed_after_pausing_keda_hands_the_autoscaler_back_at_once(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    """Not a dead process: the run raised something its own clean-up did not expect, after the pause. The bot
    finishes it as crashed and what it held to undo is due at once (not left paused for good)."""
    r = remediator(redis_client, slack, k8s, remediations={"scale": {"max_replicas": 8, "hold_for": "10m"}})
    [proposal], _ = r.propose(deficit(), now=NOW, incident=None)  # type: ignore[arg-type]
    workload = r.rule(proposal.cluster, proposal.group).workload
    assert workload is not None
    real = r.executor_for(workload)
    assert isinstance(real, KubernetesExecutor)
    r.executor_for = lambda _workload: DiesAfter(real, "set_paused_replicas", RuntimeError)
    r.approve_and_run(proposal.id, "U0ONCALL1", now=NOW)
    [failed] = [e for e in r.bot.audit.latest(CLUSTER, proposal.group, 50) if e.event == "failed"]
    assert failed.detail["data"] == {"crashed": True}
    assert k8s.annotations() == {"owner": "shop", KEDA_PAUSED: "4"} and k8s.replicas() == 2
    r.executor_for = lambda _workload: real
    [restored] = r.restore_due(now=NOW + 1)  # at once, not after the hold
    assert restored.ok, restored.detail
    assert k8s.annotations() == {"owner": "shop"} and k8s.replicas() == 2
    assert r.restore_due(now=NOW + 3_600) == []
    assert events(r) == [
        ("proposed", "lagbot"),
        ("approved", "U0ONCALL1"),
        ("failed", "lagbot"),
        ("restored", "lagbot"),
    ]


def test_a_hold_stranded_by_a_replica_that_died_while_finishing_the_run_is_undone_after_a_grace(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    """The run was finished (its state recorded) but the replica died before it released or dropped the hold: no
    heartbeat will ever be missed, so only the leader's sweep of holds whose run is over can undo the change."""
    r = remediator(redis_client, slack, k8s, remediations={"scale": {"max_replicas": 8, "hold_for": "10m"}})
    [proposal], _ = r.propose(deficit(), now=NOW, incident=None)  # type: ignore[arg-type]
    dies_mid_run(r, proposal.id, "set_paused_replicas")
    assert r.proposals.finish(proposal.id, ok=False, detail="interrupted", now=NOW + 1)  # ... and died right here
    assert r.restores.held() == [proposal.id]

    grace = STALE_BEATS * HEARTBEAT
    assert r.reap(now=NOW + 1 + grace - 1) == [] and r.restore_due(now=NOW + grace) == []  # the finisher may be busy
    assert r.restores.held() == [proposal.id]
    assert r.reap(now=NOW + 1 + grace) == []  # nothing to reap: the run is finished; its hold is released
    assert r.restores.held() == []
    [outcome] = r.restore_due(now=NOW + 1 + grace)
    assert outcome.ok, outcome.detail
    assert k8s.annotations() == {"owner": "shop"} and k8s.replicas() == 2  # read back from the API server
    assert r.reap(now=NOW + 3_600) == [] and r.restore_due(now=NOW + 3_600) == []  # once
    assert redis_client.zcard("lagbot:restores") == 0 and redis_client.hlen("lagbot:restores:previous") == 0
    assert events(r) == [("proposed", "lagbot"), ("restored", "lagbot")]
