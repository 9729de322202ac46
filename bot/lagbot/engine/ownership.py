"""Who consumes each partition of a group, according to its newest description: the owner of a partition is the first
member whose assignment holds it."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from lagbot.core.model import GroupSnapshot, Member, TopicPartition


class Ownership(Enum):
    """Who, if anyone, consumes a partition according to the newest group description."""

    OWNED = "owned"
    UNOWNED = "unowned"
    UNKNOWN = "unknown"
    """The group is live but reports no members, so owners cannot be known."""


class Owners:
    """Who owns which partition in the newest description of a group, looked up once per group."""

    def __init__(self, group: GroupSnapshot | None) -> None:
        self.group = group
        self.owners: dict[TopicPartition, Member] = {}
        if group is not None:
            for member in reversed(group.members):  # the first member that has a partition owns it
                self.owners.update(dict.fromkeys(member.assignment, member))
        self.whole_group: Ownership | None = None
        """UNOWNED for a group that is gone or has no live members, UNKNOWN for a live group reporting none (for
        every partition alike); None when each partition is OWNED or UNOWNED by the members' assignments."""
        if group is None or not group.state.is_active:
            self.whole_group = Ownership.UNOWNED
        elif not group.members:
            self.whole_group = Ownership.UNKNOWN

    def of(self, tp: TopicPartition) -> tuple[Ownership, Member | None]:
        """UNOWNED for a group that is gone or has no live members; UNKNOWN for a live group reporting none."""
        if self.whole_group is not None:
            return self.whole_group, None
        owner = self.owners.get(tp)
        return (Ownership.OWNED, owner) if owner else (Ownership.UNOWNED, None)

    def of_all(self, tps: Sequence[TopicPartition]) -> list[tuple[Ownership, Member | None]]:
        """`of` of each of `tps`, in order."""
        if self.whole_group is not None:
            return [(self.whole_group, None)] * len(tps)
        owners = self.owners
        return [(Ownership.OWNED, owner) if (owner := owners.get(tp)) else (Ownership.UNOWNED, None) for tp in tps]


def ownership_of(group: GroupSnapshot | None, tp: TopicPartition) -> tuple[Ownership, Member | None]:
    """Who owns `tp` in the newest description of the group."""
    return Owners(group).of(tp)
