"""Restart exactly the stuck member, end to end on Apache Kafka: `lagbot run`, real Redis, the Slack emulator
and a local fleet of two members.

One member stops committing -> its partition is STALL and stuck_consumer names it (member id, client id,
host, as Apache Kafka's ConsumerGroupCommand reports them) -> the proposal restarts that member only ->
an approver clicks -> that member's process is replaced, the other keeps its process and its member id ->
the group's lag is 0, read from the broker.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from lagbot.core import messages
from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from lagbot.devkit.fleet import LocalExecutor
from lagbot.remediations.executors.config import LocalConfig
from lagbot.remediations.restart import wording as restart_wording
from lagbot.service.audit import AuditLog
from tests.conftest import Kafka, Names
from tests.support.apache_groups import describe_members, describe_rows
from tests.support.bot_process import SIGNING_SECRET, BotProcess, wait_for
from tests.support.group_commits import committed
from tests.support.remediation_rig import (
    APPROVER,
    TOKEN,
    config,
    log_end,
    replies_text,
    start_fleet,
    thread_with_button,
    write_policy,
)

pytestmark = pytest.mark.integration
HOST = "/127.0.0.1"


@pytest.fixture
def slack_api() -> Iterator[SlackEmulator]:
    with SlackEmulator(token=TOKEN).start() as running:
        yield running


@pytest.fixture
def fleets(tmp_path: Path) -> Iterator[LocalExecutor]:
    executor = LocalExecutor(LocalConfig(state_dir=tmp_path / "fleets"))
    yield executor
    executor.stop_all()


def test_only_the_stuck_member_is_restarted_and_the_lag_drains_to_zero(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack_api: SlackEmulator,
    tmp_path: Path,
    fleets: LocalExecutor,
) -> None:
    topic, group, fleet = names("topic"), names("group"), names("fleet")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 40)
    kafka.produce(topic, 1, 40)
    start_fleet(fleets, broker, fleet, group, topic, replicas=2, commit_every=10, commit_interval_ms=200)
    fleets.wait_settled(fleet, partitions=2)
    wait_for("the fleet to catch up", lambda: committed(kafka, group, topic, 2) == {0: 40, 1: 40}, timeout=60)
    healthy, stuck = f"{fleet}-0", f"{fleet}-1"
    before = {m.client_id: m for m in fleets.members(fleet)}
    # Who owns what, as Apache Kafka's own tool says: the range assignor gives -0 partition 0, -1 partition 1.
    owners = {row[7]: (row[1], row[5]) for row in describe_rows(broker.bootstrap, group)}
    assert set(owners) == {healthy, stuck} and owners[healthy][0] == 0 and owners[stuck][0] == 1
    stuck_id, healthy_id = owners[stuck][1], owners[healthy][1]
    assert stuck_id is not None and healthy_id is not None

    fleets.make_stuck(fleet, stuck)
    wait_for(
        "the member to report stuck",
        lambda: {s.record.client_id: s.state for s in fleets.status(fleet)}[stuck] == "stuck",
    )
    kafka.produce(topic, 0, 300)
    kafka.produce(topic, 1, 300)
    wait_for("the healthy member to keep up", lambda: committed(kafka, group, topic, 2)[0] == 340, timeout=60)
    assert committed(kafka, group, topic, 2) == {0: 340, 1: 40}

    bot = BotProcess(
        tmp_path,
        config(broker, redis_server, slack_api, group, write_policy(tmp_path, fleet), fleets.config.state_dir),
        token=TOKEN,
    )
    try:
        bot.wait_ready()
        root, reply = thread_with_button(slack_api, "approve:")
        shown = json.dumps(reply.blocks)
        assert "stalled" in root.text
        owner = messages.owner(stuck, HOST, stuck_id)
        assert f"partition 1 of {topic}: committed offset not moving while 300 messages wait; owner: {owner}" in shown
        assert restart_wording.restart_step_member(stuck, HOST, stuck_id, [f"{topic}-1"]) in shown
        assert healthy_id not in shown and healthy not in shown  # the healthy member is in no proposal
        assert committed(kafka, group, topic, 2) == {0: 340, 1: 40}  # nothing ran before the click

        status, _, key = slack_api.click_button(
            bot.events_url, SIGNING_SECRET, user=APPROVER, message=reply, action_prefix="approve:"
        )
        assert status == 200
        wait_for("the lag to drain", lambda: committed(kafka, group, topic, 2) == {0: 340, 1: 340}, timeout=90)
        assert log_end(kafka, topic, 2) == [340, 340]
        after = {m.client_id: m for m in fleets.members(fleet)}
        assert after[healthy] == before[healthy]
        assert after[stuck].pid != before[stuck].pid and set(after) == {healthy, stuck}

        def rejoined() -> list[tuple[str, str, str, int]] | None:
            found = describe_members(broker.bootstrap, group)
            return found if [m[3] for m in found] == [1, 1] else None

        members = wait_for("both members back in the group, one partition each", rejoined)
        assert [(m[0] == healthy_id, m[2], m[3]) for m in members] == [(True, healthy, 1), (False, stuck, 1)]
        assert members[1][0].startswith(f"{stuck}-")
        wait_for("the result in the thread", lambda: "done" in replies_text(slack_api, root))
        assert slack_api.responses[key] == []

        def succeeded() -> dict[str, object] | None:
            entries = AuditLog(redis_client).latest("embedded", group, 100)
            return next((e.detail for e in entries if e.event == "succeeded"), None)

        detail = wait_for("the audit of the execution", succeeded)
        assert detail["data"] == {"restarted": [stuck_id]}
        assert detail["after"] == {"restart": "members", "members": [stuck_id]}
        assert detail["detail"] == restart_wording.restart_done(1)
        assert "Traceback" not in bot.log()
    finally:
        bot.stop(signal.SIGKILL)
