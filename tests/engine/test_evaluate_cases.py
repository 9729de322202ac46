"""The correctness proof of lagbot.engine.evaluate, in the style of Burrow's evaluator tests.

Every case is a hand-made window (times in seconds, `now` passed explicitly) with a comment that says what
it tests and why the expected answer is the right one. The tables:

    01-..  partition status: `evaluate_partition` (ownership, status, reason, lag, owner), every rule and edge
    L01-.. `lag_seconds`
    P01-.. `produce_rate`    C01-.. `consume_rate`    E01-.. `eta_seconds`
    V01-.. `severity` (default `Thresholds()` unless a case says otherwise)    F01-.. `level_fires`
    T01-.. `trend`
    G01-.. `evaluate_group`    X01-.. `error_verdict`

Every case runs through both routes of the evaluator: the per-partition route (a hand-made window) and the
array route (the same samples appended to a window store, whose window carries arrays): the Facts the
array route gathers must equal `window_facts`, every rule must give the same result on both, and the
verdicts must be equal (`both_routes`, `stored_window`).

Unless a case says otherwise the rules are `Evaluation()`: STALL and STOP need 3 committed samples over at
least 10 s; WARN needs 3 committed samples. Reasons are built with the same `messages` functions the
evaluator uses, so a change of wording does not break the proof but a wrong number does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from lagbot.core import messages
from lagbot.core.config import Evaluation, Level, Thresholds
from lagbot.core.model import (
    GroupSample,
    GroupSnapshot,
    GroupState,
    GroupWindow,
    Member,
    PartitionSample,
    PartitionVerdict,
    Severity,
    Status,
    TopicPartition,
)
from lagbot.engine import wording as engine_wording
from lagbot.engine.evaluate import (
    GroupPoint,
    column_facts,
    error_verdict,
    evaluate_group,
    evaluate_partition,
    evaluate_partitions,
    level_fires,
    severity,
    trend,
)
from lagbot.engine.facts import Facts, window_facts
from lagbot.engine.ownership import Ownership, ownership_of
from lagbot.engine.rates import consume_rate, eta_seconds, lag_seconds, log_end_restart, produce_rate
from lagbot.engine.rules import partition_status, rule_rewind, rule_stall, rule_stop, rule_warn
from tests.support.windows import stored_window

RULES = Evaluation()
DEFAULTS = Thresholds()

Row = tuple[float, int | None, int]
"""(at, committed, log_end) of one sample; log_start is 0 throughout (retention is the diagnosis' business)."""


def w(*rows: Row) -> tuple[PartitionSample, ...]:
    """A window of samples of one partition, oldest first."""
    return tuple(
        PartitionSample(at=at, committed=committed, log_end=log_end, log_start=0) for at, committed, log_end in rows
    )


TP: TopicPartition = ("orders", 0)
TP1: TopicPartition = ("orders", 1)
TP2: TopicPartition = ("orders", 2)
ME = Member("m-1", "billing-1", "10.0.0.1", assignment=(TP, TP1, TP2))
"""The member that owns the partitions under test."""
OTHER = Member("m-2", "billing-2", "10.0.0.2", assignment=(("orders", 7),))
"""A member that owns only a partition no case looks at."""


def group(state: GroupState, *members: Member) -> GroupSnapshot:
    return GroupSnapshot(group="billing", state=state, members=members, committed={TP: None, TP1: None, TP2: None})


OWNED = group(GroupState.STABLE, ME)
NO_MEMBERS = group(GroupState.STABLE)
"""A live group that reports no members (it happens during joins and with some clients): owners unknown."""
EMPTY = group(GroupState.EMPTY)
UNASSIGNED = group(GroupState.STABLE, OTHER)
REBALANCING = group(GroupState.PREPARING_REBALANCE, ME)
DELETED = None

# Windows shared by several cases, so that only one thing differs between them.

W_STUCK = w((0, 100, 400), (10, 100, 450), (20, 100, 500), (30, 100, 550))
"""Committed offset 100 never moves over 30 s while the log end grows 400 -> 550: lags 300, 350, 400, 450.
It never reached the log end (100 < 400 and no lag is zero), so Burrow's guard does not apply."""

W_BURST = w((0, 1000, 1000), (10, 1000, 1000), (20, 1000, 1040), (30, 1000, 1090))
"""A quiet topic the consumer had fully read (lag 0 at t=0 and t=10), then 40 + 50 new messages it has not
committed yet: lags 0, 0, 40, 90."""


# ---------------------------------------------------------------------------------------------------
# Both routes: every case is judged by the per-partition route and by the array route
# ---------------------------------------------------------------------------------------------------


def rule_results(facts: Facts, ownership: Ownership, now: float) -> dict[str, object]:
    """What every partition rule says about one window's Facts."""
    return {
        "stop": rule_stop(facts, ownership, RULES),
        "rewind": rule_rewind(facts),
        "stall": rule_stall(facts, ownership, RULES),
        "warn": rule_warn(facts, RULES),
        "status": partition_status(facts, ownership, RULES),
        "produce_rate": produce_rate(facts),
        "consume_rate": consume_rate(facts),
        "lag_seconds": lag_seconds(facts.samples, now, facts),
    }


def both_routes(
    samples: tuple[PartitionSample, ...], group: GroupSnapshot | None, now: float
) -> tuple[PartitionVerdict, PartitionVerdict]:
    """The partition's verdict by each route, after checking that both gather the same Facts and so every rule
    agrees. A window the array route does not cover (a sample without a commit, a rewind, a log end that went
    back) is gathered by `window_facts` on both routes; that too is checked."""
    python = evaluate_partition(TP, samples, group, RULES, now)
    window = stored_window({TP: samples}, group)
    assert window.partitions[TP] == samples
    gathered = column_facts(window.columns, window.partitions) if window.columns is not None else {}
    expected = window_facts(samples)
    if TP in gathered:
        assert gathered[TP] == expected
        ownership, _ = ownership_of(group, TP)
        assert rule_results(gathered[TP], ownership, now) == rule_results(expected, ownership, now)
    (array,) = evaluate_partitions(window, RULES, now)
    return python, array


# ===================================================================================================
# 01-..: partition status through evaluate_partition
# ===================================================================================================


@dataclass(frozen=True)
class StatusCase:
    group: GroupSnapshot | None
    samples: tuple[PartitionSample, ...]
    ownership: Ownership
    status: Status
    reason: str
    lag: int | None
    shadows: tuple[Status, ...] = ()
    """Rules that ALSO fire on this window but rank below the answer: proof that the order decided it."""
    now: float = 30.0
    extra: dict[str, object] = field(default_factory=dict)
    """Other PartitionVerdict fields to check, by name."""


STATUS_CASES = [
    # 01 Idle topic, consumer caught up: committed == log end == 500 throughout. Lag 0, so OK "caught up";
    #    the unmoved offset is not a STALL because there is nothing to consume.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 500, 500), (10, 500, 500), (20, 500, 500), (30, 500, 500)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_caught_up(),
            0,
            extra={"lag_seconds": 0.0, "lag_seconds_lower_bound": False, "produce_rate": 0.0, "consume_rate": 0.0},
        ),
        id="01-idle-topic",
    ),
    # 02 The same idle window in an Empty group (nobody owns the partition). Still OK "caught up": STOP means
    #    messages are waiting and nobody reads them; here nothing waits. Caught-up is checked before STOP.
    pytest.param(
        StatusCase(
            EMPTY,
            w((0, 500, 500), (10, 500, 500), (20, 500, 500), (30, 500, 500)),
            Ownership.UNOWNED,
            Status.OK,
            engine_wording.reason_caught_up(),
            0,
        ),
        id="02-idle-topic-unowned",
    ),
    # 03 Busy topic, consumer caught up now: lags 300, 300, 200, 0. The newest lag is 0, so OK "caught up"
    #    whatever happened before.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 400), (10, 400, 700), (20, 700, 900), (30, 1000, 1000)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_caught_up(),
            0,
        ),
        id="03-caught-up-now",
    ),
    # 04 Committed went 800 -> 200 (a rewind) and the consumer has since re-read everything: lag 0 now.
    #    OK "caught up": the rewound messages have all been consumed again, so there is nothing left to act on
    #    (Burrow likewise judges nothing when the current lag is 0). The REWIND rule does not fire either: the
    #    consumer came back to 800, the offset it rewound from (rewind recovery, case 41).
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 800, 1000), (10, 200, 1000), (20, 600, 1000), (30, 1000, 1000)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_caught_up(),
            0,
        ),
        id="04-caught-up-now-after-rewind",
    ),
    # 05 Burrow's guard: W_BURST. The offset did not move for 30 s while lag is 90, which alone would be a
    #    STALL, but the consumer was at the log end at t=0 and t=10 (lag 0): it is waiting on a quiet topic,
    #    and the 90 messages arrived after its last commit. Not STALL, and not WARN either (lag 0 -> 90 "never
    #    decreased", but a zero lag inside the window is Burrow's rule 1: the consumer kept up). OK, "caught up
    #    to the log end within the window". [Before the fix in rule_warn this was WARN.]
    pytest.param(
        StatusCase(
            OWNED,
            W_BURST,
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_caught_up_in_window(),
            90,
            extra={"produce_rate": 3.0, "consume_rate": 0.0},
        ),
        id="05-burst-after-caught-up-is-not-stall",
    ),
    # 06 W_BURST in an Empty group: STOP has the same guard as STALL (a consumer that reached the log end in
    #    the window did not stop with messages waiting for it), so still OK.
    pytest.param(
        StatusCase(EMPTY, W_BURST, Ownership.UNOWNED, Status.OK, engine_wording.reason_caught_up_in_window(), 90),
        id="06-burst-after-caught-up-is-not-stop",
    ),
    # 07 The guard looks only at the recent samples (the last `min_samples`): the first commit appears at t=10 and is
    #    100, exactly the log end at t=0, but the 30 messages after it were already written at t=10 and are still
    #    unread at t=30. The consumer reached no log end of t=10, 20, 30: 3 committed samples over 20 s with an
    #    unmoved offset and 30 waiting are a STALL (Burrow: STALL, the lag is never zero in its commits). Before, the
    #    guard read the log end of t=0, a sample without a commit, and said OK.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, None, 100), (10, 100, 130), (20, 100, 130), (30, 100, 130)),
            Ownership.OWNED,
            Status.STALL,
            engine_wording.reason_stall(30, 20.0, messages.owned()),
            30,
        ),
        id="07-first-commit-at-window-start-log-end",
    ),
    # 08 First sample only: the lag (250 - 100 = 150) is known at once, but behaviour needs 3 samples:
    #    OK, "1 of 3 samples".
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 250)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_few_samples(1, 3),
            150,
            now=0.0,
            extra={"lag_seconds": None, "produce_rate": None, "consume_rate": None},
        ),
        id="08-first-sample-only",
    ),
    # 09 A new partition, seen twice: committed 0, log end 40 -> 80. Unmoved and growing, but 2 samples are
    #    fewer than the 3 every rule needs: OK, "2 of 3 samples". The rates are already measured: 40 msg in
    #    10 s = 4.0 msg/s produced, 0.0 consumed; message 0 was written before the first sample (log end was
    #    already 40 at t=20), so it is at least now - 20 = 10 s old, a lower bound.
    pytest.param(
        StatusCase(
            OWNED,
            w((20, 0, 40), (30, 0, 80)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_few_samples(2, 3),
            80,
            extra={"produce_rate": 4.0, "consume_rate": 0.0, "lag_seconds": 10.0, "lag_seconds_lower_bound": True},
        ),
        id="09-new-partition-few-samples",
    ),
    # 10 Enough samples (3) but too short a span: 8 s < min_span 10 s. A consumer committing every 5-10 s can
    #    look unmoved for 8 s, so STALL is not judged; the lag 300 is flat, so no WARN either: OK. The reason
    #    says why it is not (yet) a stall: the unmoved offset over a span shorter than min_span.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 400), (4, 100, 400), (8, 100, 400)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_span_short(8.0, 10.0),
            300,
            now=8.0,
        ),
        id="10-span-too-short-for-stall",
    ),
    # 11 The same short window for a deleted group: STOP needs the same 10 s as STALL, so OK.
    pytest.param(
        StatusCase(
            DELETED,
            w((0, 100, 400), (4, 100, 400), (8, 100, 400)),
            Ownership.UNOWNED,
            Status.OK,
            engine_wording.reason_span_short(8.0, 10.0),
            300,
            now=8.0,
        ),
        id="11-span-too-short-for-stop",
    ),
    # 12 Long enough (60 s) but only 2 samples in an Empty group: STOP needs 3 committed samples: OK, "2 of 3".
    pytest.param(
        StatusCase(
            EMPTY,
            w((0, 100, 400), (60, 100, 400)),
            Ownership.UNOWNED,
            Status.OK,
            engine_wording.reason_few_samples(2, 3),
            300,
            now=60.0,
        ),
        id="12-too-few-samples-for-stop",
    ),
    # 13 Nothing committed (the collector turns Kafka's -1 / -1001 "no offset" into None). The lag is unknown,
    #    None, never log_end - (-1001); nothing can be judged, so OK "no committed offset". Production is
    #    still measured: 200 messages in 20 s = 10.0 msg/s; consumption and lag in seconds are unknown.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, None, 100), (10, None, 200), (20, None, 300)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_no_commit(),
            None,
            now=20.0,
            extra={
                "committed": None,
                "lag_seconds": None,
                "lag_seconds_lower_bound": False,
                "produce_rate": 10.0,
                "consume_rate": None,
            },
        ),
        id="13-no-committed-offset",
    ),
    # 14 Nothing committed in a deleted group: still OK "no committed offset", never STOP: STOP is about a
    #    committed offset that stopped moving, and there is none.
    pytest.param(
        StatusCase(
            DELETED,
            w((0, None, 100), (10, None, 200), (20, None, 300)),
            Ownership.UNOWNED,
            Status.OK,
            engine_wording.reason_no_commit(),
            None,
            now=20.0,
        ),
        id="14-no-committed-offset-unowned",
    ),
    # 15 The committed offset appears mid-window: 4 samples, but only the last 2 carry an offset, and the rules
    #    count committed samples. OK, "2 of 3 samples", lag 500 - 100 = 400.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, None, 500), (10, None, 500), (20, 100, 500), (30, 100, 500)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_few_samples(2, 3),
            400,
        ),
        id="15-commit-appears-mid-window-few",
    ),
    # 16 The committed offset appears at t=10 and stays 100 through t=40 while lag is 400: 4 committed samples
    #    over 30 s, unmoved, never at the log end (100 < 500): STALL. The reason says 30 s, the span of the
    #    committed samples, not the 40 s of the window: at t=0 there was no offset, so only 30 s without a
    #    commit are proven. [Before the fix in rule_stall it said 40 s.]
    pytest.param(
        StatusCase(
            OWNED,
            w((0, None, 500), (10, 100, 500), (20, 100, 500), (30, 100, 500), (40, 100, 500)),
            Ownership.OWNED,
            Status.STALL,
            engine_wording.reason_stall(400, 30.0, messages.owned()),
            400,
            now=40.0,
        ),
        id="16-commit-appears-mid-window-stall",
    ),
    # 17 REWIND: committed 500 -> 300, then progressing 350, 400. Consumption afterwards does not undo the
    #    rewind: REWIND names the step 500 -> 300; lag 1000 - 400 = 600. The consume rate is measured after the
    #    rewind only: 300 -> 400 in 20 s = 5.0 msg/s.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 500, 1000), (10, 300, 1000), (20, 350, 1000), (30, 400, 1000)),
            Ownership.OWNED,
            Status.REWIND,
            engine_wording.reason_rewind(500, 300),
            600,
            extra={"consume_rate": 5.0, "produce_rate": 0.0},
        ),
        id="17-rewind-then-progressing",
    ),
    # 18 REWIND is a fact seen in one step, not a trend: 2 samples are enough (no min_samples), 500 -> 100.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 500, 1000), (10, 100, 1000)),
            Ownership.OWNED,
            Status.REWIND,
            engine_wording.reason_rewind(500, 100),
            900,
            now=10.0,
        ),
        id="18-rewind-needs-no-history",
    ),
    # 19 Two rewinds, 500 -> 300 and 400 -> 200: the reason names the first (rewind_in scans oldest first).
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 500, 1000), (10, 300, 1000), (20, 400, 1000), (30, 200, 1000)),
            Ownership.OWNED,
            Status.REWIND,
            engine_wording.reason_rewind(500, 300),
            800,
        ),
        id="19-two-rewinds-first-named",
    ),
    # 20 STALL, owned: W_STUCK in a Stable group whose member owns the partition. Unmoved for 30 s with lag
    #    450: STALL. Lag also never decreased and grew (300 -> 450), so WARN would fire too: STALL wins, being
    #    worse and checked first.
    pytest.param(
        StatusCase(
            OWNED,
            W_STUCK,
            Ownership.OWNED,
            Status.STALL,
            engine_wording.reason_stall(450, 30.0, messages.owned()),
            450,
            shadows=(Status.WARN,),
            extra={"produce_rate": 5.0, "consume_rate": 0.0},
        ),
        id="20-stall-owned",
    ),
    # 21 STALL exactly at the limits: 3 committed samples spanning exactly 10 s (both bounds are inclusive).
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 400), (5, 100, 400), (10, 100, 400)),
            Ownership.OWNED,
            Status.STALL,
            engine_wording.reason_stall(300, 10.0, messages.owned()),
            300,
            now=10.0,
        ),
        id="21-stall-at-min-samples-and-span",
    ),
    # 22 STALL with unknown owners: a Stable group that reports no members. The group is live, so nobody can
    #    say the partition is abandoned (not STOP), but its offset is stuck: STALL.
    pytest.param(
        StatusCase(
            NO_MEMBERS,
            W_STUCK,
            Ownership.UNKNOWN,
            Status.STALL,
            engine_wording.reason_stall(450, 30.0, engine_wording.owner_unknown()),
            450,
            shadows=(Status.WARN,),
        ),
        id="22-stall-owner-unknown",
    ),
    # 23 A rebalancing group is live (PreparingRebalance is active) and its member still lists the partition:
    #    owned, so STALL, not STOP.
    pytest.param(
        StatusCase(
            REBALANCING,
            W_STUCK,
            Ownership.OWNED,
            Status.STALL,
            engine_wording.reason_stall(450, 30.0, messages.owned()),
            450,
        ),
        id="23-stall-rebalancing-group",
    ),
    # 24 STOP: the very window of case 20 (W_STUCK) in an Empty group. Nobody owns the partition and its offset
    #    did not move for 30 s while 450 messages wait: the consumer is gone. Same window, owned -> STALL,
    #    unowned -> STOP. WARN would also fire; STOP is worse and checked first.
    pytest.param(
        StatusCase(
            EMPTY,
            W_STUCK,
            Ownership.UNOWNED,
            Status.STOP,
            engine_wording.reason_stop(450, 30.0, engine_wording.nobody_owns()),
            450,
            shadows=(Status.WARN,),
        ),
        id="24-stop-empty-group",
    ),
    # 25 STOP in a Stable group whose only member owns another partition: this one is unassigned.
    pytest.param(
        StatusCase(
            UNASSIGNED,
            W_STUCK,
            Ownership.UNOWNED,
            Status.STOP,
            engine_wording.reason_stop(450, 30.0, engine_wording.nobody_owns()),
            450,
        ),
        id="25-stop-unassigned-partition",
    ),
    # 26 STOP for a deleted group: ownership_of(None, tp) is UNOWNED (no group, no owner), offsets still stored.
    pytest.param(
        StatusCase(
            DELETED,
            W_STUCK,
            Ownership.UNOWNED,
            Status.STOP,
            engine_wording.reason_stop(450, 30.0, engine_wording.nobody_owns()),
            450,
        ),
        id="26-stop-deleted-group",
    ),
    # 27 STOP after a short grace, not a window: the consumer committed 100 -> 200 -> 300 and left at t=20 (Empty
    #    group). The offset has been still for the last 3 committed samples (t=20, 30, 40), 20 s: the grace of
    #    `min_samples` samples spanning `min_span` is met, nobody owns the partition and 200 messages wait, so STOP
    #    now, not once t=10 leaves the window (a bot's window is 30 checks: half an hour late). Burrow, which does not
    #    know owners, waits until the time since the last commit (20 s) exceeds the span of the commits (20 s): OK
    #    here, STOP one commit interval later; lagbot knows nobody reads the partition.
    pytest.param(
        StatusCase(
            EMPTY,
            w((0, 100, 500), (10, 200, 500), (20, 300, 500), (30, 300, 500), (40, 300, 500)),
            Ownership.UNOWNED,
            Status.STOP,
            engine_wording.reason_stop(200, 20.0, engine_wording.nobody_owns()),
            200,
            now=40.0,
        ),
        id="27-stop-after-a-short-grace",
    ),
    # 28 An Empty group whose offset was reset backwards (kafka-consumer-groups --reset-offsets only works on
    #    an inactive group), 500 -> 100, and has not moved since. REWIND, not STOP: STOP says the offset did not
    #    move over the whole window, which the rewind contradicts, so the two can never fire on one window.
    #    "STOP beats REWIND" is therefore a group-level matter (STOP > REWIND in Status): see G02.
    pytest.param(
        StatusCase(
            EMPTY,
            w((0, 500, 1000), (10, 500, 1000), (20, 100, 1000), (30, 100, 1000), (40, 100, 1000)),
            Ownership.UNOWNED,
            Status.REWIND,
            engine_wording.reason_rewind(500, 100),
            900,
            now=40.0,
        ),
        id="28-unowned-rewind-is-not-stop",
    ),
    # 29 Both REWIND and WARN: committed 500 -> 300 (rewind), then lag 100, 350, 380, 410 never decreases and
    #    grows. REWIND is worse and checked first.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 500, 600), (10, 300, 650), (20, 320, 700), (30, 340, 750)),
            Ownership.OWNED,
            Status.REWIND,
            engine_wording.reason_rewind(500, 300),
            410,
            shadows=(Status.WARN,),
        ),
        id="29-rewind-beats-warn",
    ),
    # 30 WARN: the consumer moves (100 -> 250) but slower than the producer (400 -> 700), so lag 300, 350,
    #    400, 450 never decreases and ends higher; it never reached zero. WARN, 300 -> 450 over 30 s.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 400), (10, 150, 500), (20, 200, 600), (30, 250, 700)),
            Ownership.OWNED,
            Status.WARN,
            engine_wording.reason_warn(300, 450, 30.0),
            450,
            extra={"produce_rate": 10.0, "consume_rate": 5.0},
        ),
        id="30-warn-lag-growing",
    ),
    # 31 WARN with a plateau: lag 300, 300, 350, 400. "Never decreased" allows equal steps; it ended higher.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 400), (10, 200, 500), (20, 300, 650), (30, 400, 800)),
            Ownership.OWNED,
            Status.WARN,
            engine_wording.reason_warn(300, 400, 30.0),
            400,
        ),
        id="31-warn-with-plateau",
    ),
    # 32 Constant lag, consumer keeping pace: both offsets advance 100 per 10 s, lag 1000 throughout. Never
    #    decreasing, but not growing: OK (Burrow would WARN here forever; lagbot requires growth). The consumer
    #    never reached the oldest log end (400 < 1100): "consuming".
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 1100), (10, 200, 1200), (20, 300, 1300), (30, 400, 1400)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_ok_moving(),
            1000,
            extra={"produce_rate": 10.0, "consume_rate": 10.0},
        ),
        id="32-constant-lag-keeping-pace",
    ),
    # 33 Same pace but a smaller in-flight lag (300): by t=30 the consumer has committed 400, the log end at
    #    t=0, so it has read everything that existed when the window opened. Still OK; the reason is the generic
    #    one: the guard (and its reason) reads only the recent samples, t=10, 20, 30, whose log ends it has not
    #    reached.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 400), (10, 200, 500), (20, 300, 600), (30, 400, 700)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_ok_moving(),
            300,
        ),
        id="33-keeping-pace-past-window-start",
    ),
    # 34 Lag decreasing 900, 750, 600, 450: the consumer (750 in 30 s = 25 msg/s) outpaces the producer
    #    (300 in 30 s = 10 msg/s). OK; it never reached the oldest log end (850 < 1000): "consuming".
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 1000), (10, 350, 1100), (20, 600, 1200), (30, 850, 1300)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_ok_moving(),
            450,
            extra={"produce_rate": 10.0, "consume_rate": 25.0},
        ),
        id="34-lag-decreasing",
    ),
    # 35 Lag 300, 400, 350, 500: growing overall, but it decreased once (400 -> 350), and one decrease is
    #    enough to clear WARN (as in Burrow). The offset moved, so no STALL. OK.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 400), (10, 100, 500), (20, 250, 600), (30, 300, 800)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_ok_moving(),
            500,
        ),
        id="35-one-decrease-clears-warn",
    ),
    # 36 Fewer than 3 samples leave WARN unjudged too: lag 300 -> 350 with the consumer moving: OK, "2 of 3".
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 400), (10, 150, 500)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_few_samples(2, 3),
            350,
            now=10.0,
        ),
        id="36-warn-needs-three-samples",
    ),
    # 37 min_span gates STALL and STOP only (config.Evaluation documents it so): the short window of case 10
    #    with a growing log end (lag 300, 350, 400 over 9 s) is a WARN, not a STALL. (9 s: the oldest unread message
    #    is older than the window, so at least 9 s old, more than `quiet_seconds`.)
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 400), (4.5, 100, 450), (9, 100, 500)),
            Ownership.OWNED,
            Status.WARN,
            engine_wording.reason_warn(300, 400, 9.0),
            400,
            now=9.0,
        ),
        id="37-short-span-can-warn",
    ),
    # 38 Committed ahead of the log end (1200 > 1000, e.g. a log truncated on an unclean leader election): lag
    #    is clamped to 0, never negative: OK "caught up".
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 1200, 1000), (10, 1200, 1000), (20, 1200, 1000)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_caught_up(),
            0,
            now=20.0,
            extra={"lag_seconds": 0.0},
        ),
        id="38-committed-past-log-end",
    ),
    # 39 Topic deleted and recreated between t=10 and t=20: the log end falls 1100 -> 10, and the consumer,
    #    reset to the new log's start, commits 0 then 5. The committed step 950 -> 0 is a REWIND (it is one);
    #    lag 20 - 5 = 15. The produce rate over a log end that went backwards means nothing: None. The consume
    #    rate is measured after the rewind: 0 -> 5 in 10 s = 0.5. Message 5 was already written at t=20 (log
    #    end 10) in the new log: at least 30 - 20 = 10 s old, a lower bound (t=0 belongs to the old log).
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 900, 1000), (10, 950, 1100), (20, 0, 10), (30, 5, 20)),
            Ownership.OWNED,
            Status.REWIND,
            engine_wording.reason_rewind(950, 0),
            15,
            extra={"produce_rate": None, "consume_rate": 0.5, "lag_seconds": 10.0, "lag_seconds_lower_bound": True},
        ),
        id="39-topic-recreated",
    ),  # 40 The other half of the guard, zero lag inside the window, matters when the log end falls: committed 50
    #    never moves; the topic is recreated after t=0 (log end 100 -> 10), so at t=10 and t=20 the consumer is
    #    at or past the new log end (lag 0), then 80 - 50 = 30 messages arrive. 50 < 100 (the oldest log end),
    #    but the lag was 0 inside the window: not STALL, and not WARN (Burrow's rule 1). OK; no produce rate
    #    over a log end that went backwards.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 50, 100), (10, 50, 10), (20, 50, 20), (30, 50, 80)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_caught_up_in_window(),
            30,
            extra={"produce_rate": None, "consume_rate": 0.0},
        ),
        id="40-zero-lag-after-log-end-fell",
    ),
    # 41 Rewind recovery (Burrow's checkIfRewindRecovered): a rebalance made the consumer commit an old offset,
    #    300 -> 200, and it came back past 300 (350) by t=20. The rewind no longer counts: lag 100 fell from 200,
    #    the offset moves: OK. Before, lagbot said REWIND "from 300 to 200" for as long as the step was in its window.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 300, 400), (10, 200, 400), (20, 350, 450)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_ok_moving(),
            100,
            now=20.0,
            extra={"consume_rate": 15.0},
        ),
        id="41-rewind-recovered",
    ),
    # 42 The same rewind, not yet recovered: 200 -> 250 is still short of 300: REWIND from 300 to 200.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 300, 400), (10, 200, 400), (20, 250, 450)),
            Ownership.OWNED,
            Status.REWIND,
            engine_wording.reason_rewind(300, 200),
            200,
            now=20.0,
        ),
        id="42-rewind-not-recovered-yet",
    ),
    # 43 A stopped consumer behind an old zero lag (Burrow #290): committed 1000 never moves while the log end grows
    #    1000 -> 2800 over 1800 s, samples 600 s apart; the lag was 0 only at the first sample. The guard looks only
    #    at the recent samples (the last `min_samples`: t=600, 1200, 1800), where the consumer never reached the
    #    log end: STALL, 1800 waiting, still for 1800 s. Before, the old zero lag made it OK "caught up to the log end
    #    within the window" until t=0 left the window.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 1000, 1000), (600, 1000, 1600), (1200, 1000, 2200), (1800, 1000, 2800)),
            Ownership.OWNED,
            Status.STALL,
            engine_wording.reason_stall(1800, 1800.0, messages.owned()),
            1800,
            now=1800.0,
        ),
        id="43-stopped-behind-an-old-zero-lag",
    ),
    # 44 The window of 43 in an Empty group: STOP (Burrow's answer for both: it does not know owners).
    pytest.param(
        StatusCase(
            EMPTY,
            w((0, 1000, 1000), (600, 1000, 1600), (1200, 1000, 2200), (1800, 1000, 2800)),
            Ownership.UNOWNED,
            Status.STOP,
            engine_wording.reason_stop(1800, 1800.0, engine_wording.nobody_owns()),
            1800,
            now=1800.0,
        ),
        id="44-stopped-behind-an-old-zero-lag-unowned",
    ),
    # 45 No members and messages waiting: an Empty group whose offset moved early in the window (100 -> 900) and has
    #    been still since t=20 while 2,921 messages wait. Before: "OK, consuming". Now STOP after the grace (3
    #    samples, 20 s), which the group's `no_active_members` cause agrees with.
    pytest.param(
        StatusCase(
            EMPTY,
            w((0, 100, 3000), (10, 500, 3200), (20, 900, 3400), (30, 900, 3600), (40, 900, 3821)),
            Ownership.UNOWNED,
            Status.STOP,
            engine_wording.reason_stop(2921, 20.0, engine_wording.nobody_owns()),
            2921,
            now=40.0,
        ),
        id="45-no-members-stopped-after-moving",
    ),
    # 46 A read_committed consumer fully caught up on a transactional topic: the producer's commit marker takes the
    #    last offset, which the consumer never reads, so lag 1 forever and the offset never moves. Caught up: OK, no
    #    STALL (before: STALL, and a restart button, on a healthy group).
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 500, 501), (5, 500, 501), (10, 500, 501), (15, 500, 501)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_caught_up_marker(),
            1,
            now=15.0,
        ),
        id="46-transaction-marker-is-caught-up",
    ),
    # 47 A consumer keeping up with 20 msg/s, committing every batch: lag 4, 6, 8, 9 rose at every sample (where it
    #    was sampled between commits). Lag 9 is not more than `quiet_lag` (10) and half a second old: OK. Before: WARN,
    #    then hot_partition -> drain and throughput_deficit -> scale for 9 messages.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 104), (5, 200, 206), (10, 300, 308), (15, 400, 409)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_caught_up_in_window(),
            9,
            now=15.0,
        ),
        id="47-healthy-jitter-in-messages",
    ),
    # 48 2,000 msg/s with auto-commit every 5.0 s, sampled every 5.3 s: each sample falls 0.3 s later after a commit,
    #    so the lag rises 2,000, 2,600, 3,200, 3,800 and never falls. But the oldest unread message is 1.9 s old
    #    (message 30,000 was written at t=14.0): not more than `quiet_seconds` (8 s, above auto-commit's 5 s cadence).
    #    OK; it read past the log end of the recent samples.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 0, 2000), (5.3, 10000, 12600), (10.6, 20000, 23200), (15.9, 30000, 33800)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_caught_up_in_window(),
            3800,
            now=15.9,
        ),
        id="48-healthy-jitter-in-seconds",
    ),
    # 49 A rising lag that is old: the consumer commits slower than the producer writes (lag 300, 350, 400, 450), and
    #    its oldest unread message is older than the whole window (at least 30 s): WARN, as case 30.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 400), (10, 150, 500), (20, 200, 600), (30, 250, 700)),
            Ownership.OWNED,
            Status.WARN,
            engine_wording.reason_warn(300, 450, 30.0),
            450,
        ),
        id="49-behind-in-messages-and-seconds-warns",
    ),
    # 50 An owned partition whose consumer stopped committing mid-window, for longer than it committed before
    #    (Burrow's checkIfOffsetsStopped): committed 100, 200, then 300 from t=20 to t=60 (40 s still > 20 s moving)
    #    while 200 -> 600 messages wait: STALL, still for 40 s. (Still for 20 s of a 40 s window, as case 27's
    #    window owned, it is not yet: equal is not greater.)
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 500), (10, 200, 500), (20, 300, 500), (30, 300, 600), (40, 300, 700), (60, 300, 900)),
            Ownership.OWNED,
            Status.STALL,
            engine_wording.reason_stall(600, 40.0, messages.owned()),
            600,
            now=60.0,
        ),
        id="50-stall-after-moving",
    ),
    # 51 Case 27's window, owned: still for 20 s after moving for 20 s. Not STALL yet (equal is not greater, as in
    #    Burrow's case 1): a live consumer may be in a long batch.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 100, 500), (10, 200, 500), (20, 300, 500), (30, 300, 500), (40, 300, 500)),
            Ownership.OWNED,
            Status.OK,
            engine_wording.reason_ok_moving(),
            200,
            now=40.0,
        ),
        id="51-still-as-long-as-moving-is-not-stall",
    ),
    # 52 A deficit too young for its seconds: written at 60 msg/s, read at 20, lag 30, 150, 270, 390 over 9 s. The
    #    oldest unread message is 6.5 s old (under `quiet_seconds`), but the lag rose at every step by 360, more than
    #    the 300 messages written in 5 s (auto-commit's cadence): no commit jitter explains it. WARN.
    pytest.param(
        StatusCase(
            OWNED,
            w((0, 1000, 1030), (3, 1060, 1210), (6, 1120, 1390), (9, 1180, 1570)),
            Ownership.OWNED,
            Status.WARN,
            engine_wording.reason_warn(30, 390, 9.0),
            390,
            now=9.0,
            extra={"lag_seconds": 6.5},
        ),
        id="52-deficit-outgrows-commit-jitter",
    ),
]


SHADOW_RULES: dict[Status, Callable[[StatusCase], object]] = {
    Status.STOP: lambda c: rule_stop(c.samples, c.ownership, RULES),
    Status.REWIND: lambda c: rule_rewind(c.samples),
    Status.STALL: lambda c: rule_stall(c.samples, c.ownership, RULES),
    Status.WARN: lambda c: rule_warn(c.samples, RULES),
}


@pytest.mark.parametrize("case", STATUS_CASES)
def test_partition_status(case: StatusCase) -> None:
    ownership, owner = ownership_of(case.group, TP)
    assert ownership is case.ownership
    assert owner == (ME if ownership is Ownership.OWNED else None)

    verdict, by_arrays = both_routes(case.samples, case.group, case.now)
    assert by_arrays == verdict

    assert (verdict.status, verdict.reason) == (case.status, case.reason)
    assert verdict.lag == case.lag
    assert verdict.committed == case.samples[-1].committed
    assert verdict.log_end == case.samples[-1].log_end
    assert verdict.owner == owner
    assert verdict.tp == TP
    for name, expected in case.extra.items():
        actual = getattr(verdict, name)
        if isinstance(expected, float):
            assert actual == pytest.approx(expected), name
        else:
            assert actual == expected, name
    for shadowed in case.shadows:
        assert shadowed < case.status or case.status is Status.OK, "a shadowed rule ranks below the answer"
        found = SHADOW_RULES[shadowed](case)
        assert found is not None and found[0] is shadowed, f"{shadowed.name} should also fire on this window"


def test_status_order_matches_rule_order() -> None:
    # The rules are checked STOP, REWIND, STALL, WARN; the group status is the max of its partitions', so the
    # enum must rank them the same way, with ERR (unreadable) above all and OK below all.
    assert Status.OK < Status.WARN < Status.STALL < Status.REWIND < Status.STOP < Status.ERR


# ===================================================================================================
# L01-..: lag_seconds
# ===================================================================================================

LAG_SECONDS_CASES = [
    # L01 Caught up (committed == newest log end): 0 s, exact, even with a single sample.
    pytest.param(w((0, 1200, 1200)), 100.0, (0.0, False), id="L01-caught-up"),
    # L02 Committed past the log end: also caught up, 0 s (never negative).
    pytest.param(w((0, 1300, 1200), (10, 1300, 1200)), 20.0, (0.0, False), id="L02-committed-past-log-end"),
    # L03 Behind with one sample: a table of one (time, log end) point cannot place message 1000 in time: None.
    pytest.param(w((0, 1000, 1200)), 10.0, (None, False), id="L03-one-sample-behind"),
    # L04 Nothing committed: None however long the window.
    pytest.param(w((0, None, 1000), (10, None, 1100), (20, None, 1200)), 30.0, (None, False), id="L04-no-commit"),
    # L05 Committed 1050, halfway between the log ends 1000 (t=0) and 1100 (t=10): the log end passed 1050 at
    #     t=5 by linear interpolation, so at now=30 the consumer is 25 s behind.
    pytest.param(
        w((0, 1050, 1000), (10, 1050, 1100), (20, 1050, 1200)), 30.0, (25.0, False), id="L05-interpolated-halfway"
    ),
    # L06 Committed 1175, three quarters of the way from 1100 (t=10) to 1200 (t=20): t=17.5, 12.5 s before 30.
    pytest.param(
        w((0, 1175, 1000), (10, 1175, 1100), (20, 1175, 1200)), 30.0, (12.5, False), id="L06-interpolated-3-4"
    ),
    # L07 Committed exactly at a sample's log end, 1100 at t=10: the log end stood at the consumer's position at
    #     t=10, so 30 - 10 = 20 s.
    pytest.param(
        w((0, 1100, 1000), (10, 1100, 1100), (20, 1100, 1200)), 30.0, (20.0, False), id="L07-at-a-sample-log-end"
    ),
    # L08 A flat stretch: the log end is 1100 at t=10 and still at t=20. The latest time it stood at 1100 is
    #     t=20 (message 1100 did not exist before), so 40 - 20 = 20 s, not 30.
    pytest.param(
        w((0, 1100, 1000), (10, 1100, 1100), (20, 1100, 1100), (30, 1100, 1200)),
        40.0,
        (20.0, False),
        id="L08-flat-stretch-takes-latest",
    ),
    # L09 Committed exactly at the oldest log end (1000 at t=0): still inside the table, so exact: 30 s.
    pytest.param(
        w((0, 1000, 1000), (10, 1000, 1100), (20, 1000, 1200)), 30.0, (30.0, False), id="L09-at-oldest-log-end"
    ),
    # L10 Committed 500, older than the whole window (oldest log end 1000): the message was written before
    #     t=0, so it is at least now - 0 = 30 s old; flagged as a lower bound rather than extrapolated.
    pytest.param(w((0, 500, 1000), (10, 500, 1100), (20, 500, 1200)), 30.0, (30.0, True), id="L10-older-than-window"),
    # L11 `now` is an argument, later than the newest sample: the L05 window judged at now=90 is 90 - 5 = 85 s.
    pytest.param(
        w((0, 1050, 1000), (10, 1050, 1100), (20, 1050, 1200)), 90.0, (85.0, False), id="L11-now-after-last-sample"
    ),
    # L12 Idle topic, consumer behind: the log end is 1000 at every sample, committed 900. Message 900 was
    #     written before the window; the rate is 0, so there is nothing to extrapolate: at least 120 s.
    pytest.param(
        w((0, 900, 1000), (60, 900, 1000), (120, 900, 1000)), 120.0, (120.0, True), id="L12-idle-topic-behind"
    ),
    # L13 The committed offset appears only in the newest sample: the (time, log end) table is the broker's and
    #     does not depend on it, so 1050 still interpolates to t=5: 25 s at now=30.
    pytest.param(
        w((0, None, 1000), (10, None, 1100), (20, 1050, 1200)), 30.0, (25.0, False), id="L13-commit-appears-late"
    ),
    # L14 Topic recreated between t=10 and t=20 (log end 1100 -> 10). Committed 5 is below the new log's oldest
    #     seen end (10 at t=20): written by t=20, so at least 30 - 20 = 10 s. The old log's t=0 must not be used:
    #     it would claim "at least 30 s" for a message that did not exist before t=10. [Fixed in lag_seconds.]
    pytest.param(
        w((0, 900, 1000), (10, 950, 1100), (20, 0, 10), (30, 5, 20)), 30.0, (10.0, True), id="L14-recreated-bound"
    ),
    # L15 Recreated topic, committed 20 between the new log ends 10 (t=20) and 30 (t=30): t=25, 5 s at now=30.
    pytest.param(
        w((0, 900, 1000), (10, 950, 1100), (20, 0, 10), (30, 20, 30)), 30.0, (5.0, False), id="L15-recreated-interp"
    ),
    # L16 Recreated, with a single sample of the new log: committed 5 < 10 was written by t=20, at least 10 s
    #     (the three-sample window is not "fewer than two samples", but only one belongs to the new log).
    pytest.param(w((0, 900, 1000), (10, 950, 1100), (20, 5, 10)), 30.0, (10.0, True), id="L16-recreated-one-sample"),
]


@pytest.mark.parametrize(("samples", "now", "expected"), LAG_SECONDS_CASES)
def test_lag_seconds(samples: tuple[PartitionSample, ...], now: float, expected: tuple[float | None, bool]) -> None:
    value, lower_bound = lag_seconds(samples, now)
    for verdict in both_routes(samples, OWNED, now):
        assert (verdict.lag_seconds, verdict.lag_seconds_lower_bound) == (value, lower_bound)
    assert lower_bound is expected[1]
    if expected[0] is None:
        assert value is None
    else:
        assert value == pytest.approx(expected[0])


# ===================================================================================================
# P01-.., C01-.., E01-..: rates and ETA
# ===================================================================================================

PRODUCE_CASES = [
    # P01 Log end 1000 -> 1600 over 60 s: 10.0 msg/s.
    pytest.param(w((0, 0, 1000), (30, 0, 1300), (60, 0, 1600)), 10.0, id="P01-steady"),
    # P02 One sample: no elapsed time, None.
    pytest.param(w((0, 0, 1000)), None, id="P02-one-sample"),
    # P03 Two samples at the same instant: division by a zero span is refused, None.
    pytest.param(w((10, 0, 1000), (10, 0, 1100)), None, id="P03-zero-span"),
    # P04 Log end went backwards (topic recreated): no meaningful rate, None.
    pytest.param(w((0, 0, 1000), (10, 0, 1100), (20, 0, 10)), None, id="P04-log-end-backwards"),
    # P05 Recreated, and the new log has already outgrown the old end (1100 -> 10 -> 2000). First to last
    #     says +1000 in 30 s, which is meaningless (the new log took 1990 messages in at most 20 s): None.
    #     [Before the fix in produce_rate this was 33.3.]
    pytest.param(w((0, 0, 1000), (10, 0, 1100), (20, 0, 10), (30, 0, 2000)), None, id="P05-backwards-then-past"),
    # P06 Idle topic: 0.0, a known rate, not None.
    pytest.param(w((0, 0, 1000), (10, 0, 1000), (20, 0, 1000)), 0.0, id="P06-idle"),
    # P07 Production does not depend on the consumer: nothing committed, still 200 in 20 s = 10.0.
    pytest.param(w((0, None, 100), (20, None, 300)), 10.0, id="P07-no-commit-needed"),
]


@pytest.mark.parametrize(("samples", "expected"), PRODUCE_CASES)
def test_produce_rate(samples: tuple[PartitionSample, ...], expected: float | None) -> None:
    assert produce_rate(samples) == (None if expected is None else pytest.approx(expected))
    for verdict in both_routes(samples, OWNED, samples[-1].at):
        assert verdict.produce_rate == produce_rate(samples)


CONSUME_CASES = [
    # C01 Committed 100 -> 400 over 30 s: 10.0 msg/s.
    pytest.param(w((0, 100, 1000), (10, 200, 1000), (20, 300, 1000), (30, 400, 1000)), 10.0, id="C01-steady"),
    # C02 The offset appears at t=10: measured over the committed samples only, 100 -> 300 in 20 s = 10.0.
    pytest.param(w((0, None, 1000), (10, 100, 1000), (30, 300, 1000)), 10.0, id="C02-commit-appears-late"),
    # C03 Rewind 600 -> 100 at t=20, then 100 -> 160 by t=40: a rewind is not consumption, so 60 / 20 = 3.0.
    pytest.param(
        w((0, 500, 1000), (10, 600, 1000), (20, 100, 1000), (30, 130, 1000), (40, 160, 1000)), 3.0, id="C03-rewind"
    ),
    # C04 Rewind at the newest step: nothing measured since, None.
    pytest.param(w((0, 500, 1000), (10, 600, 1000), (20, 100, 1000)), None, id="C04-rewind-at-the-end"),
    # C05 Two rewinds (500 -> 100, 200 -> 50): measured after the last, 50 -> 80 in 10 s = 3.0.
    pytest.param(
        w((0, 500, 1000), (10, 100, 1000), (20, 200, 1000), (30, 50, 1000), (40, 80, 1000)), 3.0, id="C05-two-rewinds"
    ),
    # C06 Nothing committed: None.
    pytest.param(w((0, None, 1000), (10, None, 1100)), None, id="C06-no-commit"),
    # C07 Unmoved offset: 0.0, a known rate.
    pytest.param(w((0, 100, 1000), (10, 100, 1100), (20, 100, 1200)), 0.0, id="C07-unmoved"),
    # C08 Two committed samples at the same instant: zero span, None.
    pytest.param(w((10, 100, 1000), (10, 200, 1000)), None, id="C08-zero-span"),
]


@pytest.mark.parametrize(("samples", "expected"), CONSUME_CASES)
def test_consume_rate(samples: tuple[PartitionSample, ...], expected: float | None) -> None:
    assert consume_rate(samples) == (None if expected is None else pytest.approx(expected))
    for verdict in both_routes(samples, OWNED, samples[-1].at):
        assert verdict.consume_rate == consume_rate(samples)


ETA_CASES = [
    # E01 1000 behind, net drain 30 - 10 = 20 msg/s: 50 s.
    pytest.param(1000, 10.0, 30.0, 50.0, id="E01-draining"),
    # E02 No lag: 0 s, whatever the rates (even unknown).
    pytest.param(0, None, None, 0.0, id="E02-no-lag"),
    # E03 Lag unknown: None.
    pytest.param(None, 10.0, 30.0, None, id="E03-lag-unknown"),
    # E04 Consumers exactly keep pace: the lag never shrinks, None (never).
    pytest.param(1000, 10.0, 10.0, None, id="E04-keeping-pace-never"),
    # E05 Consumers slower than producers: None (never).
    pytest.param(1000, 30.0, 10.0, None, id="E05-falling-behind-never"),
    # E06 Produce rate unknown: None.
    pytest.param(1000, None, 30.0, None, id="E06-produce-unknown"),
    # E07 Consume rate unknown: None.
    pytest.param(1000, 10.0, None, None, id="E07-consume-unknown"),
    # E08 Idle topic, consumer draining at 4 msg/s: 100 / 4 = 25 s.
    pytest.param(100, 0.0, 4.0, 25.0, id="E08-idle-topic-draining"),
]


@pytest.mark.parametrize(("lag", "produce", "consume", "expected"), ETA_CASES)
def test_eta_seconds(lag: int | None, produce: float | None, consume: float | None, expected: float | None) -> None:
    assert eta_seconds(lag, produce, consume) == (None if expected is None else pytest.approx(expected))


# ===================================================================================================
# V01-..: severity, F01-..: level_fires
# ===================================================================================================


def pts(*rows: tuple[float, int | None] | tuple[float, int | None, float | None]) -> list[GroupPoint]:
    """Group points from (at, lag) or (at, lag, lag_seconds)."""
    return [GroupPoint(at=r[0], lag=r[1], lag_seconds=r[2] if len(r) == 3 else None) for r in rows]


def every_minute(*lags: int, start: float = 0.0) -> list[GroupPoint]:
    return pts(*((start + 60.0 * i, lag) for i, lag in enumerate(lags)))


SECONDS_WARN = Thresholds(warn=Level(messages=50_000, seconds=600, sustained_for=120))
"""Warn on 50,000 messages OR 600 s behind, held 2 min; critical and page as by default."""

SEVERITY_CASES = [
    # V01 No points at all: nothing to judge, OK "under every threshold".
    pytest.param([], DEFAULTS, 0.0, Severity.OK, engine_wording.severity_ok(), id="V01-no-points"),
    # V02 The newest total lag is unknown: levels judge the current lag, so none can fire, even though an older
    #     point was over the page limit (that lag is stale).
    pytest.param(
        pts((0, 3_000_000), (60, None)),
        DEFAULTS,
        60.0,
        Severity.OK,
        engine_wording.severity_ok(),
        id="V02-newest-unknown",
    ),
    # V03 Lag 40k -> 49k: under warn's 50,000, and under doubling's 50,000 minimum: OK.
    pytest.param(
        every_minute(40_000, 45_000, 49_000),
        DEFAULTS,
        120.0,
        Severity.OK,
        engine_wording.severity_ok(),
        id="V03-under-all",
    ),
    # V04 WARN: over 50,000 at every point from t=0 to t=300 (held 300 s = sustained_for) and growing over those
    #     300 s (60k -> 90k). Not critical: 90k < 500k and 90k < 2 x 60k (no doubling).
    pytest.param(
        every_minute(60_000, 66_000, 72_000, 78_000, 84_000, 90_000),
        DEFAULTS,
        300.0,
        Severity.WARN,
        engine_wording.severity_messages("warn", 90_000, 50_000, 300.0),
        id="V04-warn-fires",
    ),
    # V05 Warn pending: over 50,000 only from t=60 (45k at t=0), so held 240 s < 300 s: OK, with the pending
    #     reason. (45k -> 84k is not a doubling: 84k < 90k.)
    pytest.param(
        every_minute(45_000, 60_000, 66_000, 72_000, 78_000, 84_000),
        DEFAULTS,
        300.0,
        Severity.OK,
        engine_wording.severity_pending("warn", 240.0, 300.0),
        id="V05-warn-pending-held-short",
    ),
    # V06 Warn pending because the window is too short to prove 300 s: over at every point, but the points
    #     span only 240 s.
    pytest.param(
        every_minute(60_000, 66_000, 72_000, 78_000, 84_000),
        DEFAULTS,
        240.0,
        Severity.OK,
        engine_wording.severity_pending("warn", 240.0, 300.0),
        id="V06-warn-pending-window-short",
    ),
    # V07 Over 50,000 for 300 s but flat (80k throughout): warn needs growth, so it neither fires nor is
    #     pending: OK "under every threshold".
    pytest.param(
        every_minute(*[80_000] * 6),
        DEFAULTS,
        300.0,
        Severity.OK,
        engine_wording.severity_ok(),
        id="V07-warn-needs-growth",
    ),
    # V08 Over for 600 s, but it grew only before the last 300 s (60k -> 90k at t=60, then flat): growth is
    #     judged over the sustain period, so no warn.
    pytest.param(
        every_minute(60_000, *[90_000] * 10),
        DEFAULTS,
        600.0,
        Severity.OK,
        engine_wording.severity_ok(),
        id="V08-warn-growth-before-sustain",
    ),
    # V09 A dip under the limit restarts the clock: 49k at t=120, over again from t=180: held 120 s, pending.
    #     (No doubling: 95k < 2 x 49k = 98k.)
    pytest.param(
        every_minute(60_000, 70_000, 49_000, 80_000, 90_000, 95_000),
        DEFAULTS,
        300.0,
        Severity.OK,
        engine_wording.severity_pending("warn", 120.0, 300.0),
        id="V09-warn-dip-restarts-hold",
    ),
    # V10 CRITICAL over 500,000 fires immediately (sustained_for 0), from a single point.
    pytest.param(
        pts((0, 600_000)),
        DEFAULTS,
        0.0,
        Severity.CRITICAL,
        engine_wording.severity_messages("critical", 600_000, 500_000, 0.0),
        id="V10-critical-immediately",
    ),
    # V11 Exactly 500,000 is not over 500,000; it is flat, so warn is not growing either: OK.
    pytest.param(
        every_minute(500_000, 500_000, 500_000),
        DEFAULTS,
        120.0,
        Severity.OK,
        engine_wording.severity_ok(),
        id="V11-critical-limit-is-strict",
    ),
    # V12 CRITICAL by doubling: 30k at t=0 -> 60k at t=600, within the 600 s (bound inclusive) and 60k >= the
    #     50,000 minimum. Warn would not fire (over 50,000 only at the last point).
    pytest.param(
        pts((0, 30_000), (300, 45_000), (600, 60_000)),
        DEFAULTS,
        600.0,
        Severity.CRITICAL,
        engine_wording.severity_doubling("critical", 30_000, 60_000, 600.0),
        id="V12-critical-doubling",
    ),
    # V13 Doubled (20k -> 45k) but under the 50,000 minimum, so 10 -> 20 style noise is not critical: OK.
    pytest.param(
        pts((0, 20_000), (300, 45_000)),
        DEFAULTS,
        300.0,
        Severity.OK,
        engine_wording.severity_ok(),
        id="V13-doubling-small",
    ),
    # V14 Doubled from 30k, but 700 s ago: only points within 600 s of now count (40k at t=400: 60k < 80k).
    #     Warn is over at t=700 only, held 0 s, and grew 40k -> 60k over its 300 s: pending.
    pytest.param(
        pts((0, 30_000), (400, 40_000), (700, 60_000)),
        DEFAULTS,
        700.0,
        Severity.OK,
        engine_wording.severity_pending("warn", 0.0, 300.0),
        id="V14-doubling-too-slow",
    ),
    # V15 From 0 to 60k: "doubling" from zero is undefined (any lag would be infinite growth), so it is not
    #     critical; the 500,000 limit covers big jumps. Warn: over, held 0 s, growing: pending.
    pytest.param(
        pts((0, 0), (300, 60_000)),
        DEFAULTS,
        300.0,
        Severity.OK,
        engine_wording.severity_pending("warn", 0.0, 300.0),
        id="V15-doubling-from-zero",
    ),
    # V16 PAGE over 2,000,000, immediately. Page is checked first, so critical (also over) does not hide it.
    pytest.param(
        pts((0, 2_000_001)),
        DEFAULTS,
        0.0,
        Severity.PAGE,
        engine_wording.severity_messages("page", 2_000_001, 2_000_000, 0.0),
        id="V16-page",
    ),
    # V17 Exactly 2,000,000 is not over the page limit, but is over critical's 500,000: CRITICAL.
    pytest.param(
        pts((0, 2_000_000)),
        DEFAULTS,
        0.0,
        Severity.CRITICAL,
        engine_wording.severity_messages("critical", 2_000_000, 500_000, 0.0),
        id="V17-page-limit-is-strict",
    ),
    # V18 A seconds-based warn: 100 messages (far under 50,000) but 700, 800, 900 s behind from t=60 (500 s at
    #     t=0 is under 600): over by seconds for 180 - 60 = 120 s = sustained_for. Either limit is enough: WARN.
    pytest.param(
        pts((0, 100, 500.0), (60, 100, 700.0), (120, 100, 800.0), (180, 100, 900.0)),
        SECONDS_WARN,
        180.0,
        Severity.WARN,
        engine_wording.severity_seconds("warn", 900.0, 600.0, 120.0),
        id="V18-seconds-level-fires",
    ),
    # V19 The same, but 550 s at t=60: over only from t=120, held 60 s of 120: pending.
    pytest.param(
        pts((0, 100, 500.0), (60, 100, 550.0), (120, 100, 800.0), (180, 100, 900.0)),
        SECONDS_WARN,
        180.0,
        Severity.OK,
        engine_wording.severity_pending("warn", 60.0, 120.0),
        id="V19-seconds-level-pending",
    ),
    # V20 Lag in seconds unknown (None): the seconds limit cannot be over, and 100 messages are under: OK.
    pytest.param(
        pts((0, 100), (60, 100), (120, 100), (180, 100)),
        SECONDS_WARN,
        180.0,
        Severity.OK,
        engine_wording.severity_ok(),
        id="V20-seconds-unknown",
    ),
    # V21 When nothing fires, the highest pending level is reported: a custom page at 100,000 held 600 s is
    #     pending (over since t=60: 60 s), and so is warn (over 120 s, growing); page's reason wins. Critical:
    #     130k < 500k, and 130k < 2 x 90k (no doubling).
    pytest.param(
        pts((0, 90_000), (60, 120_000), (120, 130_000)),
        Thresholds(page=Level(messages=100_000, sustained_for=600)),
        120.0,
        Severity.OK,
        engine_wording.severity_pending("page", 60.0, 600.0),
        id="V21-highest-pending-reported",
    ),  # V22 Exactly 600 s behind is not over a 600 s limit (limits are strict, as for messages): OK.
    pytest.param(
        pts((0, 100, 600.0), (60, 100, 600.0), (120, 100, 600.0), (180, 100, 600.0)),
        SECONDS_WARN,
        180.0,
        Severity.OK,
        engine_wording.severity_ok(),
        id="V22-seconds-limit-is-strict",
    ),
]


@pytest.mark.parametrize(("points", "thresholds", "now", "expected", "reason"), SEVERITY_CASES)
def test_severity(
    points: list[GroupPoint], thresholds: Thresholds, now: float, expected: Severity, reason: str
) -> None:
    # Severity is judged at the newest point; each case's `now` names that time.
    assert not points or now == points[-1].at
    assert severity(points, thresholds) == (expected, reason)


LEVEL_CASES = [
    # F01 No points: not fired, no reason.
    pytest.param([], DEFAULTS.warn, 0.0, (False, None), id="F01-no-points"),
    # F02 Over but not growing: not fired and not pending either (no reason), as the level cannot fire
    #     without growth however long it holds.
    pytest.param(every_minute(*[80_000] * 6), DEFAULTS.warn, 300.0, (False, None), id="F02-not-growing"),
    # F03 Pending: fired False with the reason saying how long of how long.
    pytest.param(
        every_minute(60_000, 70_000),
        DEFAULTS.warn,
        60.0,
        (False, engine_wording.severity_pending("warn", 60.0, 300.0)),
        id="F03-pending",
    ),
    # F04 A doubling-only level (no message or seconds limit) fires on its own: 25k -> 50k (= the minimum).
    pytest.param(
        pts((0, 25_000), (60, 50_000)),
        Level(doubling_within=600),
        60.0,
        (True, engine_wording.severity_doubling("warn", 25_000, 50_000, 600.0)),
        id="F04-doubling-only-level",
    ),
]


@pytest.mark.parametrize(("points", "level", "now", "expected"), LEVEL_CASES)
def test_level_fires(points: list[GroupPoint], level: Level, now: float, expected: tuple[bool, str | None]) -> None:
    assert not points or now == points[-1].at  # judged at the newest point, which `now` names
    assert level_fires(points, level, "warn") == expected


# ===================================================================================================
# T01-..: trend
# ===================================================================================================

TREND_CASES = [
    # T01 No points: unknown.
    pytest.param([], "unknown", id="T01-no-points"),
    # T02 One known total: a trend needs two, unknown.
    pytest.param([100], "unknown", id="T02-one-point"),
    # T03 Unknown totals are skipped: one known among them is still unknown.
    pytest.param([None, 100, None], "unknown", id="T03-one-known-among-unknown"),
    # T04 1000 -> 1010: a change of 10 is within 1% of 1010 (10.1): steady.
    pytest.param([1000, 1010], "steady", id="T04-within-one-percent"),
    # T05 1000 -> 1011: 11 > 10.11: growing.
    pytest.param([1000, 1011], "growing", id="T05-just-over-one-percent"),
    # T06 1011 -> 1000: the same change downwards: shrinking.
    pytest.param([1011, 1000], "shrinking", id="T06-shrinking"),
    # T07 0 -> 1: within the 1-message floor (1% of tiny lags would make every message a trend): steady.
    pytest.param([0, 1], "steady", id="T07-one-message-floor"),
    # T08 0 -> 2: over the floor: growing.
    pytest.param([0, 2], "growing", id="T08-over-the-floor"),
    # T09 Only the first and last known totals count: 100 -> 5000 -> 100 is steady.
    pytest.param([100, 5000, 100], "steady", id="T09-first-and-last-only"),
    # T10 Unknowns at both ends are skipped: 100 -> 200 is growing.
    pytest.param([None, 100, 200, None], "growing", id="T10-unknown-ends-skipped"),
    # T11 Only the last five known totals count: a long rise then five checks of draining is shrinking now
    #     (500 -> 100), though the window's first total (0) is lower than its last (found by the demo: a group
    #     visibly draining after a scale was headlined "growing").
    pytest.param([0, 100, 200, 300, 400, 500, 400, 300, 200, 100], "shrinking", id="T11-recent-points-only"),
    # T12 Unknowns do not count towards the five: the last five known are 300 -> 500, growing.
    pytest.param([900, 300, None, 350, None, 400, 450, 500, None], "growing", id="T12-five-known-not-five-samples"),
]


@pytest.mark.parametrize(("lags", "expected"), TREND_CASES)
def test_trend(lags: list[int | None], expected: str) -> None:
    assert trend(pts(*((60.0 * i, lag) for i, lag in enumerate(lags)))) == expected


# ===================================================================================================
# G01-..: evaluate_group, X01-..: error_verdict
# ===================================================================================================

W_PACE = w((0, 100, 1100), (10, 200, 1200), (20, 300, 1300), (30, 400, 1400))
"""Case 32: lag 1000 throughout, 10 msg/s produced and consumed: OK."""
W_WARN = w((0, 100, 400), (10, 150, 500), (20, 200, 600), (30, 250, 700))
"""Case 30: lag 300 -> 450, 10 msg/s produced, 5 consumed: WARN."""
W_REWOUND = w((0, 500, 1000), (10, 500, 1000), (20, 100, 1000), (30, 100, 1000))
"""Offset reset 500 -> 100, lag 900: REWIND."""
W_UNCOMMITTED = w((0, None, 100), (10, None, 200), (20, None, 300), (30, None, 400))
"""Nothing committed, 10 msg/s produced: lag None, OK."""
W_DRAIN = w((0, 1000, 2000), (10, 1300, 2100), (20, 1600, 2200), (30, 1900, 2300))
"""Lag 1000, 800, 600, 400: 10 msg/s produced, 30 consumed."""
W_BIG = w((0, 0, 300_000), (10, 100_000, 400_000), (20, 200_000, 500_000), (30, 300_000, 600_000))
"""Lag 300,000 throughout, keeping pace: OK behaviour, but a big lag."""


def gwindow(
    partitions: dict[TopicPartition, tuple[PartitionSample, ...]],
    latest: GroupSnapshot | None,
    state: GroupState = GroupState.STABLE,
) -> GroupWindow:
    times = sorted({s.at for samples in partitions.values() for s in samples})
    return GroupWindow(
        cluster="prod",
        group="billing",
        samples=tuple(GroupSample(at=t, state=state, member_ids=("m-1",)) for t in times),
        partitions=partitions,
        latest=latest,
    )


@dataclass(frozen=True)
class GroupCase:
    window: GroupWindow
    statuses: tuple[Status, ...]
    """The partition verdicts' statuses, in (topic, partition) order."""
    expected: dict[str, object]
    """GroupVerdict fields by name."""
    thresholds: Thresholds = DEFAULTS
    now: float = 30.0


GROUP_CASES = [
    # G01 Group status = max of partitions: OK (W_PACE), WARN (W_WARN), STALL (W_STUCK) -> STALL. Totals:
    #     lag 1000 + 450 + 450 = 1900; produce 10 + 10 + 5 = 25.0 msg/s; consume 10 + 5 + 0 = 15.0; consumers
    #     slower than producers, so no ETA. Total lag per sample 1600, 1700, 1800, 1900: growing, far under every
    #     threshold. Every committed offset is older than its window (400 < 1100, 250 < 400, 100 < 400), so
    #     each partition is at least 30 - 0 = 30 s behind: max 30.0.
    pytest.param(
        GroupCase(
            gwindow({TP: W_PACE, TP1: W_WARN, TP2: W_STUCK}, OWNED),
            (Status.OK, Status.WARN, Status.STALL),
            {
                "status": Status.STALL,
                "total_lag": 1900,
                "produce_rate": 25.0,
                "consume_rate": 15.0,
                "eta_seconds": None,
                "trend": "growing",
                "severity": Severity.OK,
                "severity_reason": engine_wording.severity_ok(),
                "max_lag_seconds": 30.0,
                "state": GroupState.STABLE,
                "members": (ME,),
            },
        ),
        id="G01-status-is-max",
    ),
    # G02 STOP beats REWIND at group level: in an Empty group W_STUCK is STOP and W_REWOUND is REWIND (it cannot
    #     be STOP, see case 28); STOP is the worse, so the group is STOP. Lag 450 + 900 = 1350.
    pytest.param(
        GroupCase(
            gwindow({TP: W_STUCK, TP1: W_REWOUND}, EMPTY, GroupState.EMPTY),
            (Status.STOP, Status.REWIND),
            {"status": Status.STOP, "total_lag": 1350, "state": GroupState.EMPTY, "members": ()},
        ),
        id="G02-stop-beats-rewind",
    ),
    # G03 Total lag sums known lags only: 300 from TP, nothing from the uncommitted TP1 (its lag is unknown, not
    #     0 and not 400). Rates count only partitions the group has committed on, like the lag: produce 10.0
    #     and consume 10.0 from TP. Consume does not outpace produce (lag steady at 300), so no ETA: "never",
    #     rightly, and not because of TP1, which the group does not read. The known total is 300 at every
    #     sample: steady.
    pytest.param(
        GroupCase(
            gwindow({TP: w((0, 100, 400), (10, 200, 500), (20, 300, 600), (30, 400, 700)), TP1: W_UNCOMMITTED}, OWNED),
            (Status.OK, Status.OK),
            {
                "status": Status.OK,
                "total_lag": 300,
                "produce_rate": 10.0,
                "consume_rate": 10.0,
                "eta_seconds": None,
                "trend": "steady",
            },
        ),
        id="G03-total-lag-known-only",
    ),
    # G04 Only uncommitted partitions: total lag None (unknown, not 0), so no ETA, no trend ("unknown"), no lag
    #     in seconds, and severity cannot fire (OK "under every threshold"). No produce rate either: rates
    #     count only partitions with a commit, like the lag they are compared with.
    pytest.param(
        GroupCase(
            gwindow({TP: W_UNCOMMITTED, TP1: W_UNCOMMITTED}, OWNED),
            (Status.OK, Status.OK),
            {
                "status": Status.OK,
                "total_lag": None,
                "produce_rate": None,
                "consume_rate": None,
                "eta_seconds": None,
                "trend": "unknown",
                "max_lag_seconds": None,
                "severity": Severity.OK,
                "severity_reason": engine_wording.severity_ok(),
            },
        ),
        id="G04-only-uncommitted",
    ),
    # G05 Draining: two W_DRAIN partitions, lag 400 + 400 = 800, produce 20.0, consume 60.0: ETA 800 / 40 = 20 s.
    #     Total 2000 -> 800: shrinking. Both committed offsets (1900) are below the oldest log end (2000): 30 s.
    pytest.param(
        GroupCase(
            gwindow({TP: W_DRAIN, TP1: W_DRAIN}, OWNED),
            (Status.OK, Status.OK),
            {
                "status": Status.OK,
                "total_lag": 800,
                "produce_rate": 20.0,
                "consume_rate": 60.0,
                "eta_seconds": 20.0,
                "trend": "shrinking",
                "max_lag_seconds": 30.0,
            },
        ),
        id="G05-eta-and-trend",
    ),
    # G06 Severity is judged on the group's total: two partitions at 300,000 each (each under 500,000) make
    #     600,000 at every sample, over critical's 500,000 for 30 s: CRITICAL, while the behaviour is OK
    #     (keeping pace). Not growing, so warn could not have fired anyway; the trend is steady.
    pytest.param(
        GroupCase(
            gwindow({TP: W_BIG, TP1: W_BIG}, OWNED),
            (Status.OK, Status.OK),
            {
                "status": Status.OK,
                "total_lag": 600_000,
                "severity": Severity.CRITICAL,
                "severity_reason": engine_wording.severity_messages("critical", 600_000, 500_000, 30.0),
                "trend": "steady",
            },
        ),
        id="G06-severity-on-group-total",
    ),
    # G07 A seconds-based warn (over 15 s, held 10 s) on W_BURST-like data: committed 1000 while the log end goes
    #     1000, 1100, 1200, 1300. Judged on the window up to each sample, the partition is 0, 10, 20, 30 s behind
    #     (message 1000 was written at t=0), so over 15 s since t=20: held 10 s: WARN. The behaviour is STALL: the
    #     lag was 0 only at t=0, before the recent samples, and 300 messages wait on an offset still for 30 s.
    pytest.param(
        GroupCase(
            gwindow({TP: w((0, 1000, 1000), (10, 1000, 1100), (20, 1000, 1200), (30, 1000, 1300))}, OWNED),
            (Status.STALL,),
            {
                "status": Status.STALL,
                "total_lag": 300,
                "max_lag_seconds": 30.0,
                "severity": Severity.WARN,
                "severity_reason": engine_wording.severity_seconds("warn", 30.0, 15.0, 10.0),
            },
            thresholds=Thresholds(warn=Level(seconds=15, sustained_for=10)),
        ),
        id="G07-seconds-severity-from-window",
    ),
    # G08 Deleted group: no newest snapshot (latest None). Ownership is UNOWNED, so W_STUCK is STOP; the state
    #     comes from the newest group sample (Dead), and there are no members.
    pytest.param(
        GroupCase(
            gwindow({TP: W_STUCK}, None, GroupState.DEAD),
            (Status.STOP,),
            {"status": Status.STOP, "state": GroupState.DEAD, "members": (), "total_lag": 450},
        ),
        id="G08-deleted-group",
    ),
    # G09 A partition with no samples yet is left out (nothing to judge), not reported as OK with no data.
    pytest.param(
        GroupCase(
            gwindow({TP: W_PACE, TP1: ()}, OWNED),
            (Status.OK,),
            {"status": Status.OK, "total_lag": 1000},
        ),
        id="G09-empty-partition-skipped",
    ),
    # G10 One sample (`lagbot check --samples 1`): TP is 150 behind (100 of 250), TP1 caught up (300 of 300).
    #     TP's lag in seconds cannot be placed in time from one sample (None), TP1's is 0.0. The group is NOT
    #     "0 s behind": the only lagging partition's figure is unknown, so the group's is None.
    pytest.param(
        GroupCase(
            gwindow({TP: w((0, 100, 250)), TP1: w((0, 300, 300))}, OWNED),
            (Status.OK, Status.OK),
            {"total_lag": 150, "max_lag_seconds": None},
            now=0.0,
        ),
        id="G10-lagging-unknown-is-not-0",
    ),
    # G11 A partition with nothing committed on a log holding 400 messages is lagging by an unknown amount, and
    #     the other partition is caught up (lag 0 at every sample, 0.0 s): the group's seconds are unknown, None.
    pytest.param(
        GroupCase(
            gwindow({TP: w((0, 500, 500), (10, 500, 500), (20, 500, 500), (30, 500, 500)), TP1: W_UNCOMMITTED}, OWNED),
            (Status.OK, Status.OK),
            {"total_lag": 0, "max_lag_seconds": None},
        ),
        id="G11-uncommitted-lagging-is-not-0",
    ),
    # G12 Lagging figures known on one partition only: W_DRAIN is 30 s behind (its commit 1900 is below the
    #     oldest log end 2000, a lower bound from t=0), TP1 has nothing committed (unknown). The group is at
    #     least as far behind as its worst known partition: 30.0.
    pytest.param(
        GroupCase(
            gwindow({TP: W_DRAIN, TP1: W_UNCOMMITTED}, OWNED),
            (Status.OK, Status.OK),
            {"total_lag": 400, "max_lag_seconds": 30.0},
        ),
        id="G12-worst-known-lagging-figure",
    ),
    # G13 Every partition caught up: the group is 0.0 s behind (known, not unknown), from one sample.
    pytest.param(
        GroupCase(
            gwindow({TP: w((0, 300, 300)), TP1: w((0, 50, 50))}, OWNED),
            (Status.OK, Status.OK),
            {"total_lag": 0, "max_lag_seconds": 0.0},
            now=0.0,
        ),
        id="G13-all-caught-up-is-0",
    ),
    # G14 The demo's disagreement: the window holds a long rise (before a scale) then a drain. Over the whole
    #     window produce 9,500 / 80 = 118.75 > consume 2,500 / 80 = 31.25 msg/s (a rates-based ETA says "never"),
    #     but the trend reads the last five totals, 9,000 -> 8,000 over 40 s: shrinking. ETA, trend and the drain
    #     rate come from those same points: draining at 25.0 msg/s, ETA 8,000 / 25 = 320 s.
    pytest.param(
        GroupCase(
            gwindow(
                {
                    TP: w(
                        (0, 0, 1000),
                        (10, 0, 4000),
                        (20, 0, 7000),
                        (30, 0, 9000),
                        (40, 500, 9500),
                        (50, 1000, 9750),
                        (60, 1500, 10000),
                        (70, 2000, 10250),
                        (80, 2500, 10500),
                    )
                },
                OWNED,
            ),
            (Status.OK,),
            {
                "trend": "shrinking",
                "drain_rate": 25.0,
                "eta_seconds": 320.0,
                "total_lag": 8000,
                "produce_rate": 118.75,
                "consume_rate": 31.25,
            },
            now=80.0,
        ),
        id="G14-eta-trend-drain-one-source",
    ),
    # G15 A steady total (W_PACE: 1000 at every sample): drain rate 0.0, trend steady, ETA None (never).
    pytest.param(
        GroupCase(
            gwindow({TP: W_PACE}, OWNED), (Status.OK,), {"trend": "steady", "drain_rate": 0.0, "eta_seconds": None}
        ),
        id="G15-steady-no-eta",
    ),
]


@pytest.mark.parametrize("case", GROUP_CASES)
def test_evaluate_group(case: GroupCase) -> None:
    verdict = evaluate_group(case.window, thresholds=case.thresholds, rules=RULES, now=case.now)
    state = case.window.samples[-1].state
    arrays = stored_window(dict(case.window.partitions), case.window.latest, state)
    assert evaluate_group(arrays, thresholds=case.thresholds, rules=RULES, now=case.now) == verdict

    assert (verdict.cluster, verdict.group) == ("prod", "billing")
    assert tuple(p.status for p in verdict.partitions) == case.statuses
    assert [p.tp for p in verdict.partitions] == sorted(tp for tp, s in case.window.partitions.items() if s)
    assert verdict.causes == () and verdict.error is None
    for name, expected in case.expected.items():
        actual = getattr(verdict, name)
        if isinstance(expected, float):
            assert actual == pytest.approx(expected), name
        else:
            assert actual == expected, name


ERROR_CASES = [
    # X01 A group whose coordinator failed: status ERR (above every behavioural status), severity not judged
    #     (OK, "cannot judge: <why>"), nothing measured.
    pytest.param(GroupState.UNKNOWN, "coordinator not available", id="X01-error-verdict"),
    # X02 The state known when reading failed (here Empty) is kept: ERR is about the read, not the group.
    pytest.param(GroupState.EMPTY, "fetching committed offsets failed", id="X02-error-keeps-state"),
]


@pytest.mark.parametrize(("state", "reason"), ERROR_CASES)
def test_error_verdict(state: GroupState, reason: str) -> None:
    verdict = error_verdict("prod", "billing", state, reason)
    assert verdict.status is Status.ERR
    assert (verdict.severity, verdict.severity_reason) == (Severity.OK, engine_wording.severity_error(reason))
    assert verdict.error == reason
    assert (verdict.cluster, verdict.group, verdict.state) == ("prod", "billing", state)
    assert verdict.partitions == ()
    assert (verdict.total_lag, verdict.max_lag_seconds, verdict.eta_seconds) == (None, None, None)
    assert (verdict.produce_rate, verdict.consume_rate, verdict.trend) == (None, None, "unknown")


def test_lag_seconds_series_equals_lag_seconds_of_each_prefix() -> None:
    # The severity series is computed without copying prefixes; it must equal the definition: at each
    # sample time, lag_seconds of the window up to that sample. Windows with idle stretches, bursts, a
    # rewind, a recreated topic (log end falls) and samples without a commit.
    import random

    from lagbot.engine.evaluate import _max_lag_seconds_series

    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 12)
        end, committed, samples = rng.randint(0, 50), None, []
        for i in range(n):
            if rng.random() < 0.1:
                end = rng.randint(0, 10)  # recreated topic: the log end falls
            end += rng.choice([0, 0, 1, 5, 40])
            if rng.random() < 0.8:
                committed = max(0, min(end, (committed or 0) + rng.choice([-3, 0, 2, 10])))
            samples.append(
                PartitionSample(1_000.0 + 10 * i + rng.random(), committed if rng.random() < 0.9 else None, end, 0)
            )
        window = GroupWindow(
            cluster="c",
            group="g",
            samples=tuple(GroupSample(s.at, GroupState.EMPTY, ()) for s in samples),
            partitions={("t", 0): tuple(samples)},
        )
        expected = {}
        for i, s in enumerate(samples):
            # lag_seconds without Facts finds the restart itself: the same index window_facts gathers
            assert log_end_restart(samples[: i + 1]) == window_facts(samples[: i + 1]).log_end_restart
            value, _ = lag_seconds(samples[: i + 1], s.at)
            if value is not None:
                expected[s.at] = value
        assert _max_lag_seconds_series(window) == pytest.approx(expected)


STATUS_REACHED, LAG_SECONDS_REACHED, PRODUCE_REACHED, CONSUME_REACHED = 37, 11, 4, 3
"""Of 52 status, 16 lag-seconds, 7 produce and 8 consume cases; each of the others has a sample without a
commit, a rewind or a log end that went back, which the arrays leave to `window_facts`."""


def test_the_cases_reach_the_array_route() -> None:
    # The comparison of the routes is only a proof if the array route gathers Facts itself for many cases: every
    # window of the tables with a commit at every sample and nothing going back. Counted per table.
    def reached(windows: list[tuple[PartitionSample, ...]]) -> int:
        found = 0
        for samples in windows:
            window = stored_window({TP: samples}, OWNED)
            assert window.columns is not None
            found += TP in column_facts(window.columns, window.partitions)
        return found

    status = [p.values[0].samples for p in STATUS_CASES]
    assert (reached(status), len(status)) == (STATUS_REACHED, len(STATUS_CASES))
    assert reached([p.values[0] for p in LAG_SECONDS_CASES]) == LAG_SECONDS_REACHED
    assert reached([p.values[0] for p in PRODUCE_CASES]) == PRODUCE_REACHED
    assert reached([p.values[0] for p in CONSUME_CASES]) == CONSUME_REACHED


# ===================================================================================================
# B00-..: Burrow's published evaluator table (linkedin/Burrow core/internal/evaluator/caching_test.go, cases 0-11)
# ===================================================================================================
#
# Burrow's cases are commits (offset, timestamp, lag) it read from __consumer_offsets, the broker's newest offsets and
# a time `now`. lagbot polls instead: each commit becomes a sample at its time (committed = the offset, log end =
# offset + lag), and lagbot's polls after the last commit (every commit interval, up to `now`) see that commit and the
# broker's log end. Burrow does not know who owns a partition; lagbot does, so each case is judged owned (a live
# member) or unowned (an Empty group) as it says. Where the answers differ, the case says why lagbot differs.

Commit = tuple[int, float, int | None]
"""(offset, seconds, lag) of one of Burrow's commits; a lag of None is a commit Burrow had no broker offset for."""


def burrow(commits: list[Commit], polls: list[tuple[float, int]]) -> tuple[PartitionSample, ...]:
    """lagbot's window of a Burrow case: a sample per commit with a lag, then one per poll (time, log end) that sees
    the newest commit."""
    samples = [(at, offset, offset + lag) for offset, at, lag in commits if lag is not None]
    newest = commits[-1][0]
    return w(*samples, *((at, newest, log_end) for at, log_end in polls))


STEADY: list[Commit] = [(1000, 100, 0), (2000, 200, 50), (3000, 300, 100), (4000, 400, 150), (5000, 500, 200)]
"""Burrow's cases 0-2: a consumer that moves, lag 0 at its first commit, then 50 more at every commit."""
NEVER_ZERO: list[Commit] = [(1000, 100, 50), (2000, 200, 100), (3000, 300, 150), (4000, 400, 200), (5000, 500, 250)]
B9: list[Commit] = [(792748079 + k, float(k), 0) for k in range(15)]
"""Burrow's cases 9 and 10: a commit a second, each at the log end, from t=0 to t=14 (its timestamps, less
1512224618 s)."""


@dataclass(frozen=True)
class BurrowCase:
    samples: tuple[PartitionSample, ...]
    group: GroupSnapshot | None
    burrow: Status
    """Burrow's expected status (its table's; Burrow's WARN is lagbot's WARN, its STOP and STALL lagbot's)."""
    lagbot: Status


def polls(start: float, end: float, every: float, log_end: int) -> list[tuple[float, int]]:
    found, at = [], start
    while at <= end:
        found.append((at, log_end))
        at += every
    return found


BURROW_CASES = [
    # B00 (Burrow 0) OK because the lag was zero somewhere: lagbot agrees (Burrow's rule 1, and the offset moves).
    pytest.param(BurrowCase(burrow(STEADY, polls(600, 600, 100, 5200)), OWNED, Status.OK, Status.OK), id="B00"),
    # B01 (Burrow 1) now 900: 400 s since the last commit, equal to the 400 s the commits span, not greater: OK.
    #     lagbot, owned: still for 400 s after moving for 400 s, not longer: OK. Agrees.
    pytest.param(BurrowCase(burrow(STEADY, polls(600, 900, 100, 5200)), OWNED, Status.OK, Status.OK), id="B01"),
    # B01e The same in an Empty group. lagbot differs on purpose: STOP, because it knows nobody reads the partition
    #      while 200 messages wait; Burrow, blind to owners, waits until the silence outlasts the commits.
    pytest.param(BurrowCase(burrow(STEADY, polls(600, 900, 100, 5200)), EMPTY, Status.OK, Status.STOP), id="B01e"),
    # B02 (Burrow 2) now 1000: 500 s since the last commit > 400 s: STOP, although the lag was zero at the start
    #     (Burrow #290). lagbot owned: STALL (a member owns the partition: lagbot's STOP is for nobody reading it,
    #     its STALL for a live owner whose offset stopped: both stop the same consumer and both raise an alarm).
    pytest.param(BurrowCase(burrow(STEADY, polls(600, 1000, 100, 5200)), OWNED, Status.STOP, Status.STALL), id="B02"),
    # B02e The same in an Empty group: STOP, agrees.
    pytest.param(BurrowCase(burrow(STEADY, polls(600, 1000, 100, 5200)), EMPTY, Status.STOP, Status.STOP), id="B02e"),
    # B03 (Burrow 3) STOP with a lag never zero as well: owned STALL, Empty STOP (as B02).
    pytest.param(
        BurrowCase(burrow(NEVER_ZERO, polls(600, 1000, 100, 5250)), OWNED, Status.STOP, Status.STALL), id="B03"
    ),
    pytest.param(
        BurrowCase(burrow(NEVER_ZERO, polls(600, 1000, 100, 5250)), EMPTY, Status.STOP, Status.STOP), id="B03e"
    ),
    # B04 (Burrow 4) the offset is always 1000, lag 0 at the first commit then 50 more each commit: Burrow OK (rule 1,
    #     its comment: "another commit will turn this to stall"). lagbot differs on purpose: STALL. The zero lag was
    #     500 s ago, before the recent samples, and 200 messages have waited since on an offset that never moved: the
    #     lesson of Burrow #290, which its rule 1 still misses when the commits themselves go on.
    pytest.param(
        BurrowCase(
            burrow([(1000, 100 * k, 50 * (k - 1)) for k in range(1, 6)], polls(600, 600, 100, 1200)),
            OWNED,
            Status.OK,
            Status.STALL,
        ),
        id="B04",
    ),
    # B05 (Burrow 5) the same with the lag never zero: STALL, agrees.
    pytest.param(
        BurrowCase(
            burrow([(1000, 100 * k, 50 * (k + 1)) for k in range(1, 6)], polls(600, 600, 100, 1300)),
            OWNED,
            Status.STALL,
            Status.STALL,
        ),
        id="B05",
    ),
    # B06 (Burrow 6) still STALL when the lag stays the same (100): agrees.
    pytest.param(
        BurrowCase(
            burrow([(1000, 100 * k, 100) for k in range(1, 6)], polls(600, 600, 100, 1100)),
            OWNED,
            Status.STALL,
            Status.STALL,
        ),
        id="B06",
    ),
    # B07 (Burrow 7) offsets 1000, 2000, 3000, 2000, 4000: a rewind 3000 -> 2000, then past 3000. Burrow's table
    #     says REWIND; Burrow has since learned rewind recovery (checkIfRewindRecovered): a consumer back at or past
    #     the offset it rewound from has recovered, and the other rules judge it: the lag fell (1250 -> 300), the
    #     offset moves: OK. lagbot: OK, as Burrow now.
    pytest.param(
        BurrowCase(
            burrow(
                [(1000, 100, 100), (2000, 200, 150), (3000, 300, 200), (2000, 400, 1250), (4000, 500, 300)],
                polls(600, 600, 100, 4300),
            ),
            OWNED,
            Status.OK,
            Status.OK,
        ),
        id="B07",
    ),
    # B08 (Burrow 8) the current lag is 0 (the consumer committed the log end, 5250, at t=1000), whatever the
    #     commits before showed: OK, agrees.
    pytest.param(
        BurrowCase(
            w(*((at, o, o + lag) for o, at, lag in NEVER_ZERO), (1000, 5250, 5250)), OWNED, Status.OK, Status.OK
        ),
        id="B08",
    ),
    # B09 (Burrow 9, #290) lag 0 at every commit, but no commit since t=14 while the broker's offsets (its ring,
    #     oldest first 792748500 ... 792749024) ran ahead: 931 waiting at t=32. Burrow STOP. lagbot: the recent polls
    #     never saw the consumer at the log end: Empty STOP, owned STALL (as B02).
    pytest.param(
        BurrowCase(
            burrow(B9, [(18, 792748500), (22, 792748600), (26, 792748800), (30, 792749000), (32, 792749024)]),
            EMPTY,
            Status.STOP,
            Status.STOP,
        ),
        id="B09",
    ),
    pytest.param(
        BurrowCase(
            burrow(B9, [(18, 792748500), (22, 792748600), (26, 792748800), (30, 792749000), (32, 792749024)]),
            OWNED,
            Status.STOP,
            Status.STALL,
        ),
        id="B09o",
    ),
    # B10 (Burrow 10, #303) the same commits, but the broker's recent offsets are 792748093 (the consumer's) then
    #     792748094: lag 1, zero within the recent broker offsets: OK. lagbot: lag 1 is caught up (a transaction's
    #     marker takes an offset), and the recent polls saw it at the log end: OK, agrees.
    pytest.param(
        BurrowCase(
            burrow(B9, [(20, 792748093), (24, 792748093), (28, 792748093), (32, 792748094)]),
            EMPTY,
            Status.OK,
            Status.OK,
        ),
        id="B10",
    ),
    # B11 (Burrow 11) case 0 with commits Burrow had no lag for (offsets 1500, 2500, ... 5500): they change nothing.
    #     lagbot's samples always carry both offsets, so those commits are not samples; its poll at t=600 sees the
    #     newest commit, 5500, and the log end 5700: OK, agrees.
    pytest.param(
        BurrowCase(
            burrow(
                [(o, o / 10, (o - 1000) // 20 if o % 1000 == 0 else None) for o in range(1000, 6000, 500)],
                polls(600, 600, 100, 5700),
            ),
            OWNED,
            Status.OK,
            Status.OK,
        ),
        id="B11",
    ),
]


@pytest.mark.parametrize("case", BURROW_CASES)
def test_burrow_table(case: BurrowCase) -> None:
    now = case.samples[-1].at
    verdict, by_arrays = both_routes(case.samples, case.group, now)
    assert by_arrays == verdict
    assert verdict.status is case.lagbot
    assert verdict.lag == case.samples[-1].lag


def test_burrow_table_agreement_is_counted() -> None:
    # What the port shows: lagbot agrees with Burrow on 11 of 16 rows. It differs on 5, each said above: 3 where a
    # member owns a partition Burrow calls STOP (lagbot: STALL), B01e (STOP at once when nobody owns the partition)
    # and B04 (an old zero lag hides no stall).
    cases = [p.values[0] for p in BURROW_CASES]
    agree = [c for c in cases if c.burrow is c.lagbot]
    owned_stop = [c for c in cases if (c.burrow, c.lagbot) == (Status.STOP, Status.STALL)]
    assert (len(cases), len(agree), len(owned_stop)) == (16, 11, 3)


# ===================================================================================================
# K01-..: Kafka Lag Exporter's LookupTableSpec (seglo/kafka-lag-exporter), its time-lag lookups
# ===================================================================================================
#
# Kafka Lag Exporter predicts when an offset was written from a table of (offset, time) points; lagbot's `lag_seconds`
# is `now` minus that time, from the window's (time, log end) samples. Each lookup of a committed offset below
# must give Lag Exporter's predicted time: every interpolation case agrees. Where Lag Exporter extrapolates (an offset
# older than the table, or past it), lagbot does not, on purpose: older than the window is a lower bound (the oldest
# sample's age), at or past the newest log end is caught up (0 s).

Point = tuple[int, float]
"""(offset, time) of one of Lag Exporter's points."""


def table(*points: Point, committed: int) -> tuple[PartitionSample, ...]:
    return w(*((at, committed, offset) for offset, at in points))


SQUARE = ((100, 100.0), (200, 200.0))
FLAT = ((100, 30.0), (200, 60.0), (200, 120.0), (200, 700.0), (300, 730.0), (300, 9000.0), (400, 9030.0))
NORMAL = ((0, 0.0), (10, 1.0), (200, 2.0), (3000, 3.0), (40000, 4.0))
"""The 'normal case' table as it stands after truncating to its 5 newest points (its negative offsets dropped)."""
NOW = 10_000.0

KLE_CASES = [
    # square lookups, x == y: interpolation 150, 190, 110 and the point 100.
    *(pytest.param(SQUARE, c, float(c), False, id=f"K01-square-{c}") for c in (150, 190, 110, 100)),
    # extrapolation under the table (10, 0): Lag Exporter predicts 10 and 0; lagbot: older than the window, a lower
    # bound of the oldest sample's age (now - 100).
    *(pytest.param(SQUARE, c, 100.0, True, id=f"K02-square-under-{c}") for c in (10, 0)),
    # extrapolation over the table (300): Lag Exporter predicts 300; lagbot: past the log end, caught up (0 s).
    pytest.param(SQUARE, 300, NOW, False, id="K03-square-over"),
    # flat sections: the latest time of a flat stretch is taken (200 -> 700, 300 -> 9000).
    *(
        pytest.param(FLAT, c, t, False, id=f"K04-flat-{c}")
        for c, t in ((199, 59.7), (200, 700.0), (201, 700.3), (250, 715.0), (299, 729.7), (300, 9000.0), (301, 9000.3))
    ),
    # a table of one flat section at the looked-up offset: lag is zero.
    pytest.param(((0, 0.0), (0, 100.0)), 0, NOW, False, id="K05-flat-only-zero"),
    # flat curve, no growth: Lag Exporter gives -inf under it and +inf over it (no answer); lagbot a lower bound under
    # it (now - 100) and caught up over it.
    pytest.param(((100, 100.0), (100, 200.0), (100, 300.0), (100, 400.0)), 99, 100.0, True, id="K06-flat-under"),
    pytest.param(((100, 100.0), (100, 200.0), (100, 300.0), (100, 400.0)), 101, NOW, False, id="K06-flat-over"),
    # the normal case: steady times, different rates.
    *(
        pytest.param(NORMAL, c, t, False, id=f"K07-normal-{c}")
        for c, t in (
            (1600, 2.5),
            (0, 0.0),
            (1, 0.09999999999999998),
            (9, 0.9),
            (10, 1.0),
            (200, 2.0),
            (2999, 2.9996428571428573),
            (3000, 3.0),
            (3001, 3.000027027027027),
        )
    ),
    # the newest point itself (40000): Lag Exporter predicts 4; lagbot: at the log end, caught up (0 s).
    pytest.param(NORMAL, 40000, NOW, False, id="K07-normal-newest"),
    # extrapolation over (50000): Lag Exporter 5; lagbot caught up.
    pytest.param(NORMAL, 50000, NOW, False, id="K07-normal-over"),
]


@pytest.mark.parametrize(("points", "committed", "written_at", "lower_bound"), KLE_CASES)
def test_lag_exporter_lookups(points: tuple[Point, ...], committed: int, written_at: float, lower_bound: bool) -> None:
    samples = table(*points, committed=committed)
    seconds, bound = lag_seconds(samples, NOW)
    assert seconds == pytest.approx(NOW - written_at, abs=1e-9)
    assert bound is lower_bound
    # and the array route's figure is the same
    verdict, by_arrays = both_routes(samples, OWNED, NOW)
    assert (by_arrays.lag_seconds, by_arrays.lag_seconds_lower_bound) == (verdict.lag_seconds, bound)
