"""Remediations end to end: `lagbot run`, Apache Kafka, real Redis, the Slack emulator, a local fleet.

(a) a consumer stops committing -> STALL and stuck_consumer -> an approver clicks restart -> the fleet is
restarted -> lag back to 0, read from the broker; (b) one consumer on 4 partitions with a faster producer ->
throughput_deficit -> approve scale to 4 -> lag drains; (c) a non-approver's click is refused, nothing runs,
the audit shows it; (d) 20 concurrent clicks through two bot processes -> exactly one execution; (e) an
expired proposal is refused; (f) reset refused while the group is active, done when Empty with two
approvers, offsets read back; and deny with a reason through the modal.
"""

from __future__ import annotations

import copy
import json
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import Message, SlackEmulator
from lagbot.devkit.fleet import LocalExecutor
from lagbot.remediations.executors.config import LocalConfig
from lagbot.service.audit import AuditLog
from tests.conftest import Kafka, Names
from tests.support.bot_process import CHANNEL, SIGNING_SECRET, BotProcess, wait_for
from tests.support.group_commits import committed
from tests.support.paced_writer import PacedWriter
from tests.support.remediation_rig import (
    APPROVER,
    REQUESTER,
    SECOND,
    TOKEN,
    config,
    log_end,
    replies_text,
    start_fleet,
    thread_with_button,
    write_policy,
)

pytestmark = pytest.mark.integration

OUTSIDER = "U0OUTSIDER"


@pytest.fixture
def fleet_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "fleets"
    yield path
    executor = LocalExecutor(LocalConfig(state_dir=path))
    executor.stop_all()


def audit_events(redis_client: redis.Redis, group: str) -> list[tuple[str, str]]:
    return [(e.event, e.user) for e in reversed(AuditLog(redis_client).latest("embedded", group, 100))]


def test_a_restart_the_stuck_consumer_then_lag_drains_to_zero(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    tmp_path: Path,
    fleet_dir: Path,
) -> None:
    topic, group, fleet = names("topic"), names("group"), names("fleet")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 50)
    fleets = LocalExecutor(LocalConfig(state_dir=fleet_dir))
    start_fleet(fleets, broker, fleet, group, topic, commit_every=10, commit_interval_ms=200)
    wait_for("the fleet to catch up", lambda: committed(kafka, group, topic, 1) == {0: 50}, timeout=60)
    [member] = fleets.members(fleet)
    fleets.make_stuck(fleet, member.client_id)
    wait_for("the member to see its flag and stop", lambda: [m.state for m in fleets.status(fleet)] == ["stuck"])
    kafka.produce(topic, 0, 300)

    bot = BotProcess(
        tmp_path, config(broker, redis_server, slack, group, write_policy(tmp_path, fleet), fleet_dir), token=TOKEN
    )
    try:
        bot.wait_ready()
        root, reply = thread_with_button(slack, "approve:")
        assert "stuck_consumer" in json.dumps(reply.blocks) and "stalled" in root.text
        assert committed(kafka, group, topic, 1) == {0: 50}  # nothing ran before the click

        status, _, key = slack.click_button(
            bot.events_url, SIGNING_SECRET, user=APPROVER, message=reply, action_prefix="approve:"
        )
        assert status == 200
        wait_for("the restarted fleet to drain the lag", lambda: committed(kafka, group, topic, 1) == {0: 350}, 90)
        assert log_end(kafka, topic, 1) == [350]
        [restarted] = fleets.members(fleet)
        assert restarted.pid != member.pid and restarted.client_id == member.client_id
        wait_for("the result in the thread", lambda: "done" in replies_text(slack, root))
        assert slack.responses[key] == []  # the approver got no private refusal
        events = audit_events(redis_client, group)
        assert ("proposed", "lagbot") in events and ("approved", APPROVER) in events
        assert ("succeeded", "lagbot") in events

        def verified() -> bool:
            entries = AuditLog(redis_client).latest("embedded", group, 100)
            return any(e.event == "verified" and e.detail.get("progress") == "resolved" for e in entries)

        wait_for("the verification: back to normal", verified, timeout=60)
        # The audit entry is written before the thread's line is queued and delivered: wait for the delivery.
        wait_for("the verification's line in the thread", lambda: "back to normal" in replies_text(slack, root), 30)
        assert "Traceback" not in bot.log()
        # Every key the running bot wrote (windows, history, incidents, outbox, proposals, audit, run state,
        # leases) carries the one prefix.
        assert sorted({k.split(b":")[0] for k in redis_client.keys("*")}) == [b"lagbot"]
    finally:
        bot.stop(signal.SIGKILL)


def test_c_and_e_a_non_approver_and_an_expired_proposal_are_refused(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    tmp_path: Path,
    fleet_dir: Path,
) -> None:
    topic, group, fleet = names("topic"), names("group"), names("fleet")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 400)
    kafka.commit(group, {(topic, 0): 10, (topic, 1): 0})
    fleets = LocalExecutor(LocalConfig(state_dir=fleet_dir))
    start_fleet(fleets, broker, fleet, group + "-elsewhere", topic, replicas=1)
    [member] = fleets.members(fleet)
    remediations = {"scale": {"min_replicas": 1, "max_replicas": 3, "proposal_expiry": "6s", "cooldown": "1m"}}
    policy = write_policy(tmp_path, fleet, remediations=remediations)
    bot = BotProcess(tmp_path, config(broker, redis_server, slack, group, policy, fleet_dir), token=TOKEN)
    try:
        bot.wait_ready()
        root, reply = thread_with_button(slack, "approve:", "1 -> 2")
        shown_at = time.monotonic()

        status, _, key = slack.click_button(
            bot.events_url, SIGNING_SECRET, user=OUTSIDER, message=reply, action_prefix="approve:"
        )
        assert status == 200
        [refusal] = wait_for("the private refusal", lambda: slack.responses[key])
        assert refusal["response_type"] == "ephemeral" and "not an approver" in refusal["text"]
        assert ("refused", OUTSIDER) in audit_events(redis_client, group)

        time.sleep(max(0.0, 7.0 - (time.monotonic() - shown_at)))  # past the 6 s expiry
        _, _, late = slack.click_button(
            bot.events_url, SIGNING_SECRET, user=APPROVER, message=reply, action_prefix="approve:"
        )
        [expired] = wait_for("the expiry refusal", lambda: slack.responses[late])
        assert "expired" in expired["text"]
        assert [m.pid for m in fleets.members(fleet)] == [member.pid]  # nothing ran
        assert "running" not in replies_text(slack, root)
        events = audit_events(redis_client, group)
        assert ("refused", APPROVER) in events and not any(e == "succeeded" for e, _ in events)
    finally:
        bot.stop(signal.SIGKILL)


def test_b_scale_a_slow_consumer_to_the_partition_count_and_lag_drains(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    slack: SlackEmulator,
    tmp_path: Path,
    fleet_dir: Path,
) -> None:
    topic, group, fleet = names("topic"), names("group"), names("fleet")
    kafka.create_topic(topic, 4)
    fleets = LocalExecutor(LocalConfig(state_dir=fleet_dir))
    # One consumer at ~20 msg/s (50 ms a message) against a producer at up to ~200 msg/s over 4 partitions:
    # even at half that rate, 100 x 1.2 headroom / 20 = 6 replicas would keep up, capped at the 4 partitions.
    start_fleet(fleets, broker, fleet, group, topic, delay_ms=50, commit_every=5, commit_interval_ms=200)
    fleets.wait_settled(fleet, partitions=4)
    writer = PacedWriter(broker.bootstrap, topic, 4)
    writer.start()
    bot = BotProcess(
        tmp_path, config(broker, redis_server, slack, group, write_policy(tmp_path, fleet), fleet_dir), token=TOKEN
    )
    try:
        bot.wait_ready()
        root, reply = thread_with_button(slack, "approve:", "1 -> 4")
        assert "throughput_deficit" in json.dumps([m.blocks for m in slack.thread(CHANNEL, root.ts)])
        slack.click_button(bot.events_url, SIGNING_SECRET, user=APPROVER, message=reply, action_prefix="approve:")
        wait_for("four members", lambda: len(fleets.members(fleet)) == 4, timeout=60)
        writer.stop()
        ends = dict(enumerate(log_end(kafka, topic, 4)))
        wait_for("the lag to drain", lambda: committed(kafka, group, topic, 4) == ends, timeout=90)
        wait_for("the result in the thread", lambda: "done" in replies_text(slack, root))
    finally:
        writer.stop()
        bot.stop(signal.SIGKILL)


def test_d_twenty_concurrent_clicks_through_two_bots_run_once(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    tmp_path: Path,
    fleet_dir: Path,
) -> None:
    topic, group, fleet = names("topic"), names("group"), names("fleet")
    kafka.create_topic(topic, 4)
    kafka.produce(topic, 0, 300)
    kafka.commit(group, {(topic, p): 0 for p in range(4)})
    fleets = LocalExecutor(LocalConfig(state_dir=fleet_dir))
    start_fleet(fleets, broker, fleet, group + "-elsewhere", topic, replicas=1)
    remediations = {"scale": {"min_replicas": 1, "max_replicas": 3, "proposal_expiry": "10m", "cooldown": "1m"}}
    cfg = config(
        broker, redis_server, slack, group, write_policy(tmp_path, fleet, remediations=remediations), fleet_dir
    )
    bots = [BotProcess(tmp_path, cfg, token=TOKEN, name=f"replica-{i}") for i in range(2)]
    try:
        for bot in bots:
            bot.wait_ready()
        _, shown = thread_with_button(slack, "approve:", "1 -> 3")
        # The message as the twenty clients show it when they click: the emulator's copy loses its buttons
        # as soon as the first approval settles the proposal (as in Slack, where late clicks still arrive).
        reply = copy.deepcopy(shown)

        def click(i: int) -> int:
            bot = bots[i % 2]
            user = APPROVER if i % 3 else SECOND
            return slack.click_button(bot.events_url, SIGNING_SECRET, user=user, message=reply,
                                      action_prefix="approve:")[0]  # fmt: skip

        with ThreadPoolExecutor(max_workers=20) as pool:
            statuses = list(pool.map(click, range(20)))
        assert statuses == [200] * 20
        wait_for("the one execution", lambda: any(e == "succeeded" for e, _ in audit_events(redis_client, group)))
        time.sleep(2)  # any second execution would have finished by now
        events = [e for e, _ in audit_events(redis_client, group)]
        assert events.count("succeeded") + events.count("failed") == 1
        assert events.count("approved") == 1
        assert len(fleets.members(fleet)) == 3
    finally:
        for bot in bots:
            bot.stop(signal.SIGKILL)


def test_f_reset_offsets_refused_while_active_done_when_empty_with_two_approvers_and_deny_with_reason(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    tmp_path: Path,
    fleet_dir: Path,
) -> None:
    topic, group, fleet = names("topic"), names("group"), names("fleet")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 200)
    kafka.produce(topic, 1, 100)
    kafka.commit(group, {(topic, 0): 20, (topic, 1): 10})
    remediations = {"reset_offsets": {"approvals_required": 2, "proposal_expiry": "10m", "cooldown": "1s"}}
    policy = write_policy(tmp_path, fleet, remediations=remediations)
    bot = BotProcess(tmp_path, config(broker, redis_server, slack, group, policy, fleet_dir), token=TOKEN)

    def propose(mode: str = "latest") -> Message:
        """An approver asks (a non-approver is refused); the proposal is posted for all to see."""
        text = f"remediate {group} reset_offsets {mode}"
        status, _, key = slack.slash_command(bot.events_url, SIGNING_SECRET, text=text, user=REQUESTER)
        assert status == 200
        [reply] = wait_for("the proposal", lambda: slack.responses[key])
        assert reply["response_type"] == "in_channel", reply["text"]
        return Message(CHANNEL, f"{time.time():.6f}", reply["text"], reply["blocks"])

    def approve(message: Message, user: str, *, answered: bool = False) -> list[dict[str, Any]]:
        """Click, then wait until the bot handled it: a private answer, or a new entry in the audit trail.
        `answered`: a private answer is expected (a refusal is audited before it is answered: wait for it)."""
        before = len(audit_events(redis_client, group))
        status, _, key = slack.click_button(
            bot.events_url, SIGNING_SECRET, user=user, message=message, action_prefix="approve:"
        )
        assert status == 200

        def private() -> list[dict[str, Any]]:
            """What the clicker alone was told: not the proposal's own message replaced with how its run went, which
            the approval that runs it may bring at once or a moment later."""
            return [answer for answer in slack.responses[key] if not answer.get("replace_original")]

        if answered:
            return wait_for("the private answer", private)
        wait_for("the click handled", lambda: private() or len(audit_events(redis_client, group)) > before)
        return private()

    try:
        bot.wait_ready()
        wait_for("a first check", lambda: (bot.health() or {}).get("checks"))

        # While a consumer is in the group, two approvals run the plan, whose pre-flight refuses it.
        consumer = kafka.consumer(group)
        consumer.subscribe([topic])
        kafka.wait_assigned(consumer)
        try:
            first = propose()
            [button] = [e for b in first.blocks if b["type"] == "actions" for e in b["elements"]
                        if e["action_id"].startswith("approve:")]  # fmt: skip
            confirm = button["confirm"]["text"]["text"]
            assert button["style"] == "danger" and confirm.startswith("Data loss") and "skips 270 messages" in confirm
            assert approve(first, APPROVER) == []
            assert (
                approve(first, APPROVER, answered=True)[0]["text"]
                == "Not run: you already approved it: it needs a different second approver."
            )
            assert approve(first, SECOND) == []
            wait_for("the refused run", lambda: ("failed", "lagbot") in audit_events(redis_client, group), 30)
        finally:
            consumer.close()
        assert committed(kafka, group, topic, 2) == {0: 20, 1: 10}

        # Empty now: the same two approvals reset to the log end, read back from the broker.
        time.sleep(1.5)  # past the 1 s cooldown
        second = propose()
        approve(second, APPROVER)
        approve(second, SECOND)
        wait_for("the reset", lambda: committed(kafka, group, topic, 2) == {0: 200, 1: 100}, timeout=30)
        assert [e for e, _ in audit_events(redis_client, group)].count("succeeded") == 1

        # Deny, with a reason given in the modal.
        time.sleep(1.5)
        third = propose("shift -5")
        slack.click_button(bot.events_url, SIGNING_SECRET, user=SECOND, message=third, action_prefix="deny:")
        [view] = wait_for("the deny modal", lambda: slack.views)
        status, _ = slack.submit_view(
            bot.events_url, SIGNING_SECRET, user=SECOND, view=view, values={"reason": {"text": "replaying instead"}}
        )
        assert status == 200
        wait_for("the denial", lambda: ("denied", SECOND) in audit_events(redis_client, group), 30)
        assert approve(third, APPROVER, answered=True)[0]["text"].startswith("Not run: this proposal is already denied")
        assert "Traceback" not in bot.log()
    finally:
        bot.stop(signal.SIGKILL)


def test_drain_through_an_approval_writes_every_offset_once_and_advances_the_group(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    tmp_path: Path,
    fleet_dir: Path,
) -> None:
    import pyarrow.dataset as pads

    topic, group, fleet = names("topic"), names("group"), names("fleet")
    kafka.create_topic(topic, 3)
    kafka.produce(topic, 0, 2_000)  # the hot partition
    kafka.produce(topic, 1, 100)
    kafka.produce(topic, 2, 100)
    kafka.commit(group, {(topic, 0): 0, (topic, 1): 50, (topic, 2): 100})
    sink = tmp_path / "drained"
    remediations = {"drain": {"proposal_expiry": "10m", "cooldown": "1m"}}
    cfg = config(
        broker, redis_server, slack, group, write_policy(tmp_path, fleet, remediations=remediations), fleet_dir
    )
    cfg["drain"] = {"sink": str(sink), "master": "local[2]", "chunk": 500, "manifest_dir": str(tmp_path / "m")}
    bot = BotProcess(tmp_path, cfg, token=TOKEN)
    try:
        bot.wait_ready()
        root, reply = thread_with_button(slack, "approve:", "rain")
        slack.click_button(bot.events_url, SIGNING_SECRET, user=APPROVER, message=reply, action_prefix="approve:")
        wait_for(
            "the drained offsets", lambda: committed(kafka, group, topic, 3) == {0: 2_000, 1: 100, 2: 100}, timeout=180
        )
        table = pads.dataset(str(sink), format="parquet", partitioning="hive").to_table()
        offsets = sorted(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(), strict=True))
        expected = [(0, o) for o in range(2_000)] + [(1, o) for o in range(50, 100)]
        assert offsets == expected  # every offset of [committed, log-end) exactly once, nothing else
        wait_for("the result in the thread", lambda: "done" in replies_text(slack, root), timeout=30)
        assert ("succeeded", "lagbot") in audit_events(redis_client, group)
        assert "Traceback" not in bot.log()
    finally:
        bot.stop(signal.SIGKILL)
