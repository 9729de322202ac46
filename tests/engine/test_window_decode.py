"""A stored window entry decodes to the same entry whichever way it is made: its arrays straight from the stored rows
(the usual case), or its samples when the rows are not as `encode_entry` writes them (out of order, a partition twice)
or the arrays cannot hold them (offsets too big). Read back as samples, both are what was stored."""

from __future__ import annotations

import json
import random

from lagbot.core.model import GroupState, Member, PartitionSample
from lagbot.core.stored import encode
from lagbot.engine.window_entries import FORMAT_VERSION, decode_entry, encode_entry, entry_samples, new_entry

MEMBER = Member("m-1", "c-1", "/10.0.0.1", (("a", 0),))


def document(topics: dict[str, list[list[int | None]]]) -> str:
    return encode(
        FORMAT_VERSION,
        {
            "at": 60.0,
            "state": "Stable",
            "generation": 3,
            "members": [["m-1", "c-1", "/10.0.0.1", [["a", 0]]]],
            "topics": topics,
        },
        sort_keys=False,
    )


def samples(topics: dict[str, list[list[int | None]]]) -> dict[tuple[str, int], PartitionSample]:
    """What the rows say, last row of a partition winning (as the samples' route has always read them)."""
    return {(t, r[0]): PartitionSample(60.0, r[1], r[2], r[3]) for t, rows in topics.items() for r in rows}  # type: ignore[arg-type]


def decoded_as_samples(raw: str) -> dict[tuple[str, int], PartitionSample]:
    entry = decode_entry(raw)
    assert (entry.state, entry.members, entry.generation) == (GroupState.STABLE, (MEMBER,), 3)
    return dict(zip(entry.tps, entry_samples(entry), strict=True))


def test_random_entries_round_trip_through_their_arrays() -> None:
    rng = random.Random(3)
    previous = None
    for _ in range(300):
        partitions = {
            (rng.choice(["a", "b", "topic-é"]), rng.randint(0, 40)): PartitionSample(
                60.0, rng.choice([None, rng.randint(0, 10**12)]), rng.randint(0, 10**12), rng.randint(0, 10**6)
            )
            for _ in range(rng.randint(1, 30))
        }
        entry = new_entry(60.0, GroupState.STABLE, (MEMBER,), 3, partitions, like=None)
        decoded = decode_entry(encode_entry(entry), like=previous)
        assert decoded.columns is not None and decoded.samples is None  # made straight from the rows
        assert decoded.tps == tuple(sorted(partitions))
        assert dict(zip(decoded.tps, entry_samples(decoded), strict=True)) == partitions
        previous = decoded
    again = decode_entry(encode_entry(previous), like=previous)
    assert again.tps is previous.tps  # entries of the same partitions share one tuple


def test_rows_not_as_written_or_too_big_for_the_arrays_decode_through_samples() -> None:
    out_of_order = {"b": [[1, 5, 9, 0], [0, 2, 9, 0]], "a": [[3, None, 4, 0]]}
    twice = {"a": [[0, 1, 9, 0], [0, 3, 9, 0]]}
    too_big = {"a": [[0, 2**60, 2**60 + 5, 0]]}
    for topics in (out_of_order, twice, too_big):
        raw = document(topics)
        entry = decode_entry(raw)
        assert entry.samples is not None or entry.columns is not None
        assert decoded_as_samples(raw) == samples(topics)
    assert decode_entry(document(too_big)).columns is None  # int64 and float64 sums of such offsets are not exact
    assert json.loads(document(twice))["topics"] == twice
