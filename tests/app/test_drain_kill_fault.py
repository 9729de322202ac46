"""Fault: kill -9 of the `lagbot run` replica running a drain, after it paused the consumers (Apache Kafka, a real
redis-server, the Slack emulator, a local fleet of consumer processes, PySpark local in the replica).

The other replica takes over, reaps the run as interrupted and restores what the drain paused: the fleet is back at
its replicas (read back from the executor), the thread says so after the interruption, the audit has the restore.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import Message, SlackEmulator
from lagbot.devkit.fleet import LocalExecutor
from lagbot.remediations.executors.base import Workload
from lagbot.remediations.executors.config import LocalConfig
from tests.conftest import Kafka, Names
from tests.support.bot_process import CHANNEL, SIGNING_SECRET, BotProcess, wait_for
from tests.support.faults import HEARTBEAT, TTL, assert_no_message_lost_or_duplicated, events, leader_of
from tests.support.remediation_rig import APPROVER, REQUESTER, TOKEN, config, start_fleet, write_policy

pytestmark = pytest.mark.integration


@pytest.fixture
def fleets(tmp_path: Path) -> Iterator[LocalExecutor]:
    executor = LocalExecutor(LocalConfig(state_dir=tmp_path / "fleets"))
    yield executor
    executor.stop_all()


def test_kill_9_of_the_replica_mid_drain_restores_the_paused_consumers_once(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    tmp_path: Path,
    fleets: LocalExecutor,
) -> None:
    started = time.monotonic()
    topic, group, fleet = names("topic"), names("group"), names("fleet")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 3_000)
    kafka.produce(topic, 1, 200)
    kafka.commit(group, {(topic, 0): 0, (topic, 1): 0})
    # Two members that take a minute per message: the group stays Stable with its lag while the drain is proposed.
    start_fleet(fleets, broker, fleet, group, topic, replicas=2, delay_ms=60_000)
    workload = Workload(executor="local", name=fleet)
    assert fleets.replicas(workload) == 2

    remediations = {"drain": {"proposal_expiry": "10m", "cooldown": "1m"}}
    cfg = config(
        broker,
        redis_server,
        slack,
        group,
        write_policy(tmp_path, fleet, remediations=remediations),
        fleets.config.state_dir,
    )
    cfg["drain"] = {
        "sink": str(tmp_path / "drained"),
        "master": "local[1]",
        "chunk": 500,
        "manifest_dir": str(tmp_path / "m"),
    }
    cfg["leader"] = {"lease_ttl": f"{TTL:g}s", "run_heartbeat": f"{HEARTBEAT:g}s"}
    bots = [BotProcess(tmp_path, cfg, token=TOKEN, name=f"replica-{i}") for i in range(2)]
    try:
        for bot in bots:
            bot.wait_ready()
        root = wait_for("the incident's root", lambda: next(iter(slack.channel(CHANNEL)), None), timeout=90)
        leader = leader_of(bots)
        survivor = next(b for b in bots if b is not leader)

        status, _, key = slack.slash_command(
            leader.events_url, SIGNING_SECRET, text=f"remediate {group} drain", user=REQUESTER
        )
        assert status == 200
        [reply] = wait_for("the drain proposal", lambda: slack.responses[key], timeout=30)
        assert reply["response_type"] == "in_channel", reply["text"]
        proposal = Message(CHANNEL, f"{time.time():.6f}", reply["text"], reply["blocks"])
        pause_step = f"Pause consumers: scale \u02cb{fleet}\u02cb to 0 through the executor"  # its backticks made inert
        assert pause_step in json.dumps(reply["blocks"], ensure_ascii=False), reply["blocks"]
        status, _, _ = slack.click_button(
            leader.events_url, SIGNING_SECRET, user=APPROVER, message=proposal, action_prefix="approve:"
        )
        assert status == 200

        def thread() -> list[str]:
            return [m.text for m in slack.thread(CHANNEL, root.ts)]

        paused = f"consumers paused: {fleet} scaled from 2 to 0"
        wait_for("the pause", lambda: fleets.replicas(workload) == 0 and any(paused in t for t in thread()), 90)
        wait_for("the drain under way", lambda: any(f"draining {group}:" in t for t in thread()), 60)
        leader.stop(signal.SIGKILL)  # mid-drain: its own `finally` never runs
        killed_at = time.monotonic()

        restored_line = (
            f":arrows_counterclockwise: The interrupted drain's pause is undone: consumers restored: {fleet} back to 2 "
            "replica(s)"
        )
        wait_for("the restore in the thread", lambda: restored_line in thread(), timeout=60)
        print(f"\nfault kill-9 mid-drain: consumers restored {time.monotonic() - killed_at:.1f} s after the kill")
        assert fleets.replicas(workload) == 2  # read back from the executor: both members run again
        assert [m.state for m in fleets.status(fleet)] == ["running", "running"]

        texts = thread()
        interrupted = (
            "* failed: interrupted: drain stopped reporting (no heartbeat for 3 s, its replica stopped); check the "
            "workload before trying again"
        )
        [failed] = [i for i, t in enumerate(texts) if t.endswith(interrupted)]
        assert texts[failed].startswith(":x: *Drain ") and texts.index(restored_line) > failed
        assert texts.count(restored_line) == 1

        audit = [e for e in events(redis_client, group) if e.event in ("failed", "restored", "restore_failed")]
        assert [e.event for e in audit] == ["failed", "restored"]
        assert audit[0].detail["data"] == {"interrupted": True}
        assert audit[1].detail == {"detail": f"consumers restored: {fleet} back to 2 replica(s)"}
        # Removed once it ran (just after its reply was delivered): nothing is left to restore again.
        wait_for(
            "the restore removed from the queue",
            lambda: redis_client.zcard("lagbot:restores") == 0 and redis_client.hlen("lagbot:restores:previous") == 0,
            timeout=10,
        )
        assert_no_message_lost_or_duplicated(slack)
        assert "Traceback" not in survivor.log()
        print(f"kill to restore, whole test body: {time.monotonic() - started:.0f} s")  # a figure, never a limit
    finally:
        for bot in bots:
            bot.stop(signal.SIGKILL)
