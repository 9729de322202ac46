"""The partition rules: pure functions from one partition's window to its status.

Each rule has one home, here: the evaluator's per-partition route (lagbot.engine.evaluate) calls these functions
on a partition's `Facts` (lagbot.engine.facts); its array route calls their array forms (lagbot.engine.rows),
which build the reasons with the same functions (tests/engine/test_evaluate_columns.py compares both, row by
row). Rates and lag in seconds are lagbot.engine.rates. Nothing here reads a clock or does I/O: `now` is an
argument. The rules follow Burrow's evaluator, adapted to offsets that are polled rather than read from
__consumer_offsets:

    STOP    nobody owns the partition, messages wait, and its committed offset has not moved over a short
            grace (its last `min_samples` committed samples, spanning `min_span`): nobody reads it.
    REWIND  the committed offset went backwards in the window and has not come back since to the offset
            it went back from (Burrow's rewind recovery: a rebalance makes a consumer commit an old offset).
    STALL   the group is live (the partition is owned, or the group does not report owners) but the
            committed offset did not move over the whole window while lag stayed above zero.
    WARN    lag never decreased over the window, ended higher than it started, and ends more than
            `quiet_lag` messages and `quiet_seconds` seconds behind.
    OK      anything else.

They are checked worst first, so a partition gets the first rule that fires; `Status` is ordered the
same way, so a group's status is the max of its partitions'. Burrow's guard applies to STOP and STALL:
a consumer that reached a broker offset seen recently (at one of the window's last `min_samples` samples, as
Burrow looks at its ring of recent broker offsets) is not stuck, the topic is merely quiet, so idle topics stay OK;
an old zero lag does not hide a consumer that stopped since (Burrow #290). WARN has Burrow's rule 1 as
its guard: a lag of zero at any sample of the window means the consumer kept up, so a burst on a quiet
topic that the consumer has not committed yet is not a slow consumer. A lag of CAUGHT_UP_LAG (1) is
caught up: a transaction's commit or abort marker takes an offset a read_committed consumer never reads.
The rule that reads a group's partitions together (stuck against its siblings) is in lagbot.engine.siblings.
The proof of these is tests/engine/test_evaluate_cases.py, whose cases run through both routes.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from lagbot.core import messages
from lagbot.core.model import (
    Status,
)
from lagbot.engine import wording
from lagbot.engine.ownership import Ownership

if TYPE_CHECKING:  # types only: the array route alone loads numpy, and judging loads no settings model (pydantic)
    from lagbot.core.config import Evaluation

from lagbot.engine.facts import CAUGHT_UP_LAG, Facts, Samples, as_facts, caught_up_recently, span
from lagbot.engine.rates import lag_seconds_upto, produce_rate

# ---------------------------------------------------------------------------------------------------
# The rules, worst first. Each returns (status, reason) when it fires, None otherwise. Each takes the
# window's samples (or its Facts, already gathered).
# ---------------------------------------------------------------------------------------------------

Finding = tuple[Status, str]


def still_run(facts: Facts) -> Samples:
    """The committed samples since the committed offset last moved (all of them when it never moved)."""
    return facts.committed[facts.still_since :] if facts.still_since else facts.committed


def still_for(facts: Facts, rules: Evaluation) -> float | None:
    """The shared ground of STOP and STALL: messages wait, the offset has not moved over a grace (its last
    `min_samples` committed samples or more, spanning `min_span` or more) and the consumer was not caught up recently
    (`caught_up_recently`). The seconds it has been still, or None."""
    if (facts.last.lag or 0) <= CAUGHT_UP_LAG:
        return None
    still = still_run(facts)
    since = span(still)
    if len(still) < rules.min_samples or since < rules.min_span or caught_up_recently(facts, rules):
        return None
    return since


def rule_stop(window: Samples | Facts, ownership: Ownership, rules: Evaluation) -> Finding | None:
    """Nobody owns the partition, messages wait, and its offset has not moved over a short grace: STOP.

    The grace is `still_for`'s: the rules' own judging bar (`min_samples` committed samples spanning `min_span`), met
    by the samples since the offset last moved, so a group whose consumers left after consuming is STOP a few checks
    later, not a window later. Not after a rewind it has not recovered from (REWIND says what happened).
    """
    facts = as_facts(window)
    if ownership is not Ownership.UNOWNED or facts.rewind is not None:
        return None
    since = still_for(facts, rules)
    return None if since is None else stop_finding(facts.last.lag or 0, since)


def stop_finding(lag: int, since: float) -> Finding:
    """STOP with its reason: lag `lag` and no commit for `since` seconds (the rule is `rule_stop`)."""
    return Status.STOP, wording.reason_stop(lag, since, wording.nobody_owns())


def rule_rewind(window: Samples | Facts) -> Finding | None:
    """The committed offset went backwards within the window and has not come back since: REWIND."""
    found = as_facts(window).rewind
    if found is None:
        return None
    return Status.REWIND, wording.reason_rewind(*found)


def rule_stall(window: Samples | Facts, ownership: Ownership, rules: Evaluation) -> Finding | None:
    """The group is live, messages wait, and the offset has not moved over the whole window, or over the grace of
    `still_for` and for longer than it moved before (Burrow's checkIfOffsetsStopped: the time since the last commit
    is greater than the time the commits before it span): STALL."""
    facts = as_facts(window)
    if ownership is Ownership.UNOWNED:
        return None
    since = still_for(facts, rules)
    if since is None:
        return None
    if facts.still_since and since <= facts.committed[facts.still_since].at - facts.committed[0].at:
        return None
    return stall_finding(facts.last.lag or 0, since, ownership)


def stall_finding(lag: int, since: float, ownership: Ownership) -> Finding:
    """STALL with its reason: lag `lag` and no commit for `since` seconds (the rule is `rule_stall`)."""
    who = messages.owned() if ownership is Ownership.OWNED else wording.owner_unknown()
    return Status.STALL, wording.reason_stall(lag, since, who)


def rule_warn(window: Samples | Facts, rules: Evaluation) -> Finding | None:
    """Lag never decreased over the window, ended higher than it started, and ends really behind: WARN.

    Burrow warns on 'never decreasing' alone; we also require growth, so a consumer that keeps exact
    pace with a constant in-flight lag is not flagged forever. As in Burrow (rule 1), a caught-up lag at any
    sample means the consumer kept up within the window: the growth since is new messages not yet
    committed (on a quiet topic, every message would otherwise be a WARN). And the newest lag must be more than
    `quiet_lag` messages and more than `quiet_seconds` seconds behind (`behind_seconds`), or have risen at every step
    by more than AUTO_COMMIT_SECONDS of writes (`outgrew_commits`): a consumer that keeps up shows a few messages
    and a few seconds of lag that can rise across a few samples between its commits (auto-commit commits every
    5 s); that is jitter, not a consumer falling behind.
    """
    facts = as_facts(window)
    committed = facts.committed
    if len(committed) < rules.min_samples or facts.zero_lag_seen or not facts.lags_never_decreased:
        return None
    first, last = committed[0].lag or 0, committed[-1].lag or 0
    if last <= first or last <= rules.quiet_lag:
        return None
    if behind_seconds(facts) > rules.quiet_seconds or outgrew_commits(facts):
        return warn_finding(first, last, facts.committed_span)
    return None


AUTO_COMMIT_SECONDS = 5.0
"""auto.commit.interval.ms's default: a consumer that keeps up and commits this often shows, between two commits, a lag
that rises by what is written in this many seconds, and no more."""


def outgrew_commits(facts: Facts) -> bool:
    """The lag rose at every step and by more than the partition is written in AUTO_COMMIT_SECONDS: more than any
    commit cadence of a consumer that keeps up explains (WARN's other way past its seconds floor, for a deficit that
    began too recently for its oldest unread message to be `quiet_seconds` old)."""
    lags = [s.lag or 0 for s in facts.committed]
    if any(b <= a for a, b in itertools.pairwise(lags)):
        return False
    rate = produce_rate(facts)
    return rate is not None and lags[-1] - lags[0] > rate * AUTO_COMMIT_SECONDS


def behind_seconds(facts: Facts) -> float:
    """How old the oldest unread message was at the newest sample (`lag_seconds` at its time; a lower bound, the
    window's span, when it is older than the window): what WARN's seconds floor reads. 0 when unknown."""
    seconds, _ = lag_seconds_upto(facts.samples, len(facts.samples) - 1, facts.log_end_restart, facts.last.at)
    return seconds or 0.0


def warn_finding(first: int, last: int, span: float) -> Finding:
    """WARN with its reason: lag went from `first` to `last` over `span` seconds (the rule is `rule_warn`)."""
    return Status.WARN, wording.reason_warn(first, last, span)


def partition_status(window: Samples | Facts, ownership: Ownership, rules: Evaluation) -> Finding:
    """The status of one partition: the first rule that fires, worst first."""
    facts = as_facts(window)
    last = facts.last
    if last.committed is None:
        return Status.OK, wording.reason_no_commit()
    if last.lag == 0:
        return Status.OK, wording.reason_caught_up()
    found = (
        rule_stop(facts, ownership, rules)
        or rule_rewind(facts)
        or rule_stall(facts, ownership, rules)
        or rule_warn(facts, rules)
    )
    if found is not None:
        return found
    if (last.lag or 0) <= CAUGHT_UP_LAG:
        return Status.OK, wording.reason_caught_up_marker()
    caught_up = caught_up_recently(facts, rules)
    return ok_finding(len(facts.committed), facts.unmoved, facts.committed_span, caught_up, rules)


def ok_finding(committed: int, unmoved: bool, span: float, caught_up: bool, rules: Evaluation) -> Finding:
    """OK with its reason when no rule fired, from the window's number of committed samples, whether its offset
    moved, its committed span and Burrow's guard: why the rules could not judge, or that it consumes."""
    if committed < rules.min_samples:
        return Status.OK, wording.reason_few_samples(committed, rules.min_samples)
    if unmoved and span < rules.min_span:
        return Status.OK, wording.reason_span_short(span, rules.min_span)
    if caught_up:
        return Status.OK, wording.reason_caught_up_in_window()
    return Status.OK, wording.reason_ok_moving()
