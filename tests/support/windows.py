"""Windows for the case tables: a window stored as the running bot stores it."""

from __future__ import annotations

from dataclasses import replace

from lagbot.core.model import (
    ClusterSnapshot,
    GroupSnapshot,
    GroupState,
    GroupWindow,
    PartitionSample,
    TopicPartition,
)
from lagbot.engine.window import MemoryWindowStore


def stored_window(
    partitions: dict[TopicPartition, tuple[PartitionSample, ...]],
    latest: GroupSnapshot | None,
    state: GroupState = GroupState.STABLE,
) -> GroupWindow:
    """The same samples appended to a window store, one snapshot per sample time: its window has arrays.

    A single partition keeps its samples one by one (two samples may share a time); several partitions are
    appended per distinct time. The newest group description is then the case's own (None for a deleted group).
    """
    series = [(tp, samples) for tp, samples in sorted(partitions.items()) if samples]
    if len(series) == 1:
        steps = [{series[0][0]: s} for s in series[0][1]]
    else:
        times = sorted({s.at for _, samples in series for s in samples})
        steps = [{tp: s for tp, samples in series for s in samples if s.at == t} for t in times]
    store = MemoryWindowStore(samples=len(steps))
    members = latest.members if latest is not None else ()
    group_state = latest.state if latest is not None else state
    for step in steps:
        at = next(iter(step.values())).at
        described = GroupSnapshot("billing", group_state, members, {tp: s.committed for tp, s in step.items()})
        log_end = {tp: s.log_end for tp, s in step.items()}
        log_start = {tp: s.log_start for tp, s in step.items()}
        store.append(ClusterSnapshot("prod", at, {"billing": described}, log_end, log_start))
    window = store.window("prod", "billing")
    assert window is not None and window.columns is not None, "the store built the arrays"
    return replace(window, latest=latest)
