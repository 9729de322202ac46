"""The wording of the engine: causes, severities, statuses, what a check could not read.

Tiny functions, one per message (see lagbot.core.messages for the shared ones and the number formats).
"""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.core.messages import count, duration, percent, rate


def cluster_unreachable(cluster: str, doing: str, problem: str) -> str:
    return f"cluster {cluster!r} unreachable while {doing}: {problem}"


def cluster_authentication_failed(cluster: str, problem: str) -> str:
    return f"cluster {cluster!r}: authentication failed (check its SASL credentials): {problem}"


def group_unreadable(group: str, doing: str, problem: str) -> str:
    return f"group {group!r}: {doing} failed: {problem}"


def reason_no_commit() -> str:
    return "no committed offset: lag unknown"


def reason_caught_up() -> str:
    return "caught up"


def reason_few_samples(have: int, need: int) -> str:
    return f"{have} of {need} samples: lag only, behaviour not judged yet"


def reason_stop(lag: int, since: float, owner: str) -> str:
    return f"no commit for {duration(since)} while lag is {count(lag)}; {owner}"


def reason_rewind(before: int, after: int) -> str:
    return f"committed offset went backwards from {before:,} to {after:,}"


def reason_stall(lag: int, since: float, who: str) -> str:
    return f"{who}, but the committed offset has not moved for {duration(since)} while lag is {count(lag)}"


def reason_stall_siblings(lag: int, since: float, first_lag: int, sibling_commits: int) -> str:
    return (
        f"owned, but the committed offset has not moved for {duration(since)} while lag grew {count(first_lag)} -> "
        f"{count(lag)} and other members' partitions committed {sibling_commits} times"
    )


def reason_span_short(span: float, needed: float) -> str:
    return f"offset not moving, but {duration(span)} is shorter than the {duration(needed)} needed to judge a stall"


def reason_warn(first: int, last: int, span: float) -> str:
    return f"lag never decreased over {duration(span)}: {count(first)} -> {count(last)}"


def reason_ok_moving() -> str:
    return "consuming"


def reason_caught_up_marker() -> str:
    return "caught up but for one offset (a transaction's commit marker takes one)"


def reason_caught_up_in_window() -> str:
    return "caught up to the log end within the window"


def nobody_owns() -> str:
    return "nobody owns the partition"


def owner_unknown() -> str:
    return "the group reports no members"


def severity_ok() -> str:
    return "under every threshold"


def severity_error(reason: str) -> str:
    return f"cannot judge: {reason}"


def severity_messages(level: str, lag: int, limit: int, held: float) -> str:
    return f"{level}: lag {count(lag)} > {count(limit)} for {duration(held)}"


def severity_seconds(level: str, lag_s: float, limit: float, held: float) -> str:
    return f"{level}: lag {duration(lag_s)} > {duration(limit)} for {duration(held)}"


def severity_doubling(level: str, before: int, after: int, within: float) -> str:
    return f"{level}: lag doubled from {count(before)} to {count(after)} within {duration(within)}"


def severity_pending(level: str, held: float, needed: float) -> str:
    return f"{level} pending: over its limit for {duration(held)} of the {duration(needed)} it must hold"


def owner_unknown_short() -> str:
    return "unknown (the group reports no members)"


def owner_none(state: str) -> str:
    return f"none (the group is {state})"


def cause_data_loss(partitions: int, missed: int, topic: str, partition: int) -> str:
    return (
        f"{count(missed)} messages on {partitions} partition(s) were deleted by retention before the group "
        f"read them (worst: {topic}-{partition}); the committed offset is below the log start"
    )


def cause_retention_risk(topic: str, partition: int, share: float, partitions: int) -> str:
    return (
        f"{topic}-{partition}: lag is {percent(share)} of the retained messages ({partitions} partition(s) at "
        f"risk); retention will delete unread messages soon"
    )


def cause_stuck(
    partitions: list[int], topic: str, lag: int, owners: list[str], whole: Sequence[str] = (), why_not_scale: str = ""
) -> str:
    plural = "s" if len(partitions) > 1 else ""
    listed = ", ".join(str(p) for p in partitions[:10]) + (" ..." if len(partitions) > 10 else "")
    text = (
        f"partition{plural} {listed} of {topic}: committed offset not moving while {count(lag)} messages wait; "
        f"owner: {'; '.join(owners)}"
    )
    if whole:
        text += f"; every partition of {' and '.join(whole)} is stuck: that member is stuck, restart it"
    return text + (f"; {why_not_scale}" if why_not_scale else "")


def poison_record(offsets: Sequence[tuple[int, int]], read: float) -> str:
    at = ", ".join(f"partition {p} at offset {o:,}" for p, o in offsets[:5])
    return (
        f"stuck at one offset ({at}) while its owner reads its other partitions at {rate(read)}: a record it cannot get"
        " past (a poison message); a restart, or more members, will meet the same record: fix the handler, or skip"
        " the record"
    )


def scaling_would_not_help_stuck(stuck: int, others: int, consume: float, produce: float) -> str:
    return (
        f"scaling would not help: the other {others} partition(s) keep up ({rate(consume)} read, {rate(produce)} "
        f"written) and the missing consumption is the {stuck} stuck partition(s)', which no new member would read"
    )


def scaling_would_not_help_slow_owner(client: str, slow: int, others: int, consume: float, produce: float) -> str:
    return (
        f"scaling would not help: the other {others} partition(s) keep up ({rate(consume)} read, {rate(produce)} "
        f"written) and the missing consumption is the {slow} partition(s) of the slow owner {client}, which a new "
        "member would not take over while it stays in the group"
    )


def cause_no_members(state: str, lag: int, growing: bool) -> str:
    return f"the group is {state} (no consumers) while {count(lag)} messages wait" + (
        " and lag is growing" if growing else ""
    )


def cause_unassigned(partitions: list[str], members: int) -> str:
    listed = ", ".join(partitions[:10]) + (" ..." if len(partitions) > 10 else "")
    return f"the group is Stable with {members} member(s) but nobody owns {listed}"


def cause_hot(
    topic: str,
    partition: int,
    share: float,
    why: str,
    owner_text: str,
    consume: float | None,
    produce: float | None,
) -> str:
    base = f"partition {partition} of {topic} holds {percent(share)} of the lag"
    rates = f"owner {owner_text}; it is read at {rate(consume)} while written at {rate(produce)}"
    if why == "key_skew":
        return f"{base}; it is written far faster than the others (key skew): {rates}"
    if why == "slow_owner":
        return f"{base}; its owner consumes far slower than the others (slow owner): {rates}"
    return f"{base}; {rates}"


def cause_deficit(produce: float, consume: float, members: int, target: int | None, partitions: int) -> str:
    base = f"consumers commit {rate(consume)} while producers write {rate(produce)}"
    if target is None:
        return (
            f"{base}; the broker reports no members for the group (some brokers never do), so its consumers are not"
            " counted here: a scale proposal counts the workload's current replicas as its consumers"
        )
    return f"{base}; {members} member(s) now, {target} would keep up (at most {partitions}, one per partition)"


def cause_ceiling(produce: float, consume: float, partitions: int) -> str:
    return (
        f"consumers commit {rate(consume)} while producers write {rate(produce)}, with one member per partition "
        f"already ({partitions}): more replicas would sit idle; drain the backlog or add partitions"
    )


def cause_burst(recent: float, trailing: float) -> str:
    return f"producers write {rate(recent)} now, {recent / trailing:.1f}x their trailing average of {rate(trailing)}"


def cause_burst_vs_baseline(
    recent: float, recent_for: float, before: float, before_for: float, ongoing: bool, now: float | None
) -> str:
    text = (
        f"producers wrote {rate(recent)} over the last {duration(recent_for)} vs {rate(before)} over the "
        f"{duration(before_for)} before ({recent / before:.1f}x)"
    )
    if ongoing:
        return f"{text}; still going"
    return f"{text}; it just ended: {rate(now)} now, the backlog it left drains without more replicas"


def cause_burst_since_birth(
    recent: float, recent_for: float, before: float, before_for: float, ongoing: bool, now: float
) -> str:
    text = (
        f"producers wrote {rate(recent)} over the last {duration(recent_for)} vs {rate(before)} over the "
        f"{duration(before_for)} before, since the topic's oldest record ({recent / before:.1f}x)"
    )
    if ongoing:
        return f"{text}; still going"
    return f"{text}; it just ended: {rate(now)} now, the backlog it left drains without more replicas"


def cause_churn(changes: int, rebalancing: int, samples: int, span: float) -> str:
    return (
        f"membership changed {changes} times and the group was rebalancing in {rebalancing} of {samples} "
        f"snapshots over {duration(span)}; check max.poll.interval.ms and session.timeout.ms"
    )


def churn_crash_loop(lag: int) -> str:
    return (
        f"members keep leaving and coming back while {lag:,} messages wait and the offsets do not move: the member"
        " keeps dying (a crash loop); restarting it is what already happens: its logs say why it dies"
    )


def churn_kicked_out(lag: int) -> str:
    return (
        f"members keep leaving and rejoining while the offsets move between and {lag:,} messages wait: a member whose"
        " processing of one poll's records outlasts max.poll.interval.ms is kicked out and rejoins; fix the"
        " configuration (fewer records per poll, max.poll.records, or a longer max.poll.interval.ms), not a restart"
    )


def churn_kicked_out_once(lag: int) -> str:
    return (
        f"a member left and a new one joined while the offsets moved and {lag:,} messages wait: a member whose"
        " processing of one poll's records outlasts max.poll.interval.ms is kicked out and rejoins so; if it repeats,"
        " fix the configuration (fewer records per poll, max.poll.records, or a longer max.poll.interval.ms), not a"
        " restart"
    )


def rates_across_membership_change(changes: int) -> str:
    return (
        f"the membership changed {'once' if changes == 1 else f'{changes} times'} in the window, so these rates span a"
        " rebalance (no member reads while it lasts): they are not trusted to size capacity, and no remedy is offered"
        " until a window without a change confirms them"
    )


def stuck_by_churn(explanation: str) -> str:
    return f"{explanation}; the group's members keep changing (rebalance_churn): a restart would not help"


def cause_idle(members: int, partitions: int, idle: list[str]) -> str:
    names = f" ({', '.join(idle[:5])})" if idle else ""
    return (
        f"{members} members for {partitions} partitions: {members - partitions} own nothing{names}; "
        "more members cannot read faster (one member per partition at most)"
    )
