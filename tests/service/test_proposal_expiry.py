"""Which proposals are due to expire at `now` (pure), and the line that replaces an expired proposal's buttons."""

from __future__ import annotations

from dataclasses import replace

from lagbot.remediations.base import Plan, Risk
from lagbot.service.approvals import Proposal, State, expiry_sweep
from lagbot.service.expiry import settled_line

T0 = 1_790_000_000.0  # Monday 21 September 2026, 14:13:20 UTC


def proposal(pid: str, *, expires_at: float, state: State = State.PROPOSED) -> Proposal:
    plan = Plan(
        action="scale",
        cluster="prod",
        group="orders",
        summary="Scale orders 2 -> 4",
        risk=Risk.MEDIUM,
        params={"replicas": 4},
        steps=("scale to 4",),
        before={"replicas": 2},
        after={"replicas": 4},
    )
    return Proposal(
        id=pid,
        cluster="prod",
        group="orders",
        action="scale",
        plan=plan,
        requested_by="lagbot",
        created_at=expires_at - 600,
        expires_at=expires_at,
        approvals_required=1,
        cooldown=600.0,
        state=state,
    )


def test_due_are_the_proposed_ones_past_their_expiry_soonest_first_the_settled_only_leave_the_set() -> None:
    listed = {
        "late": proposal("late", expires_at=T0 - 5),
        "early": proposal("early", expires_at=T0 - 60),
        "exactly": proposal("exactly", expires_at=T0),  # at its expiry it can still be approved: not yet
        "later": proposal("later", expires_at=T0 + 1),
        "ran": proposal("ran", expires_at=T0 - 60, state=State.SUCCEEDED),
        "running": proposal("running", expires_at=T0 - 60, state=State.RUNNING),
        "denied": proposal("denied", expires_at=T0 - 60, state=State.DENIED),
        "expired": proposal("expired", expires_at=T0 - 60, state=State.EXPIRED),
        "gone": None,
    }
    sweep = expiry_sweep(listed, T0)
    assert [p.id for p in sweep.due] == ["early", "late"]
    assert sweep.settled == ["ran", "running", "denied", "expired", "gone"]

    later = expiry_sweep(listed, T0 + 1.5)
    assert [p.id for p in later.due] == ["early", "late", "exactly", "later"]
    assert expiry_sweep({}, T0).due == []
    assert expiry_sweep(listed, T0 - 3_600).due == []


def test_an_expired_proposal_s_line_says_it_expired_and_when_in_utc() -> None:
    stored = proposal("p1", expires_at=T0 + 600, state=State.EXPIRED)
    expected = ":hourglass: *Scale orders 2 -&gt; 4*: expired at 2026-09-21 14:23 UTC, nothing was run."
    assert settled_line(stored, T0 + 700) == expected
    # Read before the sweep wrote it: past its expiry it is expired all the same.
    assert settled_line(replace(stored, state=State.PROPOSED), T0 + 700) == expected
    assert settled_line(replace(stored, state=State.DENIED, denied_by="U0ONCALL1", detail="not now"), T0 + 700) == (
        ":no_entry_sign: *Scale orders 2 -&gt; 4*: denied by <@U0ONCALL1>: not now"
    )
