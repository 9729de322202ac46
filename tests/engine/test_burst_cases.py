"""Numbered cases: `producer_burst` against the broker's history (lagbot.engine.burst).

Each case is a group verdict whose `baseline_produce` holds (horizon seconds, msg/s over it) as the time index
gives them, shortest first, and whose `produce_rate` is the window's. Every case says why its answer is right.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from lagbot.core.config import Evaluation
from lagbot.core.model import GroupVerdict
from lagbot.engine import wording as engine_wording
from lagbot.engine.burst import producer_burst_by_index
from lagbot.engine.diagnose import diagnose
from lagbot.service.remedies import remedy
from tests.support.verdicts import member, partition, verdict


def with_baselines(baselines: tuple[tuple[float, float | None], ...], produce: float | None) -> GroupVerdict:
    lagging = partition(0, committed=0, log_end=20_000)
    return replace(verdict([lagging], produce=produce, consume=10.0), baseline_produce=baselines)


ISSUE = ((60.0, 2000.0), (300.0, 440.0), (900.0, 180.0), (3600.0, None))
"""The issue's burst: 2,000 msg/s over the last minute, 50 msg/s for the 14 min before. So the 5 min rate is
(2,000 x 60 + 50 x 240) / 300 = 440 and the 15 min rate (2,000 x 60 + 50 x 840) / 900 = 180; the hour holds no
data that old (None)."""

CASES = [
    # B01 Still going (the window writes 1,900 msg/s now, >= 3 x 50): the 1 min horizon against the 14 min
    #     before it, (180 x 900 - 2,000 x 60) / 840 = 50 msg/s: 40x, the strongest ratio (the 5 min one is
    #     440 vs 50, 8.8x). Scaling is offered: more is coming.
    pytest.param(
        ISSUE,
        1900.0,
        engine_wording.cause_burst_vs_baseline(2000.0, 60.0, 50.0, 840.0, True, 1900.0),
        "scale",
        0.85,
        id="B01-burst-ongoing",
    ),
    # B02 Just ended: the window writes 50 msg/s again. Same numbers, "just ended", no scale (the backlog it
    #     left drains at the old rate without more replicas), less sure.
    pytest.param(
        ISSUE,
        50.0,
        engine_wording.cause_burst_vs_baseline(2000.0, 60.0, 50.0, 840.0, False, 50.0),
        None,
        0.6,
        id="B02-burst-just-ended",
    ),
    # B03 One sample (no window rate): the recent rate stands for now: still going.
    pytest.param(
        ISSUE,
        None,
        engine_wording.cause_burst_vs_baseline(2000.0, 60.0, 50.0, 840.0, True, None),
        "scale",
        0.85,
        id="B03-one-sample-judged-by-the-recent-rate",
    ),
    # B04 Steady at 50 msg/s over every horizon: no burst.
    pytest.param(((60.0, 50.0), (300.0, 50.0), (900.0, 50.0)), 50.0, None, None, 0.0, id="B04-steady"),
    # B05 The topic was idle before: 90 msg/s over the last minute, 6 msg/s over 15 min = 5,400 messages, all
    #     in that minute: 0 msg/s before. Nothing to compare with (x / 0): not called a burst.
    pytest.param(((60.0, 90.0), (900.0, 6.0)), 90.0, None, None, 0.0, id="B05-idle-before-no-baseline"),
    # B06 2.9x is under the factor 3: 145 msg/s over 1 min, (145 x 60 + 50 x 840) / 900 over 15 min.
    pytest.param(((60.0, 145.0), (900.0, (145 * 60 + 50 * 840) / 900)), 145.0, None, None, 0.0, id="B06-under-3x"),
    # B07 Only one horizon has data (the others None): no "before" to compare with.
    pytest.param(((60.0, 2000.0), (900.0, None)), 2000.0, None, None, 0.0, id="B07-one-horizon-known"),
]


@pytest.mark.parametrize(("baselines", "produce", "explanation", "remediation", "confidence"), CASES)
def test_burst_against_the_broker_history(
    baselines: tuple[tuple[float, float | None], ...],
    produce: float | None,
    explanation: str | None,
    remediation: str | None,
    confidence: float,
) -> None:
    v = with_baselines(baselines, produce)
    cause = producer_burst_by_index(v)
    if explanation is None:
        assert cause is None
        assert "producer_burst" not in [c.kind for c in diagnose(v, None, Evaluation())]
        return
    assert cause is not None
    assert (cause.explanation, remedy(cause), cause.confidence) == (explanation, remediation, confidence)
    assert cause.evidence["baseline_rate"] == 50.0 and cause.evidence["recent_rate"] == 2000.0
    assert cause.evidence["method"] == "time_index"
    # Through the diagnosis, as in production (no window: the history alone decides).
    (burst,) = [c for c in diagnose(v, None, Evaluation()) if c.kind == "producer_burst"]
    assert burst.explanation == explanation


def test_the_issue_burst_reads_like_the_issue() -> None:
    assert engine_wording.cause_burst_vs_baseline(2000.0, 60.0, 50.0, 840.0, True, 1900.0) == (
        "producers wrote 2,000 msg/s over the last 60 s vs 50.0 msg/s over the 14 min before (40.0x); still going"
    )


def test_b08_at_the_partition_ceiling_an_ongoing_burst_offers_no_scale() -> None:
    """B08 The issue's burst, still going, on a group whose two partitions each have a member of their own: one
    consumer per partition is the most Kafka allows, so more replicas would idle. The burst is named with the same
    numbers, as sure, but offers no scale (the window's own burst rule agrees)."""
    owned = [
        partition(p, committed=0, log_end=20_000, owner=member(p + 1, p)) for p in range(2)
    ]  # each partition its own member
    v = replace(verdict(owned, produce=1900.0, consume=10.0), baseline_produce=ISSUE)
    cause = producer_burst_by_index(v)
    assert cause is not None
    assert (cause.explanation, remedy(cause), cause.confidence) == (
        engine_wording.cause_burst_vs_baseline(2000.0, 60.0, 50.0, 840.0, True, 1900.0),
        None,
        0.85,
    )
    offered = {remedy(c) for c in diagnose(v, None, Evaluation()) if c.kind == "producer_burst"}
    assert offered == {None}
    # One partition fewer owned (two members on three partitions): parallelism is left, scaling is offered.
    spare = [*owned, partition(2, committed=0, log_end=20_000, owner=member(1, 0, 2))]
    cause = producer_burst_by_index(replace(verdict(spare, produce=1900.0, consume=10.0), baseline_produce=ISSUE))
    assert cause is not None and remedy(cause) == "scale"
