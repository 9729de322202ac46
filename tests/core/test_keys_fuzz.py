"""The one key scheme (lagbot.core.keys): no two different names, of any characters, make the same key."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from lagbot.core import keys

NAME = st.text(min_size=0, max_size=40) | st.sampled_from(["", ":", "seq", ":seq", "%", "%3A", "*", "{x}", "\n"])
TWO_NAMES: list[Callable[[str, str], str]] = [keys.window, keys.window_seq, keys.history_chunks, keys.incident,
                                              keys.silence, keys.audit, keys.busy]  # fmt: skip
ONE_NAME: list[Callable[[str], str]] = [keys.window_groups, keys.history_groups, keys.summary, keys.proposal,
                                        keys.proposal_approvals, keys.proposal_approval_order, keys.proposal_message,
                                        keys.offered,
                                        keys.remediation, keys.outbox_root, keys.outbox_root_replaced,
                                        keys.outbox_root_body, keys.outbox_table, keys.outbox_queue,
                                        keys.outbox_sending, keys.lease,
                                        keys.seen, keys.usergroup]  # fmt: skip
CONSTANTS = [keys.INCIDENTS_CHANGED, keys.INCIDENTS_BY_ID, keys.SILENCES, keys.AUDIT, keys.PROPOSALS_RUNNING,
             keys.PROPOSALS_HEARTBEAT, keys.PROPOSALS_EXPIRING, keys.PROPOSALS_UNRETIRED, keys.RESTORES,
             keys.RESTORES_PREVIOUS,
             keys.OUTBOX_PENDING, keys.OUTBOX_DEAD, keys.OUTBOX_PROGRESS, keys.OUTBOX_LOCK,
             keys.STATE_EPOCH]  # fmt: skip


def every_key(a: str, b: str, c: str) -> dict[str, tuple[object, ...]]:
    """Every key the names make, with what made it."""
    made: dict[str, tuple[object, ...]] = {}

    def add(key: str, *what: object) -> None:
        assert made.setdefault(key, what) == what, f"{key!r} is made by {made[key]} and by {what}"

    for x, y in [(a, b), (b, a), (a, c), (c, b), (b, c)]:
        for build in TWO_NAMES:
            add(build(x, y), build.__name__, x, y)
        add(keys.cooldown(x, y, c), "cooldown", x, y, c)
        add(keys.history_chunk(x, 7, y), "history_chunk", x, 7, y)
        add(keys.rate(x, y, 3), "rate", x, y, 3)
    for x in (a, b, c):
        for one in ONE_NAME:
            add(one(x), one.__name__, x)
        add(keys.fence_of(keys.lease(x)), "fence", x)
    for constant in CONSTANTS:
        add(constant, constant)
    return made


@settings(max_examples=200, deadline=None)
@given(NAME, NAME, NAME)
def test_fuzz_no_two_names_make_one_key(a: str, b: str, c: str) -> None:
    every_key(a, b, c)  # asserts as it goes


@settings(max_examples=200, deadline=None)
@given(NAME)
def test_fuzz_a_part_holds_no_separator_glob_or_control_and_reads_back(name: str) -> None:
    part = keys.part(name)
    assert keys.unpart(part) == name
    assert part.isascii() and part.isprintable()
    assert not set(part) & set(":*?[]{}\\ \n\r\t")


def test_the_collision_of_the_report_cannot_happen() -> None:
    """A group named `<watched group>:seq` (one offset commit by any client) has its own key."""
    assert keys.window("prod", "billing-consumer:seq") == "lagbot:window:prod:billing-consumer%3Aseq"
    assert keys.window_seq("prod", "billing-consumer") == "lagbot:window:prod:billing-consumer:seq"
    assert keys.window("prod", "billing-consumer") == "lagbot:window:prod:billing-consumer"  # ordinary names unchanged
    assert keys.part("x%3Aseq") == "x%253Aseq"
    assert keys.history_chunk("prod", 12, "a:1") == "lagbot:history:prod:12:a%3A1"
