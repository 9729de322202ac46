"""Numbered cases: which partitions get an exact lag in seconds (lagbot.engine.exactlag `pick`) and how it is applied.

Every case says why its answer is right. The reading itself is proved on Apache Kafka
(tests/engine/test_exact_lag_seconds.py).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from lagbot.core.config import ConfigError, build_settings
from lagbot.core.model import PartitionVerdict
from lagbot.engine.exactlag import pick, with_exact
from tests.support.verdicts import TOPIC, partition, verdict


def lagging(p: int, committed: int | None, log_end: int, seconds: float | None) -> PartitionVerdict:
    method = None if seconds is None else "window"
    return replace(partition(p, committed=committed, log_end=log_end), lag_seconds=seconds, lag_seconds_method=method)


A = lagging(0, 100, 200, 30.0)  # 100 behind, 30 s
B = lagging(1, 100, 5_000, 5.0)  # 4,900 behind, 5 s
C = lagging(2, 100, 150, None)  # 50 behind, seconds unknown (one sample, no index data)
D = lagging(3, 100, 100, 0.0)  # caught up
E = lagging(4, None, 900, None)  # nothing committed: no offset to read from

CASES = [
    # X01 Off (N = 0): nothing is read.
    pytest.param([A, B, C, D, E], 0, [], id="X01-off"),
    # X02 Unknown figures first (they gain the most: no estimate at all), then the most seconds behind. Caught-up
    #     and never-committed partitions are never read: the first has no unconsumed record, the second no offset.
    pytest.param([A, B, C, D, E], 5, [((TOPIC, 2), 100), ((TOPIC, 0), 100), ((TOPIC, 1), 100)], id="X02-order"),
    # X03 Bounded: N = 2 takes the two worst only.
    pytest.param([A, B, C, D, E], 2, [((TOPIC, 2), 100), ((TOPIC, 0), 100)], id="X03-bounded"),
    # X04 Equal seconds: the more messages behind is worse.
    pytest.param([A, replace(B, lag_seconds=30.0)], 1, [((TOPIC, 1), 100)], id="X04-tie-by-messages"),
]


@pytest.mark.parametrize(("partitions", "n", "expected"), CASES)
def test_pick(partitions: list[PartitionVerdict], n: int, expected: list[object]) -> None:
    assert pick([verdict(partitions)], n) == expected


def test_x05_one_partition_read_once_for_the_group_furthest_behind() -> None:
    # X05 Two groups read one partition: it is read once, from the offset of the group further behind in seconds.
    ahead = verdict([lagging(0, 180, 200, 2.0)], group="fast")
    behind = verdict([lagging(0, 100, 200, 30.0)], group="slow")
    assert pick([ahead, behind], 3) == [((TOPIC, 0), 100)]


def test_x06_exact_figure_replaces_estimate_only_at_the_offset_read() -> None:
    # X06 The record at offset 100 was written at 970 s; at now = 1,000 s partition 0 is exactly 30 s behind, not
    #     a lower bound, method 'exact', and the group's figure follows. A group whose committed offset differs
    #     (another reader of the partition) keeps its own estimate: the record read is not its first unconsumed.
    bound = replace(A, lag_seconds=90.0, lag_seconds_lower_bound=True)
    group = with_exact(verdict([bound, B]), {((TOPIC, 0), 100): 970.0}, 1_000.0)
    p0 = group.partitions[0]
    assert (p0.lag_seconds, p0.lag_seconds_lower_bound, p0.lag_seconds_method) == (30.0, False, "exact")
    assert group.max_lag_seconds == 30.0
    other = verdict([replace(A, committed=120, lag=80)])
    assert with_exact(other, {((TOPIC, 0), 100): 970.0}, 1_000.0) == other


def test_x07_setting_is_validated_with_its_name() -> None:
    # X07 A negative N, or more than 100 per cycle, is refused naming the field; nothing runs.
    for bad in (-1, 101):
        with pytest.raises(ConfigError, match=r"evaluation\.exact_lag_seconds"):
            build_settings({"evaluation": {"exact_lag_seconds": bad}}, source="test")
    with pytest.raises(ConfigError, match=r"evaluation\.exact_lag_timeout"):
        build_settings({"evaluation": {"exact_lag_timeout": 0}}, source="test")
