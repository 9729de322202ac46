"""Which members a cause blames, and how their pods' lines join the cause (lagbot.service.pod_causes: pure)."""

from __future__ import annotations

from dataclasses import replace

from lagbot.core.model import Cause, Fact, GroupVerdict, Member, Status
from lagbot.remediations.executors.base import ExecutorError, NotFound
from lagbot.remediations.executors.pod_evidence import PodEvidence
from lagbot.service.pod_causes import (
    OwnerPod,
    PodsRead,
    blamed,
    cause_owners,
    cause_pods,
    read_owners,
    with_pod_evidence,
)
from tests.support.verdicts import TOPIC, partition, verdict

A = Member("m-a", "consumer-a", "/10.1.2.3", ((TOPIC, 0),))
B = Member("m-b", "consumer-b", "/10.1.2.4", ((TOPIC, 1), (TOPIC, 2)))
STUCK = Cause("stuck_consumer", "partition 0 is stuck", 0.9, rank=1, evidence={"partitions": [0]})
HOT = Cause(
    "hot_partition",
    "partition 1 is hot",
    0.7,
    rank=2,
    evidence={"topic": TOPIC, "partition": 1},
    facts=frozenset({Fact.SLOW_OWNER}),
)
DEFICIT = Cause("throughput_deficit", "consumers are slower", 0.75, rank=3)


def group(*causes: Cause) -> GroupVerdict:
    parts = [
        partition(0, committed=0, log_end=500, status=Status.STALL, owner=A),
        partition(1, committed=0, log_end=900, owner=B),
        partition(2, committed=0, log_end=10, owner=B),
    ]
    return replace(verdict(parts, members=[A, B]), causes=causes)


def test_the_stuck_consumer_blames_the_stalled_owners_the_hot_partition_its_owner_and_the_rest_no_one() -> None:
    v = group(STUCK, HOT, DEFICIT)
    assert [cause_owners(c, v) for c in v.causes] == [[A], [B], []]
    assert blamed(v) == [A, B]
    gone = replace(HOT, evidence={"topic": TOPIC, "partition": 9})  # a partition the verdict does not have
    assert cause_owners(gone, v) == []


def test_each_cause_gets_its_owners_lines_once_and_the_others_stay_as_they_were() -> None:
    v = group(STUCK, HOT, DEFICIT)
    rollout = "a rollout is in progress: 2 ReplicaSets of the workload have pods"
    shown = {"m-a": ["pod orders-a is running but not Ready", rollout], "m-b": [rollout]}
    stuck, hot, deficit = with_pod_evidence(v, shown).causes
    assert stuck.explanation == f"partition 0 is stuck; owner pods: pod orders-a is running but not Ready; {rollout}"
    assert stuck.evidence == {"partitions": [0], "pods": ["pod orders-a is running but not Ready", rollout]}
    assert (hot.explanation, hot.evidence["pods"]) == (f"partition 1 is hot; owner pods: {rollout}", [rollout])
    assert deficit == DEFICIT
    assert with_pod_evidence(v, {}) is v
    assert with_pod_evidence(v, {"m-a": []}).causes == v.causes  # a healthy pod adds nothing


def test_the_owners_read_are_the_first_blamed_and_bounded() -> None:
    owners = [Member(f"m-{i}", f"consumer-{i}", f"/10.1.2.{i}", ((TOPIC, i),)) for i in range(8)]
    parts = [partition(i, committed=0, log_end=500, status=Status.STALL, owner=m) for i, m in enumerate(owners)]
    v = replace(verdict(parts, members=owners), causes=(STUCK,))
    assert blamed(v) == owners[:5]
    assert blamed(v, most=8) == owners
    assert len(cause_owners(STUCK, v)) == 8  # every owner is the cause's: only the reading is bounded


def test_the_reading_stops_at_the_first_pod_that_cannot_be_read_and_says_why() -> None:
    """Read in the order blamed; the first refusal ends it (the others would meet it too), with its words."""
    asked: list[str] = []

    def read(member: Member) -> PodEvidence | None:
        asked.append(member.member_id)
        if member is B:
            raise ExecutorError("could not read pod shop/orders-b: forbidden")
        return PodEvidence("orders-a", "Running", False, None, False, ())

    v = group(STUCK, HOT)
    pods = read_owners(read, blamed(v), now=0.0)
    assert asked == ["m-a", "m-b"]
    assert pods.error == "could not read pod shop/orders-b: forbidden"
    assert pods.owners == {"m-a": OwnerPod(A, "orders-a", ("pod orders-a is running but not Ready",))}
    assert pods.shown() == {"m-a": ["pod orders-a is running but not Ready"]}
    assert [cause_pods(c, v, pods) for c in v.causes] == [[pods.owners["m-a"]], []]  # B's pod was not read

    healthy = PodsRead({"m-a": OwnerPod(A, "orders-a", ())})
    assert healthy.shown() == {} and cause_pods(STUCK, v, healthy) == [healthy.owners["m-a"]]


def test_a_pod_not_found_is_its_owner_s_fact_and_the_next_owner_is_read() -> None:
    """NotFound (the server answered: no such pod) skips that owner only; the error says it, and the reading goes on
    to the next owner (a refusal or no answer would end it, as above)."""
    asked: list[str] = []

    def read(member: Member) -> PodEvidence | None:
        asked.append(member.member_id)
        if member is A:
            raise NotFound('could not read pod shop/orders-a: 404 Not Found: pods "orders-a" not found')
        return PodEvidence("orders-b", "Running", False, None, False, ())

    pods = read_owners(read, blamed(group(STUCK, HOT)), now=0.0)
    assert asked == ["m-a", "m-b"]
    assert pods.error == 'could not read pod shop/orders-a: 404 Not Found: pods "orders-a" not found'
    assert pods.owners == {"m-b": OwnerPod(B, "orders-b", ("pod orders-b is running but not Ready",))}
