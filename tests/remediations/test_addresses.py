"""A remediation names the causes it answers (`Remediation.addresses`, `answers`); the service joins causes to
remediations through the registry (`registry.answering`, used by `Remediator.suggested`).

Until the engine stops naming actions, each cause it makes carries its own suggestion (`Cause.remediation`, shown in
Slack and by `lagbot check`): the join gives the same remediation for every branch of lagbot.engine.diagnose and
lagbot.engine.burst, or none where they name none.
"""

from __future__ import annotations

import pytest

from lagbot.core.model import Cause, CauseKind, GroupVerdict
from lagbot.remediations import registry
from tests.support.verdicts import member, partition, verdict


def spare() -> GroupVerdict:
    """Two members on three partitions: another member would own a partition of its own."""
    one, two = member(1, 0, 1), member(2, 2)
    parts = [partition(p, committed=0, log_end=100, owner=one if p < 2 else two) for p in range(3)]
    return verdict(parts, members=[one, two])


def at_ceiling() -> GroupVerdict:
    """One member per partition: another member would idle."""
    members = [member(p + 1, p) for p in range(3)]
    parts = [partition(p, committed=0, log_end=100, owner=members[p]) for p in range(3)]
    return verdict(parts, members=members)


def cause(kind: CauseKind, **evidence: object) -> Cause:
    return Cause(kind.value, "", 0.5, None, rank=1, evidence=dict(evidence))


# (the cause, the verdict it is of, what lagbot.engine names for it): one row per branch of the engine.
BRANCHES = [
    (cause(CauseKind.DATA_LOSS), spare(), "reset_offsets"),
    (cause(CauseKind.RETENTION_RISK), spare(), "drain"),
    (cause(CauseKind.STUCK_CONSUMER), spare(), "restart"),
    (cause(CauseKind.NO_ACTIVE_MEMBERS), spare(), "scale"),
    (cause(CauseKind.UNASSIGNED_PARTITIONS), spare(), "restart"),
    (cause(CauseKind.HOT_PARTITION, why="slow_owner"), spare(), "restart"),
    (cause(CauseKind.HOT_PARTITION, why="key_skew"), spare(), "drain"),
    (cause(CauseKind.HOT_PARTITION, why="unknown"), spare(), "drain"),
    (cause(CauseKind.THROUGHPUT_DEFICIT), spare(), "scale"),
    (cause(CauseKind.PARTITION_CEILING), at_ceiling(), "drain"),
    # diagnose.producer_burst (the window's rates): scale only while a member can be added that owns a partition
    (cause(CauseKind.PRODUCER_BURST, recent_rate=30.0, trailing_rate=10.0), spare(), "scale"),
    (cause(CauseKind.PRODUCER_BURST, recent_rate=30.0, trailing_rate=10.0), at_ceiling(), None),
    # burst.producer_burst_by_index (the broker's history): and only while the burst goes on
    (cause(CauseKind.PRODUCER_BURST, ongoing=True, method="time_index"), spare(), "scale"),
    (cause(CauseKind.PRODUCER_BURST, ongoing=True, method="time_index"), at_ceiling(), None),
    (cause(CauseKind.PRODUCER_BURST, ongoing=False, method="time_index"), spare(), None),
    (cause(CauseKind.REBALANCE_CHURN), spare(), None),
    (cause(CauseKind.IDLE_MEMBERS), spare(), "scale"),
]


@pytest.mark.parametrize(("cause", "of", "named"), BRANCHES)
def test_the_registry_answers_each_cause_as_the_engine_names_it(cause: Cause, of: GroupVerdict, named: str) -> None:
    assert registry.answering(cause, of) == named


def test_every_cause_kind_has_a_row_and_at_most_one_remediation_answers_each() -> None:
    assert {c.kind for c, _, _ in BRANCHES} == set(CauseKind)
    for c, of, _ in BRANCHES:
        assert len([r.name for r in registry.remediations() if r.answers(c, of)]) <= 1, c


def test_each_remediation_addresses_the_kinds_it_answers() -> None:
    shipped = ("restart", "scale", "drain", "reset_offsets")
    assert {name: sorted(registry.get(name).addresses) for name in shipped} == {
        "restart": ["hot_partition", "stuck_consumer", "unassigned_partitions"],
        "scale": ["idle_members", "no_active_members", "producer_burst", "throughput_deficit"],
        "drain": ["hot_partition", "partition_ceiling", "retention_risk"],
        "reset_offsets": ["data_loss"],
    }
