"""`rebalance_churn`: the group's membership keeps changing between snapshots, and with lag, what keeps it changing
(`churn_mechanism`: a crash loop or poll-interval kick-outs), read from the group's offsets. One departure and a
rejoin in a short window is `kicked_out_once`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from lagbot.core.model import Cause, GroupSample, GroupVerdict, GroupWindow, Status
from lagbot.engine import agreement, wording

MECHANISM_CONFIDENCE = 0.95
"""A churn whose mechanism is named (`churn_mechanism`) outranks the stuck partitions it causes (0.9)."""


def rebalance_churn(
    window: GroupWindow | None, verdict: GroupVerdict | None = None, quiet_seconds: float = 8.0
) -> Cause | None:
    """State, member ids or generation changed between snapshots at least twice in the window; with the group's lag,
    the mechanism when the offsets say which (`churn_mechanism`)."""
    if window is None or len(window.samples) < 2:
        return None
    samples = window.samples
    changed_at = agreement.membership_changes(samples)
    rebalancing_at = [s.at for s in samples if s.state.is_rebalancing]
    changes, rebalancing = len(changed_at), len(rebalancing_at)
    if not agreement.churns(changes, rebalancing):
        return kicked_out_once(window, verdict, quiet_seconds) if verdict is not None else None
    explanation = wording.cause_churn(changes, rebalancing, len(samples), samples[-1].at - samples[0].at)
    evidence: dict[str, object] = {
        "changes": changes,
        "rebalancing_samples": rebalancing,
        "samples": len(samples),
        "changed_at": changed_at,
        "rebalancing_at": rebalancing_at,
    }
    confidence = min(0.9, 0.5 + 0.1 * changes)
    left = departures(samples)
    mechanism = churn_mechanism(verdict, quiet_seconds) if verdict is not None and left else None
    if verdict is not None and mechanism is not None:
        lag = verdict.total_lag or 0
        said = wording.churn_crash_loop(lag) if mechanism == "crash_loop" else wording.churn_kicked_out(lag)
        explanation, confidence = f"{explanation}: {said}", MECHANISM_CONFIDENCE
        evidence["mechanism"] = mechanism
    return Cause(
        kind="rebalance_churn",
        explanation=explanation,
        confidence=confidence,
        evidence=evidence,
    )


KICKED_ONCE_CONFIDENCE = 0.85
"""One departure and a rejoin is less sure than churn (a deploy replaces a member so too), but outranks the stuck
partitions and capacity causes it explains."""


def kicked_out_once(window: GroupWindow, verdict: GroupVerdict, quiet_seconds: float) -> Cause | None:
    """One member left and a new one joined in the window (`rejoined`) while the group is behind and its offsets moved
    (`churn_mechanism` says 'kicked_out'): what a window shorter than two poll-interval kick-outs sees of them. The
    mechanism is named as for churn, with less confidence; not churn, so no churn of two changes is claimed."""
    samples = window.samples
    if departures(samples) != 1 or not rejoined(samples) or churn_mechanism(verdict, quiet_seconds) != "kicked_out":
        return None
    changed_at = agreement.membership_changes(samples)
    return Cause(
        kind="rebalance_churn",
        explanation=wording.churn_kicked_out_once(verdict.total_lag or 0),
        confidence=KICKED_ONCE_CONFIDENCE,
        evidence={
            "changes": len(changed_at),
            "rebalancing_samples": sum(1 for s in samples if s.state.is_rebalancing),
            "samples": len(samples),
            "changed_at": changed_at,
            "rebalancing_at": [s.at for s in samples if s.state.is_rebalancing],
            "mechanism": "kicked_out",
            "departures": 1,
        },
    )


def rejoined(samples: Sequence[GroupSample]) -> bool:
    """After the snapshot at which a member was gone, a member id never seen before it joined, and the newest snapshot
    has as many members as before the departure: the group got its member back (not a scale-down, not Empty)."""
    for i, (a, b) in enumerate(itertools.pairwise(samples)):
        if set(a.member_ids) - set(b.member_ids):
            seen = {m for s in samples[: i + 1] for m in s.member_ids}
            later = {m for s in samples[i + 1 :] for m in s.member_ids}
            return bool(later - seen) and len(samples[-1].member_ids) >= len(a.member_ids)
    return False


def departures(samples: Sequence[GroupSample]) -> int:
    """How many times a member id present at one snapshot was gone at the next (members joining are not counted)."""
    return sum(1 for a, b in itertools.pairwise(samples) if set(a.member_ids) - set(b.member_ids))


def churn_mechanism(verdict: GroupVerdict, quiet_seconds: float) -> str | None:
    """What keeps the members changing, from the group's offsets, when the group is behind: 'crash_loop' when no
    lagging partition's offset moved over the window (a member that dies before it commits, and comes back), or
    'kicked_out' when they moved (a member that commits some batches, then outlasts max.poll.interval.ms on one, is
    kicked out and rejoins). Asked of a churning group (2 changes or more) in which a member left (members only
    joining are a scale-up). None without lag worth a cause: a partition not OK, or lag more than
    `quiet_seconds` old (a member that comes and goes beside members that keep up is churn, no mechanism of lag)."""
    lagging = [p for p in verdict.partitions if (p.lag or 0) > 1 and p.committed is not None]
    behind = verdict.status >= Status.WARN or (verdict.max_lag_seconds or 0.0) > quiet_seconds
    if not lagging or not behind:
        return None
    if all((p.consume_rate or 0.0) <= 0 for p in lagging):
        return "crash_loop"
    return "kicked_out"
