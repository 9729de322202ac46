"""A classic group that ListGroups reports Empty is not described (it has no members to describe); a live group
is, and both come out of the collector exactly as the broker holds them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from types import SimpleNamespace
from typing import Any

import pytest

from lagbot.core.model import GroupState
from lagbot.engine import offset_reader, wording
from lagbot.engine.collector import CollectError, _describe_and_fetch, collect, make_admin
from lagbot.engine.offset_reader import Described, GroupRead, InProcessReader, OffsetReader
from tests.conftest import Kafka, Names
from tests.support.apache_groups import live_group
from tests.support.engine_rig import settings_for


@pytest.mark.parametrize("isolate", [True, False], ids=["child-process", "in-process"])
def test_only_groups_not_listed_empty_are_described(
    kafka: Kafka, names: Names, isolate: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic, empty, live = names("topic"), names("group"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 10)
    kafka.produce(topic, 1, 20)
    kafka.commit(empty, {(topic, 0): 3, (topic, 1): 7})
    asked: list[list[str]] = []
    real_read = OffsetReader.read

    def recording_read(
        self: OffsetReader, groups: Sequence[str], timeout: float, known: Mapping[str, Described] | None = None
    ) -> dict[str, GroupRead]:
        asked.append(sorted(g for g in groups if g not in (known or {})))
        return real_read(self, groups, timeout, known)

    monkeypatch.setattr(OffsetReader, "read", recording_read)
    with live_group(kafka.bootstrap, live, [topic]) as group:
        group.join("member-1")
        group.wait_spread(partitions=2, owning=1)
        group.commit("member-1", {(topic, 0): 9, (topic, 1): 20})
        settings = settings_for(kafka, f"({empty}|{live})")
        admin: Any = make_admin(settings.clusters[0], isolate_group_reads=isolate)
        try:
            snapshot = collect(admin, settings.clusters[0])
        finally:
            admin.offsets.close()

    assert snapshot.error is None
    assert asked == [[live]]  # one read of both groups' offsets, describing only the live one
    idle = snapshot.groups[empty]
    assert (idle.state, idle.members, idle.assignor, idle.error) == (GroupState.EMPTY, (), "", None)
    assert idle.committed == {(topic, 0): 3, (topic, 1): 7}
    busy = snapshot.groups[live]
    assert busy.state is GroupState.STABLE and busy.error is None
    assert [(m.client_id, m.assignment) for m in busy.members] == [("member-1", ((topic, 0), (topic, 1)))]
    assert busy.committed == {(topic, 0): 9, (topic, 1): 20}


def test_groups_all_unreadable_are_an_unreachable_cluster_even_when_none_was_described(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Empty groups are not described, so a cycle in which every offset fetch failed has no failed description to
    show for it: it is still the cluster that could not be read, said once, not one error per group."""

    def answer(admin: object, request: dict[str, Any]) -> dict[str, Any]:
        assert request["describe"] == []
        return {g: {"error": "Local: Timed out (_TIMED_OUT)"} for g in request["groups"]}

    # The requests' answer as the reader gets it when it sends them (`send`), gathered when it is read.
    monkeypatch.setattr(offset_reader, "send", lambda admin, request: partial(dict, answer(admin, request)))
    admin = SimpleNamespace(offsets=InProcessReader(admin=None))
    known = dict.fromkeys(("a", "b"), Described(GroupState.EMPTY, (), ""))
    with pytest.raises(CollectError) as raised:
        _describe_and_fetch(admin, "prod", ["a", "b"], known, 5.0)
    assert str(raised.value) == wording.cluster_unreachable(
        "prod", "describing consumer groups", "Local: Timed out (_TIMED_OUT)"
    )
