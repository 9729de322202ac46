"""PartitionVerdict.with_lag_seconds is `dataclasses.replace` of its three lag-seconds fields, and nothing else."""

from __future__ import annotations

from dataclasses import fields, replace

from lagbot.core.model import Member, PartitionVerdict, Status


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
