"""The words of the `restart` remediation: its plan, pre-flight checks, progress, outcome and policy.

Tiny functions, one per message; the words every remediation shares are lagbot.remediations.wording's.
"""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.remediations.wording import button


def preflight_not_rebalancing() -> str:
    return "the group is not rebalancing"


def preflight_members_present() -> str:
    return "each member to restart is still in the group"


def restart_owners_unknown(group: str) -> str:
    return (
        f"cannot restart the owners of {group}'s stalled partitions: they are not known (no stalled partition, "
        "or the group reports no members); restart the whole workload instead"
    )


def restart_why_rolling(asked: bool, any_stalled: bool) -> str:
    if asked:
        return "as asked"
    if not any_stalled:
        return "no partition is stalled, so no one member is to blame"
    return "the owners of the stalled partitions are not known (the group reports no members)"


def restart_summary_rolling(workload: str) -> str:
    return button(f"Rolling restart of {workload}")


def restart_summary_members(members: int, group: str) -> str:
    return button(f"Restart {members} stuck consumer{'s' if members > 1 else ''} of {group}")


def restart_step_rolling(workload: str, why: str) -> str:
    return f"rolling restart of {workload}: {why}"


def restart_step_member(
    client_id: str, host: str, member_id: str, partitions: Sequence[str], pod: Sequence[str] = ()
) -> str:
    step = f"restart {client_id}@{host} (member {member_id}), owner of stalled {', '.join(partitions)}"
    return f"{step}; its pod: {'; '.join(pod)}" if pod else step


def restart_progress_rolling(workload: str) -> str:
    return f"rolling restart of {workload} ..."


def restart_progress_member(client_id: str, host: str) -> str:
    return f"restarting {client_id}@{host} ..."


def restart_member_failed(member_id: str, detail: str) -> str:
    return f"restarting member {member_id} failed: {detail}"


def restart_done(members: int) -> str:
    return f"restarted {members} member(s); their partitions are being reassigned"


def explain_scope(scope: str) -> str:
    return {
        "auto": "the stuck member, else a rolling restart",
        "members": "only the stuck members",
        "workload": "always a rolling restart",
    }[scope]
