"""The local executor: a real fleet of consumer processes against Apache Kafka.

Committed offsets are read back from the broker (OffsetFetch) and compared with the log ends. Apache
Kafka's DescribeGroups reports every member (member id, client id, host, assignment), so a member to
restart is the one the broker names: lagbot passes that Member, and the executor finds its process by
client id, which the fleet sets to `<fleet>-<index>` (the broker's member id of a classic-protocol member
starts with it, then a random suffix the process cannot know beforehand). After a restart the broker
names a new member id for that client id and keeps the other members' ids.

Tests that restart a member change the fleet once its group is settled (`wait_settled`), as an operator
acts on an established group whose owners the broker reports. It is not a broker workaround: measured on
Apache Kafka 4.1, restarting a fleet's first member (the group's leader) right after its second joined, the
group settled with one partition each within 1-2 s, 3 runs out of 3 (the embedded broker answered every
SyncGroup with REBALANCE_IN_PROGRESS for over 60 s in that case).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka import TopicPartition

from lagbot.core.model import Member
from lagbot.devkit.fleet import (
    FleetSpec,
    LocalExecutor,
    MemberRecord,
    MemberStatus,
    proc_start_time,
    process_alive,
    register_local_executor,
)
from lagbot.remediations.executors.base import ExecutorError, Workload
from lagbot.remediations.executors.config import ExecutorsConfig, LocalConfig, build_executor
from tests.conftest import Kafka, Names
from tests.support.apache_groups import describe_members, describe_state
from tests.support.group_commits import committed

pytestmark = pytest.mark.integration
T = TypeVar("T")


@pytest.fixture
def fleets(tmp_path: Path) -> Iterator[LocalExecutor]:
    executor = LocalExecutor(LocalConfig(state_dir=tmp_path / "fleets", stop_timeout=15))
    started: list[int] = []
    original = executor._spawn

    def spawn_and_track(spec: FleetSpec, index: int) -> MemberRecord:
        record = original(spec, index)
        started.append(record.pid)
        return record

    executor._spawn = spawn_and_track  # type: ignore[method-assign]
    yield executor
    executor.stop_all()
    leftovers = [pid for pid in started if proc_start_time(pid) is not None]
    for pid in leftovers:
        os.killpg(pid, signal.SIGKILL)
    assert not leftovers, f"member processes outlived the fleet: {leftovers}"


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60.0) -> T:
    """Poll `probe` until it returns something truthy; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def log_ends(kafka: Kafka, topic: str, partitions: int) -> dict[int, int]:
    consumer = kafka.consumer("lagbot-test-watermarks")
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
    finally:
        consumer.close()


def spec(kafka: Kafka, names: Names, topic: str, **changes: object) -> FleetSpec:
    values: dict[str, object] = {
        "name": names("fleet"),
        "bootstrap": kafka.bootstrap,
        "group": names("group"),
        "topics": [topic],
        "commit_every": 5,
        "commit_interval_ms": 200,
        "max_seconds": 300,
        **changes,
    }
    return FleetSpec.model_validate(values)


def workload(fleet: FleetSpec) -> Workload:
    return Workload(executor="local", name=fleet.name)


def caught_up(kafka: Kafka, fleet: FleetSpec, topic: str, partitions: int) -> Callable[[], dict[int, int] | None]:
    def probe() -> dict[int, int] | None:
        ends = log_ends(kafka, topic, partitions)
        return ends if committed(kafka, fleet.group, topic, partitions) == ends else None

    return probe


def test_one_member_drains_a_backlog_and_commits_the_log_ends(
    fleets: LocalExecutor, kafka: Kafka, names: Names
) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 3)
    for partition, count in enumerate((40, 25, 10)):
        kafka.produce(topic, partition, count)
    fleet = spec(kafka, names, topic)
    outcome = fleets.start(fleet)
    assert outcome.ok, outcome.detail
    assert outcome.data["after"] == 1 and fleets.replicas(workload(fleet)) == 1

    ends = wait_for("the group to commit the log ends", caught_up(kafka, fleet, topic, 3))
    assert ends == {0: 40, 1: 25, 2: 10}
    [member] = wait_for("the member to report all 75", lambda: _processed(fleets, fleet.name, 75))
    assert member.record.client_id == f"{fleet.name}-0"
    assert member.report is not None
    assert member.report["committed"] == {f"{topic}:0": 40, f"{topic}:1": 25, f"{topic}:2": 10}
    assert sorted(map(tuple, member.report["assignment"])) == [(topic, 0), (topic, 1), (topic, 2)]


def _processed(fleets: LocalExecutor, fleet: str, count: int) -> list[MemberStatus] | None:
    status = fleets.status(fleet)
    return status if status and status[0].report and status[0].report["processed"] == count else None


def test_scale_up_to_three_and_back_to_one(fleets: LocalExecutor, kafka: Kafka, names: Names) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 3)
    fleet = spec(kafka, names, topic)
    assert fleets.start(fleet).ok
    [first] = fleets.members(fleet.name)
    fleets.wait_settled(fleet.name, partitions=3)

    up = fleets.scale(workload(fleet), 3)
    assert up.ok and up.data == {"before": 1, "after": 3}
    settled = fleets.wait_settled(fleet.name, partitions=3)
    assert [len(m.assignment) for m in settled] == [1, 1, 1], "the range assignor gives each member one"
    members = fleets.members(fleet.name)
    assert [m.client_id for m in members] == [f"{fleet.name}-{i}" for i in range(3)]
    assert len({m.pid for m in members}) == 3 and members[0].pid == first.pid
    assert all(process_alive(m.pid, m.proc_start) for m in members)
    assert fleets.replicas(workload(fleet)) == 3

    down = fleets.scale(workload(fleet), 1)
    assert down.ok and down.data == {"before": 3, "after": 1}
    assert fleets.members(fleet.name) == [first]
    assert not any(process_alive(m.pid, m.proc_start) for m in members[1:])
    [alone] = fleets.wait_settled(fleet.name, partitions=3)
    assert sorted(alone.assignment) == [(topic, 0), (topic, 1), (topic, 2)]

    for partition in range(3):
        kafka.produce(topic, partition, 5)
    wait_for("the remaining member to consume everything", caught_up(kafka, fleet, topic, 3))


def live_members(kafka: Kafka, group: str) -> dict[str, Member]:
    """The group's members as the broker reports them (Apache Kafka's ConsumerGroupCommand), by client id."""
    assert describe_state(kafka.bootstrap, group)[0] == "Stable"
    return {c: Member(member_id=m, client_id=c, host=h) for m, h, c, _ in describe_members(kafka.bootstrap, group)}


def test_restart_member_restarts_exactly_that_process(fleets: LocalExecutor, kafka: Kafka, names: Names) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 2)
    fleet = spec(kafka, names, topic, replicas=2)
    assert fleets.start(fleet).ok
    fleets.wait_settled(fleet.name, partitions=2)
    before = {m.client_id: m for m in fleets.members(fleet.name)}
    target = f"{fleet.name}-1"
    reported = live_members(kafka, fleet.group)
    assert sorted(reported) == [f"{fleet.name}-0", target]
    assert [(m.host, m.member_id.startswith(f"{c}-")) for c, m in sorted(reported.items())] == [
        ("/127.0.0.1", True),
        ("/127.0.0.1", True),
    ]

    outcome = fleets.restart_member(workload(fleet), reported[target])
    assert outcome.ok, outcome.detail
    after = {m.client_id: m for m in fleets.members(fleet.name)}
    assert set(after) == set(before)
    assert after[f"{fleet.name}-0"] == before[f"{fleet.name}-0"]
    assert after[target].pid != before[target].pid
    assert outcome.data == {"client_id": target, "old_pid": before[target].pid, "new_pid": after[target].pid}
    assert not process_alive(before[target].pid, before[target].proc_start)
    fleets.wait_settled(fleet.name, partitions=2)
    again = live_members(kafka, fleet.group)
    assert again[f"{fleet.name}-0"].member_id == reported[f"{fleet.name}-0"].member_id
    assert again[target].member_id != reported[target].member_id

    for partition in range(2):
        kafka.produce(topic, partition, 15)
    assert wait_for("consumption to continue", caught_up(kafka, fleet, topic, 2)) == {0: 15, 1: 15}


def test_restart_member_of_an_unknown_client_id_changes_nothing(
    fleets: LocalExecutor, kafka: Kafka, names: Names
) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 1)
    fleet = spec(kafka, names, topic)
    assert fleets.start(fleet).ok
    before = fleets.members(fleet.name)
    outcome = fleets.restart_member(workload(fleet), Member(member_id="x", client_id="consumer-9", host="h"))
    assert not outcome.ok
    assert outcome.detail == (
        f"fleet {fleet.name} has no live member with client id 'consumer-9' (live: {fleet.name}-0); nothing restarted"
    )
    assert fleets.members(fleet.name) == before


def test_stuck_member_stops_committing_while_lag_grows_until_restarted(
    fleets: LocalExecutor, kafka: Kafka, names: Names
) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 20)
    fleet = spec(kafka, names, topic)
    assert fleets.start(fleet).ok
    wait_for("the first 20 to be committed", caught_up(kafka, fleet, topic, 1))

    client_id = f"{fleet.name}-0"
    fleets.make_stuck(fleet.name, client_id)
    wait_for("the member to report stuck", lambda: fleets.status(fleet.name)[0].state == "stuck")
    lags = []
    for _ in range(3):
        kafka.produce(topic, 0, 10)
        time.sleep(0.5)  # a stuck member cannot commit whatever the speed: the window only gives it time to try
        assert committed(kafka, fleet.group, topic, 1) == {0: 20}
        lags.append(log_ends(kafka, topic, 1)[0] - 20)
    assert lags == [10, 20, 30]
    assert fleets.replicas(workload(fleet)) == 1, "a stuck member stays alive"

    outcome = fleets.restart_member(workload(fleet), live_members(kafka, fleet.group)[client_id])
    assert outcome.ok, outcome.detail
    assert wait_for("the restarted member to catch up", caught_up(kafka, fleet, topic, 1)) == {0: 50}
    assert fleets.status(fleet.name)[0].state == "running"


def test_stuck_after_a_count_of_messages(fleets: LocalExecutor, kafka: Kafka, names: Names) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 30)
    fleet = spec(kafka, names, topic, stuck_after=12, commit_every=1)  # each message committed before the next
    assert fleets.start(fleet).ok
    wait_for("the member to get stuck", lambda: fleets.status(fleet.name)[0].state == "stuck")
    report = fleets.status(fleet.name)[0].report
    assert report is not None and report["processed"] == 12 and report["committed"] == {f"{topic}:0": 12}
    assert committed(kafka, fleet.group, topic, 1) == {0: 12}


def test_rolling_restart_replaces_every_member(fleets: LocalExecutor, kafka: Kafka, names: Names) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 2)
    fleet = spec(kafka, names, topic, replicas=2)
    assert fleets.start(fleet).ok
    fleets.wait_settled(fleet.name, partitions=2)
    before = fleets.members(fleet.name)
    outcome = fleets.restart(workload(fleet))
    assert outcome.ok, outcome.detail
    after = fleets.members(fleet.name)
    settled = fleets.wait_settled(fleet.name, partitions=2)
    assert [len(m.assignment) for m in settled] == [1, 1]
    assert [m.client_id for m in after] == [m.client_id for m in before]
    assert not {m.pid for m in after} & {m.pid for m in before}
    assert outcome.data == {"pids": [m.pid for m in after]}


def test_stop_leaves_no_process(fleets: LocalExecutor, kafka: Kafka, names: Names) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 1)
    fleet = spec(kafka, names, topic, replicas=2)
    assert fleets.start(fleet).ok
    members = fleets.members(fleet.name)
    outcome = fleets.stop(fleet.name)
    assert outcome.ok and outcome.data == {"before": 2, "after": 0}
    assert fleets.members(fleet.name) == []
    for member in members:
        assert proc_start_time(member.pid) is None
        with pytest.raises(ProcessLookupError):
            os.killpg(member.pid, 0)
    report = (Path(fleets.config.state_dir) / fleet.name / "status" / f"{members[0].client_id}.json").read_text()
    assert '"state": "stopped"' in report, "the member closed its consumer and left the group"


def test_a_killed_member_is_no_longer_counted(fleets: LocalExecutor, kafka: Kafka, names: Names) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 1)
    fleet = spec(kafka, names, topic, replicas=2)
    assert fleets.start(fleet).ok
    victim = fleets.members(fleet.name)[1]
    os.killpg(victim.pid, signal.SIGKILL)
    wait_for("the dead member to be dropped", lambda: fleets.replicas(workload(fleet)) == 1)
    assert not (Path(fleets.config.state_dir) / fleet.name / "members" / "1.json").exists()
    assert fleets.scale(workload(fleet), 2).data == {"before": 1, "after": 2}
    assert [m.client_id for m in fleets.members(fleet.name)] == [f"{fleet.name}-0", f"{fleet.name}-1"]


def test_a_second_executor_sees_and_changes_the_same_fleet(fleets: LocalExecutor, kafka: Kafka, names: Names) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 1)
    fleet = spec(kafka, names, topic, replicas=2)
    assert fleets.start(fleet).ok
    register_local_executor()  # as `lagbot run` does when its configuration has an `executors.local` section
    other = build_executor("local", ExecutorsConfig(local=fleets.config))
    assert other.replicas(workload(fleet)) == 2
    assert other.scale(workload(fleet), 1).data == {"before": 2, "after": 1}
    assert fleets.replicas(workload(fleet)) == 1


def test_a_change_waits_for_the_lock_and_gives_up_after_lock_timeout(
    fleets: LocalExecutor, kafka: Kafka, names: Names
) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 1)
    fleet = spec(kafka, names, topic, replicas=0)
    assert fleets.start(fleet).ok
    impatient = LocalExecutor(fleets.config.model_copy(update={"lock_timeout": 0.5}))
    with fleets._locked(fleet.name):
        outcome = impatient.scale(workload(fleet), 1)
    assert not outcome.ok
    assert outcome.detail == (f"fleet {fleet.name} is being changed by another process; gave up waiting after 0.5 s")
    assert fleets.replicas(workload(fleet)) == 0


def test_refusals(fleets: LocalExecutor, kafka: Kafka, names: Names) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 1)
    fleet = spec(kafka, names, topic)
    assert fleets.start(fleet).ok
    again = fleets.start(fleet)
    assert not again.ok and "already runs 1 member(s)" in again.detail
    unknown = fleets.scale(Workload(executor="local", name="never-started"), 2)
    assert not unknown.ok and unknown.detail == "no fleet called never-started: start it first"
    with pytest.raises(ExecutorError, match="is for the kubernetes executor, not local"):
        fleets.scale(Workload(executor="kubernetes", name=fleet.name), 2)
    with pytest.raises(ExecutorError, match="is not a fleet name"):
        fleets.replicas(Workload(executor="local", name=".."))
    with pytest.raises(ExecutorError, match="has no live member with client id 'nobody'"):
        fleets.make_stuck(fleet.name, "nobody")
    assert fleets.replicas(workload(fleet)) == 1


def test_a_reused_pid_is_not_a_member() -> None:
    me = proc_start_time(os.getpid())
    assert me is not None
    assert process_alive(os.getpid(), me)
    assert not process_alive(os.getpid(), me + 1)


def test_wait_settled_names_each_member_when_the_group_does_not_settle(
    fleets: LocalExecutor, kafka: Kafka, names: Names
) -> None:
    topic = names("topic")
    kafka.create_topic(topic, 2)
    fleet = spec(kafka, names, topic)
    assert fleets.start(fleet).ok
    [member] = fleets.wait_settled(fleet.name, partitions=2)
    assert sorted(member.assignment) == [(topic, 0), (topic, 1)]
    with pytest.raises(ExecutorError) as caught:
        fleets.wait_settled(fleet.name, partitions=3, timeout=1)
    assert str(caught.value) == f"fleet {fleet.name} did not settle within 1 s: {fleet.name}-0: running, owns 2"
