"""Numbered cases: stuck against siblings (lagbot.engine.siblings `stuck_vs_siblings`) and causes that agree
(lagbot.engine.agreement), through the evaluator's both routes and then `diagnose`, as in production.

    S01-..  a partition judged against the other members' partitions (status, reason, sibling commits)
    D01-..  which deficit causes fire when stuck partitions or one slow owner explain the shortfall
    R01-..  membership changes within the settle period of lagbot's own restart or scale are not churn
    M01-..  a window with a membership change: capacity causes do not trust its rates; one kick-out is named

Windows are 4 samples 3 s apart (a 9 s span, shorter than the 10 s the window rule STALL needs), unless a case
says otherwise. Every case says why its answer is right.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from lagbot.core.config import Evaluation, Thresholds
from lagbot.core.model import (
    GroupSample,
    GroupSnapshot,
    GroupState,
    GroupVerdict,
    GroupWindow,
    Member,
    PartitionSample,
    Status,
)
from lagbot.engine import wording as engine_wording
from lagbot.engine.agreement import own_rebalance
from lagbot.engine.diagnose import diagnose
from lagbot.engine.evaluate import evaluate_group
from lagbot.remediations import registry
from lagbot.service.remedies import remedy
from tests.support.windows import stored_window

RULES = Evaluation()
TOPIC = "orders"


def member(n: int, *partitions: int) -> Member:
    return Member(f"m-{n}", f"client-{n}", f"10.0.0.{n}", tuple((TOPIC, p) for p in partitions))


def part(committed: list[int], log_end: list[int], step: float = 3.0) -> tuple[PartitionSample, ...]:
    return tuple(PartitionSample(i * step, c, e, 0) for i, (c, e) in enumerate(zip(committed, log_end, strict=True)))


STILL = part([100, 100, 100, 100], [200, 260, 320, 380])
"""Committed 100 never moves while 60 messages arrive every 3 s: lag 100 -> 280, growing, never caught up."""
MOVING = part([190, 250, 310, 370], [200, 260, 320, 380])
"""Commits every step, 20 msg/s both ways: lag 10 throughout (keeps up)."""
IDLE_CAUGHT_UP = part([200, 200, 200, 200], [200, 200, 200, 200])
"""Nothing to read: lag 0."""


def window(parts: dict[int, tuple[PartitionSample, ...]], members: tuple[Member, ...]) -> GroupWindow:
    times = sorted({s.at for samples in parts.values() for s in samples})
    ids = tuple(m.member_id for m in members)
    latest = GroupSnapshot(
        "billing", GroupState.STABLE, members, {(TOPIC, p): s[-1].committed for p, s in parts.items()}
    )
    return GroupWindow(
        cluster="prod",
        group="billing",
        samples=tuple(GroupSample(t, GroupState.STABLE, ids, 1) for t in times),
        partitions={(TOPIC, p): s for p, s in parts.items()},
        latest=latest,
    )


def judged(w: GroupWindow) -> GroupVerdict:
    """The verdict by the per-partition route, after checking the array route gives the same."""
    now = w.samples[-1].at
    verdict = evaluate_group(w, thresholds=Thresholds(), rules=RULES, now=now)
    arrays = stored_window(dict(w.partitions), w.latest)
    assert evaluate_group(arrays, thresholds=Thresholds(), rules=RULES, now=now) == verdict
    return verdict


@dataclass(frozen=True)
class SiblingCase:
    window: GroupWindow
    statuses: tuple[Status, ...]
    sibling_commits: tuple[int, ...]
    reason0: str | None = None
    """The reason of partition 0, when the case checks it."""


SIBLING_CASES = [
    # S01 Partition 0 (member 1) did not commit over 9 s while partition 1 (member 2) committed at each of the 3
    #     steps; its lag grew 100 -> 280. Too short for the window rule (9 s < 10 s), but its sibling took 3
    #     chances to commit that it missed: STALL, judged on 3 sibling commits.
    pytest.param(
        SiblingCase(
            window({0: STILL, 1: MOVING}, (member(1, 0), member(2, 1))),
            (Status.STALL, Status.OK),
            (3, 0),
            engine_wording.reason_stall_siblings(280, 9.0, 100, 3),
        ),
        id="S01-short-window-sibling-commits",
    ),
    # S02 Nobody commits: both partitions still. No sibling committed, so the sibling rule says nothing and the
    #     window rules judge, as before: 9 s is under the 10 s STALL needs, and lag grew at every step: WARN.
    pytest.param(
        SiblingCase(window({0: STILL, 1: STILL}, (member(1, 0), member(2, 1))), (Status.WARN, Status.WARN), (0, 0)),
        id="S02-nobody-commits-window-rules-judge",
    ),
    # S03 The committing partition belongs to the SAME member: a member that commits one partition 3 times and not
    #     the other is alive and polling, and only the other partition is stuck: a record it cannot get past (a poison
    #     message). STALL on 3 sibling commits (before: WARN, and the scale and restart buttons; issue 22).
    pytest.param(
        SiblingCase(
            window({0: STILL, 1: MOVING}, (member(1, 0, 1),)),
            (Status.STALL, Status.OK),
            (3, 0),
            engine_wording.reason_stall_siblings(280, 9.0, 100, 3),
        ),
        id="S03-own-member-committing-its-other-partition",
    ),
    # S04 Only two samples: the sibling committed in one step only, one missed chance, which an ordinary
    #     commit interval explains (SIBLING_MIN_COMMITS is 2). OK.
    pytest.param(
        SiblingCase(
            window({0: STILL[:2], 1: MOVING[:2]}, (member(1, 0), member(2, 1))), (Status.OK, Status.OK), (0, 0)
        ),
        id="S04-one-sibling-commit-is-not-enough",
    ),
    # S05 The still partition's lag does not grow (log end flat at 200): it may be waiting on a slow record
    #     but nothing piles up; the rule needs growing lag. OK.
    pytest.param(
        SiblingCase(
            window({0: part([100] * 4, [200] * 4), 1: MOVING}, (member(1, 0), member(2, 1))),
            (Status.OK, Status.OK),
            (0, 0),
        ),
        id="S05-lag-not-growing",
    ),
    # S06 The still partition is caught up (lag 0): nothing to read, not stuck (checked before any rule). OK.
    pytest.param(
        SiblingCase(
            window({0: IDLE_CAUGHT_UP, 1: MOVING}, (member(1, 0), member(2, 1))), (Status.OK, Status.OK), (0, 0)
        ),
        id="S06-caught-up-is-not-stuck",
    ),
    # S07 Two siblings of other members commit 3 times each: 6 sibling commits seen.
    pytest.param(
        SiblingCase(
            window({0: STILL, 1: MOVING, 2: MOVING}, (member(1, 0), member(2, 1), member(3, 2))),
            (Status.STALL, Status.OK, Status.OK),
            (6, 0, 0),
        ),
        id="S07-commits-counted-over-all-siblings",
    ),
    # S08 Burrow #290 in a short window (the corpus' "stopped behind old zero lag" with --samples 4 --every 3):
    #     partition 0 was caught up at the first sample only (committed 200 = log end 200), and its offset never moved
    #     since while 60 messages arrive every 3 s; member 2's partition commits at every step. The zero lag is older
    #     than the recent samples (the last `min_samples`), so it hides nothing: STALL on 3 sibling commits. Before,
    #     the sibling rule's guard spanned the whole window: OK, "caught up within the window".
    pytest.param(
        SiblingCase(
            window({0: part([200] * 4, [200, 260, 320, 380]), 1: MOVING}, (member(1, 0), member(2, 1))),
            (Status.STALL, Status.OK),
            (3, 0),
            engine_wording.reason_stall_siblings(180, 9.0, 0, 3),
        ),
        id="S08-stopped-behind-an-old-zero-lag",
    ),
    # S09 The same, but the log end was still 260 at the second sample, where the consumer (at 260) was caught up: a
    #     recent zero lag, the topic merely quiet until then. Not stuck: OK.
    pytest.param(
        SiblingCase(
            window({0: part([260] * 4, [260, 260, 320, 380]), 1: MOVING}, (member(1, 0), member(2, 1))),
            (Status.OK, Status.OK),
            (0, 0),
        ),
        id="S09-recent-zero-lag-is-a-quiet-topic",
    ),
]


@pytest.mark.parametrize("case", SIBLING_CASES)
def test_stuck_against_siblings(case: SiblingCase) -> None:
    verdict = judged(case.window)
    assert tuple(p.status for p in verdict.partitions) == case.statuses
    assert tuple(p.sibling_commits for p in verdict.partitions) == case.sibling_commits
    if case.reason0 is not None:
        assert verdict.partitions[0].reason == case.reason0


def test_a_stuck_partition_holding_the_lag_is_the_stuck_consumer_before_its_lag_share() -> None:
    # S08's window diagnosed (the corpus' "stopped behind old zero lag" with --samples 4 --every 3): partition 0 holds
    # the lag because its owner commits nothing. STALL by the sibling rule gives stuck_consumer less confidence than
    # the window rule does, and its lag share (hot_partition, read at 0 msg/s) ranked first; the stuck consumer is
    # the mechanism and ranks first, both answered by the restart.
    [s08] = [p.values[0] for p in SIBLING_CASES if p.id == "S08-stopped-behind-an-old-zero-lag"]
    causes = diagnose(judged(s08.window), s08.window, RULES)
    assert [(c.kind, remedy(c)) for c in causes] == [("stuck_consumer", "restart"), ("hot_partition", "restart")]
    assert causes[1].confidence < causes[0].confidence


@dataclass(frozen=True)
class AgreeCase:
    window: GroupWindow
    kinds: tuple[str, ...]
    """Every cause kind that fires, in rank order."""
    confidence: dict[str, float]


def fast(rate: int, lag_end: int) -> tuple[PartitionSample, ...]:
    """Written and read at `rate` msg/s (3 s steps) from lag `lag_end`: keeps up."""
    return part([1000 + rate * 3 * i for i in range(4)], [1000 + lag_end + rate * 3 * i for i in range(4)])


def slow(produce: int, consume: int) -> tuple[PartitionSample, ...]:
    """Written at `produce`, read at `consume` msg/s (3 s steps), lag 100 at first: growing."""
    return part([1000 + consume * 3 * i for i in range(4)], [1100 + produce * 3 * i for i in range(4)])


AGREE_CASES = [
    # D01 The case: member 1's two partitions do not commit over 9 s while member 2's two keep up (20
    #     msg/s each). The group reads 40 of 80 msg/s and lag grows: before, throughput_deficit "2 members now, 4
    #     would keep up" with a scale button. Scaling would not help (the missing consumption is the stuck
    #     partitions'), so only stuck_consumer fires, naming member 1; confidence 0.55 + 0.05 x 6 sibling commits.
    pytest.param(
        AgreeCase(
            window({0: STILL, 1: STILL, 2: MOVING, 3: MOVING}, (member(1, 0, 1), member(2, 2, 3))),
            ("stuck_consumer",),
            {"stuck_consumer": 0.85},
        ),
        id="D01-stuck-member-no-deficit",
    ),
    # D02 A slow single owner: member 1 reads its partition at 2 msg/s of 20 written, members 2 and 3 keep up at
    #     20. More replicas would not take partition 0 from member 1: no throughput_deficit; hot_partition (slow
    #     owner, 100 -> 154 of 184 lag: 0.6 + 0.3 x share) explains it.
    pytest.param(
        AgreeCase(
            window({0: slow(20, 2), 1: fast(20, 10), 2: fast(20, 10)}, (member(1, 0), member(2, 1), member(3, 2))),
            ("hot_partition",),
            {"hot_partition": 0.6 + 0.3 * 262 / 282},
        ),
        id="D02-slow-owner-no-deficit",
    ),
    # D03 A true deficit: every partition read at 10 of 20 msg/s by 2 members owning 2 each. Nothing explains
    #     it but capacity: throughput_deficit fires with its scale remedy.
    pytest.param(
        AgreeCase(
            window({p: slow(20, 10) for p in range(4)}, (member(1, 0, 1), member(2, 2, 3))),
            ("throughput_deficit",),
            {"throughput_deficit": 0.75},
        ),
        id="D03-true-deficit-still-fires",
    ),
]


@pytest.mark.parametrize("case", AGREE_CASES)
def test_causes_agree(case: AgreeCase) -> None:
    verdict = judged(case.window)
    causes = diagnose(verdict, case.window, RULES)
    assert tuple(c.kind for c in causes) == case.kinds
    for kind, confidence in case.confidence.items():
        (cause,) = [c for c in causes if c.kind == kind]
        assert cause.confidence == pytest.approx(confidence)


# ---------------------------------------------------------------------------------------------------
# R01-..: the rebalance lagbot's own restart or scale caused is expected, not rebalance_churn
# ---------------------------------------------------------------------------------------------------


def churned(changes_at: tuple[float, ...]) -> GroupVerdict:
    """A caught-up group whose generation changes at the given sample times (samples every 10 s, 0..60 s), with
    its causes: the real evaluator and diagnosis."""
    generation, samples = 1, []
    for i in range(7):
        at = 10.0 * i
        generation += at in changes_at
        samples.append(GroupSample(at, GroupState.STABLE, ("m-1",), generation))
    caught_up = tuple(PartitionSample(10.0 * i, 500, 500, 0) for i in range(7))
    latest = GroupSnapshot("billing", GroupState.STABLE, (member(1, 0),), {(TOPIC, 0): 500}, generation=generation)
    w = GroupWindow("prod", "billing", tuple(samples), {(TOPIC, 0): caught_up}, latest)
    verdict = evaluate_group(w, thresholds=Thresholds(), rules=RULES, now=60.0)
    return replace(verdict, causes=diagnose(verdict, w, RULES))


OWN_REBALANCE_CASES = [
    # R01 A scale ran at t=20, settling until t=40: the generation changed at t=30 and t=40 (the members left and
    #     joined). Both changes are the scale's own rebalance: no rebalance_churn.
    pytest.param((30.0, 40.0), "scale", 20.0, 40.0, (), id="R01-scale-rebalance-expected"),
    # R02 The same changes after a restart: also expected.
    pytest.param((30.0, 40.0), "restart", 20.0, 40.0, (), id="R02-restart-rebalance-expected"),
    # R03 A drain does not rebalance the group: its changes are churn as ever.
    pytest.param((30.0, 40.0), "drain", 20.0, 40.0, ("rebalance_churn",), id="R03-drain-is-not-a-rebalance"),
    # R04 The changes at t=50 and t=60 come after the settle period (until t=40): churn, not the scale's.
    pytest.param((50.0, 60.0), "scale", 20.0, 40.0, ("rebalance_churn",), id="R04-after-the-settle-period"),
    # R05 One change inside the period (t=30) and one outside (t=60): one unexplained change is not churn.
    pytest.param((30.0, 60.0), "scale", 20.0, 40.0, (), id="R05-one-change-outside-is-not-churn"),
    # R06 Two changes before the action (t=10, t=20 is its start: t=10 is outside): t=10 and t=50 outside, churn.
    pytest.param((10.0, 30.0, 50.0), "scale", 20.0, 40.0, ("rebalance_churn",), id="R06-churn-before-and-after"),
    # R07 No action of ours recorded (no remediation state): churn as ever.
    pytest.param((30.0, 40.0), None, None, None, ("rebalance_churn",), id="R07-no-action-of-ours"),
]


@pytest.mark.parametrize(("changes", "action", "since", "until", "kinds"), OWN_REBALANCE_CASES)
def test_own_rebalance_is_expected(
    changes: tuple[float, ...], action: str | None, since: float | None, until: float | None, kinds: tuple[str, ...]
) -> None:
    verdict = churned(changes)
    assert [c.kind for c in verdict.causes] == ["rebalance_churn"]
    assert verdict.causes[0].evidence["changed_at"] == list(changes)
    settles = action is not None and registry.settles(action)  # the remediation says whether it rebalances the group
    judged_verdict = own_rebalance(verdict, settles, since, until)
    assert tuple(c.kind for c in judged_verdict.causes) == kinds
    assert [c.rank for c in judged_verdict.causes] == list(range(1, len(kinds) + 1))


# ---------------------------------------------------------------------------------------------------
# M01-..: a window with a membership change does not trust its rates for the capacity causes; one kick-out is named
# ---------------------------------------------------------------------------------------------------


def changing(
    parts: dict[int, tuple[PartitionSample, ...]],
    members: tuple[Member, ...],
    ids: tuple[tuple[str, ...], ...],
    state: GroupState = GroupState.STABLE,
) -> GroupWindow:
    """`window` whose member ids at each sample time are `ids` (the newest snapshot's members are `members`)."""
    times = sorted({s.at for samples in parts.values() for s in samples})
    latest = GroupSnapshot("billing", state, members, {(TOPIC, p): s[-1].committed for p, s in parts.items()})
    return GroupWindow(
        cluster="prod",
        group="billing",
        samples=tuple(
            GroupSample(t, state if i == len(times) - 1 else GroupState.STABLE, who, 1)
            for i, (t, who) in enumerate(zip(times, ids, strict=True))
        ),
        partitions={(TOPIC, p): s for p, s in parts.items()},
        latest=latest,
    )


KICKED = part([1000, 1000, 1040, 1040], [3000, 3060, 3120, 3180])
"""The corpus' kicked-out member over 9 s: 20 msg/s written, one batch of 40 committed between the kick-outs; lag
2,000 -> 2,140, growing, older than the window."""


@dataclass(frozen=True)
class KickCase:
    window: GroupWindow
    kinds: tuple[str, ...]
    """Every cause kind that fires, in rank order."""
    remediations: tuple[str | None, ...]
    mechanism: str | None
    """The evidence's mechanism of rebalance_churn, when it fires."""
    untrusted: tuple[str, ...]
    """The capacity causes that say their rates span a membership change."""


KICK_CASES = [
    # M01 The corpus' poll-interval kick-outs with `--samples 4 --every 3`: the one member (m-1) is kicked out between
    #     the second and third snapshots and rejoins as m-2; it committed 40 between. One change, no churn (two are
    #     needed). Before: partition_ceiling -> drain first (one member for one partition, reading 4.4 of 20 msg/s),
    #     wrong advice for a configuration problem measured across the rebalance. Now: the departure, the rejoin and
    #     the moving offset name the kick-out (configuration, no restart, no scale) first; the ceiling keeps its facts,
    #     says its rates span the change and offers no drain.
    pytest.param(
        KickCase(
            changing({0: KICKED}, (member(2, 0),), (("m-1",), ("m-1",), ("m-2",), ("m-2",))),
            ("rebalance_churn", "partition_ceiling"),
            (None, None),
            "kicked_out",
            ("partition_ceiling",),
        ),
        id="M01-one-kick-out-named-ceiling-not-trusted",
    ),
    # M02 A true deficit (D03's: 4 partitions read at 10 of 20 msg/s by 2 members) while a third member joins at the
    #     third snapshot: the rates span the rebalance the join caused. throughput_deficit keeps its facts, offers no
    #     scale and says why; nobody left, so no kick-out is claimed and no churn (one change).
    pytest.param(
        KickCase(
            changing(
                {p: slow(20, 10) for p in range(4)},
                (member(1, 0), member(2, 1, 2), member(3, 3)),
                (("m-1", "m-2"), ("m-1", "m-2"), ("m-1", "m-2", "m-3"), ("m-1", "m-2", "m-3")),
            ),
            ("throughput_deficit",),
            (None,),
            None,
            ("throughput_deficit",),
        ),
        id="M02-join-deficit-not-trusted",
    ),
    # M03 M01's offsets, but the member leaves and nobody comes back (Empty at the last snapshot): a member that left,
    #     not one kicked out and back; no kick-out is claimed, the group has no members and says so first. The
    #     deficit it also shows (4.4 of 20 msg/s) was measured across the departure: stated, not trusted, no scale.
    pytest.param(
        KickCase(
            changing({0: KICKED}, (), (("m-1",), ("m-1",), ("m-1",), ()), GroupState.EMPTY),
            ("no_active_members", "throughput_deficit"),
            ("scale", None),
            None,
            ("throughput_deficit",),
        ),
        id="M03-left-without-rejoining-is-no-kick-out",
    ),
    # M04 D03's true deficit with the same members at every snapshot: rates trusted, scale offered (the rule changes
    #     nothing without a membership change).
    pytest.param(
        KickCase(
            window({p: slow(20, 10) for p in range(4)}, (member(1, 0, 1), member(2, 2, 3))),
            ("throughput_deficit",),
            ("scale",),
            None,
            (),
        ),
        id="M04-no-change-rates-trusted",
    ),
]


@pytest.mark.parametrize("case", KICK_CASES)
def test_a_membership_change_untrusts_capacity_rates(case: KickCase) -> None:
    verdict = judged(case.window)
    causes = diagnose(verdict, case.window, RULES)
    assert tuple(c.kind for c in causes) == case.kinds
    assert tuple(remedy(c) for c in causes) == case.remediations
    churn = [c for c in causes if c.kind == "rebalance_churn"]
    assert (churn[0].evidence.get("mechanism") if churn else None) == case.mechanism
    if case.mechanism == "kicked_out":
        assert churn[0].explanation == engine_wording.churn_kicked_out_once(verdict.total_lag or 0)
        assert churn[0].evidence["departures"] == 1
    said = engine_wording.rates_across_membership_change(1)
    assert tuple(c.kind for c in causes if c.explanation.endswith(said)) == case.untrusted
    for c in causes:
        assert c.evidence.get("rates_trusted", True) is (c.kind not in case.untrusted)
