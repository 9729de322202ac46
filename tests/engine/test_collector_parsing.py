"""The collector's reading of AdminClient results, with the client library's own result objects."""

from __future__ import annotations

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType, Node, TopicPartition
from confluent_kafka.admin import ConsumerGroupDescription, ConsumerGroupListing, MemberAssignment, MemberDescription

from lagbot.core.model import GroupSnapshot, GroupState, Member
from lagbot.engine.collector import _complete, _interesting_topics, _known_descriptions, _shown_partitions
from lagbot.engine.group_requests import _member, _state, described_state
from lagbot.engine.offset_reader import Committed, Described, _committed_offsets, _group_answer


def test_nothing_committed_is_none_never_minus_1001() -> None:
    # The offset reader's child answers with the client's own values (-1001: nothing committed).
    raw = {"offsets": [["t", 0, 5, None], ["t", 1, -1001, None], ["t", 2, 0, None]]}
    assert _committed_offsets(raw) == {("t", 0): 5, ("t", 1): None, ("t", 2): 0}
    assert _group_answer(raw) == [Committed("t", 0, 5), Committed("t", 1, None), Committed("t", 2, 0)]


def test_partition_errors_are_left_out() -> None:
    raw = {"offsets": [["t", 0, 5, None], ["t", 1, 7, "Broker: Unstable offset commit"]]}
    assert _committed_offsets(raw) == {("t", 0): 5}
    assert _committed_offsets({"error": "Broker: Not coordinator"}) == "Broker: Not coordinator"


def test_member_keeps_ids_host_and_sorted_assignment() -> None:
    described = MemberDescription(
        "consumer-1-7f3a", "worker-1", "/10.0.0.11", MemberAssignment([TopicPartition("b", 1), TopicPartition("a", 2)])
    )
    assert _member(described) == Member("consumer-1-7f3a", "worker-1", "/10.0.0.11", (("a", 2), ("b", 1)))


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (ConsumerGroupState.STABLE, GroupState.STABLE),
        (ConsumerGroupState.PREPARING_REBALANCING, GroupState.PREPARING_REBALANCE),
        (ConsumerGroupState.COMPLETING_REBALANCING, GroupState.COMPLETING_REBALANCE),
        (ConsumerGroupState.EMPTY, GroupState.EMPTY),
        (ConsumerGroupState.DEAD, GroupState.DEAD),
        (ConsumerGroupState.UNKNOWN, GroupState.UNKNOWN),
    ],
)
def test_group_states_map_one_to_one(state: ConsumerGroupState, expected: GroupState) -> None:
    assert _state(state) is expected


@pytest.mark.parametrize(
    ("state", "group_type", "members", "expected"),
    [
        # librdkafka reports KIP-848's Assigning and Reconciling as UNKNOWN (measured on Apache Kafka 4.1).
        (ConsumerGroupState.UNKNOWN, ConsumerGroupType.CONSUMER, 2, GroupState.RECONCILING),
        (ConsumerGroupState.UNKNOWN, ConsumerGroupType.CONSUMER, 0, GroupState.UNKNOWN),
        (ConsumerGroupState.UNKNOWN, ConsumerGroupType.CLASSIC, 2, GroupState.UNKNOWN),
        (ConsumerGroupState.STABLE, ConsumerGroupType.CONSUMER, 2, GroupState.STABLE),
        (ConsumerGroupState.EMPTY, ConsumerGroupType.CONSUMER, 0, GroupState.EMPTY),
    ],
)
def test_a_consumer_protocol_group_in_an_unnamed_state_with_members_is_reconciling(
    state: ConsumerGroupState, group_type: ConsumerGroupType, members: int, expected: GroupState
) -> None:
    described = ConsumerGroupDescription(
        "g",
        False,
        [MemberDescription(f"m{i}", f"c{i}", "/10.0.0.1", MemberAssignment([])) for i in range(members)],
        "uniform",
        state,
        Node(1, "127.0.0.1", 9092),
        type=group_type,
    )
    assert described_state(described) is expected
    assert expected.is_active is (expected in (GroupState.STABLE, GroupState.RECONCILING))


def test_complete_lists_every_partition_of_consumed_topics_and_drops_deleted_ones() -> None:
    # Committed on t-0 only, assigned u-0; t has 3 partitions (t-1, t-2 uncommitted: None); the deleted
    # topic `gone` has no partition count and no log end any more: dropped, not shown with a fake lag.
    group = GroupSnapshot(
        "g",
        GroupState.STABLE,
        (Member("m", "c", "/h", (("u", 0),)),),
        {("t", 0): 7, ("gone", 0): 3},
    )
    partitions = [("gone", 0), ("t", 0), ("t", 1), ("t", 2), ("u", 0)]
    log_end = {("t", 0): 9, ("t", 1): 4, ("t", 2): 0, ("u", 0): 2}
    shown = _shown_partitions(partitions, log_end)
    assert shown == {"t": [("t", 0), ("t", 1), ("t", 2)], "u": [("u", 0)]}
    completed = _complete(group, sorted(_interesting_topics(group)), shown)
    assert completed.committed == {("t", 0): 7, ("t", 1): None, ("t", 2): None, ("u", 0): None}
    assert list(completed.committed) == [("t", 0), ("t", 1), ("t", 2), ("u", 0)]  # topic, then partition order
    assert completed.members == group.members


def test_only_a_classic_group_listed_as_empty_goes_undescribed() -> None:
    """ListGroups already says what DescribeGroups would of a classic group listed as Empty (no members, no
    protocol); every other group is described: live ones, consumer-protocol ones (their description names the
    broker's assignor), and those an older broker lists without a state or a type."""
    listings = [
        ConsumerGroupListing("empty", True, ConsumerGroupState.EMPTY, ConsumerGroupType.CLASSIC),
        ConsumerGroupListing("live", False, ConsumerGroupState.STABLE, ConsumerGroupType.CLASSIC),
        ConsumerGroupListing("new-protocol", False, ConsumerGroupState.EMPTY, ConsumerGroupType.CONSUMER),
        ConsumerGroupListing("old-broker", False, ConsumerGroupState.EMPTY, ConsumerGroupType.UNKNOWN),
        ConsumerGroupListing("no-state", False, ConsumerGroupState.UNKNOWN, ConsumerGroupType.UNKNOWN),
    ]
    assert _known_descriptions(listings) == {"empty": Described(GroupState.EMPTY, (), "")}
