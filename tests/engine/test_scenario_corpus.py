"""The scenario corpus (tests/support/corpus/) graded on Apache Kafka: every scenario right on status, primary
cause and the remediation it offers, with `lagbot check`'s default sampling and with `--samples 4 --every 3`
(where that sampling can decide it; where not, the corpus says why).

The scenarios are built and checked all at once (module fixture), then each row is its own test."""

from __future__ import annotations

import pytest

from lagbot.devkit.apache_kafka import ApacheKafka
from tests.support.corpus import SAMPLINGS, SCENARIOS, Expected, Graded, run_all, table

pytestmark = [
    pytest.mark.integration,
    # The module's fixture builds all 25 scenarios (5 rounds of 5): 268 s with the broker's start on two cores at a
    # load average of 15, over the suite's 300 s.
    pytest.mark.timeout(600),
]


@pytest.fixture(scope="module")
def corpus(broker: ApacheKafka) -> list[Graded]:
    return run_all(broker.bootstrap)


@pytest.mark.parametrize("sampling", [s.name for s in SAMPLINGS])
@pytest.mark.parametrize("scenario", [s.name for s in SCENARIOS])
def test_scenario_is_diagnosed_right(corpus: list[Graded], scenario: str, sampling: str) -> None:
    [row] = [r for r in corpus if (r.scenario, r.sampling) == (scenario, sampling)]
    assert row.right, table(corpus)


def test_never_committed_lag_is_unknown_not_zero(corpus: list[Graded]) -> None:
    # No committed offset: the group's lag and lag in seconds are null ('-', unknown), never 0 or a made-up number.
    for row in (r for r in corpus if r.scenario == "never committed"):
        assert (row.group["total_lag"], row.group["lag_seconds"]) == (None, None)
        assert [p["lag"] for p in row.group["partitions"]] == [None, None]


def test_undecidable_rows_say_why(corpus: list[Graded]) -> None:
    # In 9 s only the lone stuck consumer is undecidable, and the status (not the cause) of the group with no
    # members and of the crash loop (with either sampling: STALL or STOP as the snapshot meets the member alive or
    # between lives); the table says why in numbered notes.
    assert [(r.scenario, r.sampling) for r in corpus if not r.graded] == [
        ("stuck consumer, long window", "--samples 4 --every 3"),
    ]
    short = SAMPLINGS[1].name
    partial = [r for r in corpus if r.sampling == short and isinstance(r.expected, Expected)]
    assert [r.scenario for r in partial if r.expected.status is None] == [
        "no active members",
        "crash loop",
        "members left, offsets moved",
    ]
    text = table(corpus)
    assert "[1] stuck consumer, long window, --samples 4 --every 3: not decidable: nobody in the group" in text
    assert "[2] no active members, --samples 4 --every 3: status not decidable: the group is Empty" in text


def test_kick_outs_are_named_with_their_mechanism(corpus: list[Graded]) -> None:
    # Both samplings: the default sees the member kicked out and back twice (churn), `--every 3` once or twice; either
    # way the primary cause names the mechanism (poll-interval kick-outs, a configuration fix) and no cause offers a
    # restart, more replicas or a drain (the rates are measured across the rebalances the kick-outs cause).
    for row in (r for r in corpus if r.scenario == "poll-interval kick-outs"):
        [churn, *others] = row.group["causes"]
        assert (churn["kind"], churn["evidence"]["mechanism"], churn["remediation"]) == (
            "rebalance_churn",
            "kicked_out",
            None,
        ), row.sampling
        assert [c["kind"] for c in others if c["remediation"] is not None] == [], row.sampling


def test_the_stopped_consumer_was_caught_up_at_the_first_snapshot(corpus: list[Graded]) -> None:
    # Burrow #290: the STALL partition's oldest unread message was written inside the window (its lag in seconds is
    # the window's interpolation, no lower bound), so the window's first snapshot saw its log end at the committed
    # offset: lag 0 then, and the old zero lag hid nothing. Its sibling keeps up.
    for row in (r for r in corpus if r.scenario == "stopped behind old zero lag"):
        [stopped] = [p for p in row.group["partitions"] if p["status"] == "STALL"]
        assert (stopped["lag_seconds_method"], stopped["lag_seconds_lower_bound"]) == ("window", False), stopped
        assert [p["status"] for p in row.group["partitions"] if p is not stopped] == ["OK"], row.group


def test_rewind_recovered_was_seen_going_back(corpus: list[Graded]) -> None:
    # The first snapshots are taken before the rewind (the scenario waits for them), so a consume rate measured after
    # the last rewind well above the 20 msg/s written says each window held the step back; OK says it recovered.
    for row in (r for r in corpus if r.scenario == "rewind recovered"):
        [partition] = row.group["partitions"]
        assert partition["consume_rate"] > 1.5 * partition["produce_rate"], partition
