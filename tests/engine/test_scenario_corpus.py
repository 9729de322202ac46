"""The scenario corpus (tests/support/corpus/) graded on Apache Kafka: every scenario right on status, primary
cause and the remediation it offers, with `lagbot check`'s default sampling and with `--samples 4 --every 3`
(where that sampling can decide it; where not, the corpus says why).

The scenarios are built and checked all at once (module fixture), then each row is its own test."""

from __future__ import annotations

import pytest

from lagbot.devkit.apache_kafka import ApacheKafka
from tests.support.corpus import SAMPLINGS, SCENARIOS, Expected, Graded, run_all, table

pytestmark = pytest.mark.integration


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
        ("stuck consumer, long window", "--samples 4 --every 3")
    ]
    short = SAMPLINGS[1].name
    partial = [r for r in corpus if r.sampling == short and isinstance(r.expected, Expected)]
    assert [r.scenario for r in partial if r.expected.status is None] == ["no active members", "crash loop"]
    text = table(corpus)
    assert "[1] stuck consumer, long window, --samples 4 --every 3: not decidable: nobody in the group" in text
    assert "[2] no active members, --samples 4 --every 3: status not decidable: the group is Empty" in text
