"""Healthy groups are quiet (issue 22, section 1): a property test on Apache Kafka.

A seeded random set of healthy workloads, each its own topic and group, all running at once with real clients: a
producer at 1 to 2,000 msg/s over 1-12 partitions, read by 1-4 members that keep up, committing after every batch
(manual), by auto-commit at its default 5 s cadence, or reading a transactional producer's topic (a transaction every
0.1 s, a few messages each: lag 1 per partition once read, the commit marker) with `read_committed`. Once every
member has its partitions and every group has committed, lagbot checks them all with its default sampling (4
snapshots 5 s apart) and with `--samples 4 --every 3`, and every group must be OK: no partition WARN (or worse), no
severity, no cause, so no button. The workloads must also be what they say: lagbot's produce rate of each is its rate
in offsets (the messages, and with transactions the commit marker each transaction writes in every partition it
touched: at 10 transactions a second over 12 partitions, 120 offsets a second that are no message).

WORKLOADS workloads for each of SEEDS seeds (8 workloads, 16 graded checks): about two minutes on two shared cores
(the producers and consumers of a seed's workloads share the test's process).
"""

from __future__ import annotations

import re

import pytest

from lagbot.core.config import build_settings
from lagbot.core.model import GroupVerdict, Severity, Status
from lagbot.engine.check import Checker
from lagbot.engine.window import MemoryWindowStore
from lagbot.service.remedies import remedy
from tests.conftest import Kafka, Names
from tests.support.healthy import WORKLOADS, running, workloads

pytestmark = pytest.mark.integration

SEEDS = (22, 23)


def trouble(verdict: GroupVerdict) -> list[str]:
    """What a healthy group must not get: a partition not OK, a severity, a cause."""
    found = [f"{p.topic}/{p.partition} {p.status.name} ({p.reason}), lag {p.lag}" for p in verdict.partitions
             if p.status is not Status.OK]  # fmt: skip
    if verdict.status is not Status.OK:
        found.append(f"status {verdict.status.name}")
    if verdict.severity is not Severity.OK:
        found.append(f"severity {verdict.severity.name}: {verdict.severity_reason}")
    found += [f"cause {c.kind} -> {remedy(c)}: {c.explanation}" for c in verdict.causes]
    return found


@pytest.mark.parametrize("seed", SEEDS)
def test_healthy_groups_get_no_warn_and_no_cause(kafka: Kafka, names: Names, seed: int) -> None:
    works = workloads(seed)
    with running(kafka.bootstrap, works, names("quiet")) as run:
        settings = build_settings(
            {
                "clusters": [
                    {
                        "name": "apache",
                        "bootstrap_servers": kafka.bootstrap,
                        "groups": {"include": ["|".join(re.escape(g) for g in run.groups)]},
                        "request_timeout": 5,
                    }
                ]
            },
            source="test",
        )
        run.checking.set()
        reports = [Checker(settings, MemoryWindowStore(samples=10)).run(4, every) for every in (5.0, 3.0)]

    problems: list[str] = []
    unreal: list[str] = []
    checked = 0
    for report in reports:
        by_group = {v.group: v for v in report.verdicts}
        assert sorted(by_group) == sorted(run.groups)
        for group, work, written in zip(run.groups, works, run.markers, strict=True):
            verdict = by_group[group]
            checked += 1
            problems += [f"{work} {group}: {found}" for found in trouble(verdict)]
            produced = verdict.produce_rate or 0.0
            # lagbot's produce rate is the workload's in offsets (the workload is real): within a third at 10 msg/s
            # and more
            if work.mode == "transactions, then idle":
                if produced >= 1.0 or any((p.lag or 0) > 1 for p in verdict.partitions):
                    unreal.append(f"{work}: produced {produced:.1f} msg/s while idle, lag {verdict.total_lag}")
            elif work.rate >= 10 and produced != pytest.approx(work.rate + written.rate(), rel=0.35):
                unreal.append(f"{work}: produced {produced:.1f} offsets/s, {written.rate():.1f} of them markers")
    assert checked == 2 * WORKLOADS
    assert (problems, unreal) == ([], [])
