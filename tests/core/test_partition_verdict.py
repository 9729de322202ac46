"""PartitionVerdict.with_lag_seconds is `dataclasses.replace` of its three lag-seconds fields, and nothing else; a
verdict made in the unfrozen scaffold (`partition_verdict_of`, `partition_verdicts`) is a PartitionVerdict like any."""

from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError, fields, replace

import pytest

from lagbot.core.model import (
    Member,
    PartitionVerdict,
    Status,
    _PartitionVerdictFields,
    partition_verdict_of,
    partition_verdicts,
)


def test_with_lag_seconds_keeps_every_other_field() -> None:
    # Every field differs from its default, so a field the method forgot would show.
    verdict = PartitionVerdict(
        topic="orders", partition=3, committed=10, log_end=50, log_start=2, lag=40, lag_seconds=12.5,
        lag_seconds_lower_bound=True, status=Status.STALL, reason="stuck", produce_rate=1.5, consume_rate=0.25,
        owner=Member("m-1", "c-1", "/10.0.0.1", (("orders", 3),)), sibling_commits=4, lag_seconds_method="window",
    )  # fmt: skip
    assert all(getattr(verdict, f.name) != f.default for f in fields(verdict))
    changed = verdict.with_lag_seconds(99.0, False, "time_index")
    assert changed == replace(verdict, lag_seconds=99.0, lag_seconds_lower_bound=False, lag_seconds_method="time_index")


def _every_field() -> PartitionVerdict:
    return PartitionVerdict(
        topic="orders", partition=3, committed=10, log_end=50, log_start=2, lag=40, lag_seconds=12.5,
        lag_seconds_lower_bound=True, status=Status.STALL, reason="stuck", produce_rate=1.5, consume_rate=0.25,
        owner=Member("m-1", "c-1", "/10.0.0.1", (("orders", 3),)), sibling_commits=4, lag_seconds_method="window",
    )  # fmt: skip


def test_a_verdict_made_in_the_scaffold_is_a_frozen_partition_verdict() -> None:
    verdict = _every_field()
    values = [getattr(verdict, f.name) for f in fields(verdict)]
    for made in (partition_verdict_of(*values), *partition_verdicts(*[[v] for v in values])):
        assert type(made) is PartitionVerdict
        assert made == verdict and hash(made) == hash(verdict) and repr(made) == repr(verdict)
        assert [getattr(made, f.name) for f in fields(made)] == values
        with pytest.raises(FrozenInstanceError):
            made.lag = 1  # type: ignore[misc]
        assert replace(made, lag=1) == replace(verdict, lag=1)
        assert pickle.loads(pickle.dumps(made)) == verdict


def test_the_scaffold_has_partition_verdicts_slots_in_their_order() -> None:
    assert _PartitionVerdictFields.__slots__ == PartitionVerdict.__slots__  # type: ignore[attr-defined]
    assert [f.name for f in fields(_PartitionVerdictFields)] == [f.name for f in fields(PartitionVerdict)]


def test_verdicts_made_of_columns_are_one_per_row() -> None:
    verdict = _every_field()
    values = [getattr(verdict, f.name) for f in fields(verdict)]
    other = replace(verdict, partition=4, lag=7)
    columns = [[v, getattr(other, f.name)] for v, f in zip(values, fields(verdict), strict=True)]
    assert partition_verdicts(*columns) == [verdict, other]
    assert partition_verdicts(*[[] for _ in values]) == []
