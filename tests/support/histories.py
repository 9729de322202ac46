"""Random cluster histories for the tests that compare the evaluator's array route with its scalar rules."""

from __future__ import annotations

import random

from lagbot.core.model import ClusterSnapshot, GroupSnapshot, GroupState, Member, TopicPartition

CLUSTER = "prod"
GROUPS = ("billing", "audit", "search")
TOPICS = {"orders": 3, "payments": 2}


class History:
    """One cluster's random history: per group and partition a log end and a committed offset that evolve."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.at = 1_700_000_000.0 + rng.random()
        self.ends: dict[TopicPartition, int] = {
            (t, p): rng.choice([0, 5, 1_000]) for t, n in TOPICS.items() for p in range(n)
        }
        self.committed: dict[tuple[str, TopicPartition], int | None] = {}
        self.big = rng.random() < 0.1  # offsets past what the arrays take: those windows go the Python way

    def step(self) -> ClusterSnapshot:
        rng = self.rng
        self.at += rng.choice([10.0, 10.0, 30.0, 0.5, 0.0]) + rng.random() * (rng.random() < 0.5)
        for tp in self.ends:
            if rng.random() < 0.03:
                self.ends[tp] = rng.randint(0, 10)  # the topic was recreated: its log end falls
            self.ends[tp] += rng.choice([0, 0, 0, 1, 5, 40, 1_000])
        groups = {name: self.group(name) for name in GROUPS}
        offset = 2**50 if self.big else 0
        return ClusterSnapshot(
            cluster=CLUSTER,
            taken_at=self.at,
            groups=groups,
            log_end={tp: end + offset for tp, end in self.ends.items()},
            log_start={tp: max(0, end - rng.choice([end, 10, 2_000])) + offset for tp, end in self.ends.items()},
        )

    def group(self, name: str) -> GroupSnapshot:
        rng = self.rng
        committed: dict[TopicPartition, int | None] = {}
        for tp, end in self.ends.items():
            if rng.random() < 0.04:
                continue  # this partition is not in the group this time (a partition that comes and goes)
            current = self.committed.get((name, tp), rng.choice([None, 0, end]))
            roll = rng.random()
            if roll < 0.03:
                current = None
            elif roll < 0.06:
                current = max(0, (current or 0) - rng.randint(1, 50))  # rewind
            elif roll < 0.5:
                current = min(end, (current or 0) + rng.choice([0, 2, 10, 1_000]))
            self.committed[(name, tp)] = current
            committed[tp] = current + 2**50 if self.big and current is not None else current
        state = rng.choice([GroupState.STABLE, GroupState.STABLE, GroupState.EMPTY, GroupState.PREPARING_REBALANCE])
        tps = sorted(self.ends)
        members = tuple(
            Member(
                member_id=f"m-{i}",
                client_id=f"client-{i}",
                host=f"10.0.0.{i}",
                assignment=tuple(sorted(rng.sample(tps, rng.randint(0, 3)))),
            )
            for i in range(rng.choice([0, 0, 1, 2, 3]) if state is not GroupState.EMPTY else 0)
        )
        return GroupSnapshot(
            group=name, state=state, members=members, committed=committed, generation=rng.randint(1, 3)
        )
