"""The words of the `reset_offsets` remediation: its plan, pre-flight checks, progress, outcome and policy.

Tiny functions, one per message; the words every remediation shares are lagbot.remediations.wording's.
"""

from __future__ import annotations

from collections.abc import Sequence

from lagbot.core.messages import count
from lagbot.remediations.wording import button


def preflight_inactive() -> str:
    return "the group is Empty (no live consumers)"


def reset_needs(field: str, mode: str) -> str:
    wanted = {"shift": "shift", "to_datetime": "datetime"}[field]
    return f"{field!r} is required with mode {wanted!r} and not allowed otherwise (mode is {mode!r})"


def reset_zero_shift() -> str:
    return "a shift of 0 changes nothing"


def reset_shift_no_commit(topic: str, partition: int) -> str:
    return f"cannot shift {topic}-{partition}: the group has no committed offset there"


def reset_time_unresolved(topic: str, partition: int) -> str:
    return f"the offset of {topic}-{partition} for the chosen time was not looked up (resolve_times)"


def reset_no_partitions(group: str, topics: Sequence[str]) -> str:
    which = f" of topics {', '.join(topics)}" if topics else ""
    return f"{group} has no partitions{which} to reset"


def reset_nothing_to_do(group: str) -> str:
    return f"every partition of {group} is already where the reset would put it"


def reset_how(mode: str, shift: int | None, when: object | None) -> str:
    if mode == "shift":
        return f"by {shift:+d}"
    if mode == "datetime":
        return f"to {when}"
    return f"to {mode}"


def reset_summary(group: str, how: str) -> str:
    return button(f"Reset offsets of {group} {how}")


def reset_step_check() -> str:
    return "check the group is Empty right before resetting (its consumers must be stopped)"


def reset_step_alter(partitions: int, how: str, skipped: int, reread: int) -> str:
    return (
        f"reset {partitions} partition(s) {how}: {count(skipped)} messages skipped, {count(reread)} read again "
        "(targets recomputed from the offsets at that moment)"
    )


def reset_step_read_back() -> str:
    return "read the committed offsets back and compare"


def reset_confirm(group: str, how: str, skipped: int, unknown: int, reread: int) -> str:
    if not skipped and not unknown:
        return (
            f"Re-processing: resetting {group} {how} makes this group process {count(reread)} messages again; "
            "downstream may see duplicates. This cannot be undone."
        )
    text = f"Data loss: resetting {group} {how} skips {count(skipped)} messages; this group will never process them."
    if unknown:
        text += f" {unknown} partition(s) had no committed offset: more may be skipped."
    if reread:
        text += f" {count(reread)} messages will be processed again."
    return text + " This cannot be undone."


def reset_group_active(state: str) -> str:
    return f"the group is {state}: stop its consumers first (offsets are only reset on an Empty group)"


def reset_progress(group: str, partitions: int) -> str:
    return f"resetting {partitions} partition(s) of {group} ..."


def reset_read_back_differs(partitions: Sequence[str], unanswered: str | None = None) -> str:
    differs = f"the committed offsets read back differ from the targets on {', '.join(partitions)}"
    return differs if unanswered is None else f"{unanswered}; {differs}"


def reset_refused_by_broker(refusal: str, moved: Sequence[str]) -> str:
    if not moved:
        return f"{refusal}; nothing changed (offsets read back as before): stop its consumers, then propose again"
    return f"{refusal}; the committed offsets read back differ from before on {', '.join(moved)}: check them"


def reset_done(group: str, partitions: int, skipped: int, reread: int) -> str:
    return f"reset {partitions} partition(s) of {group}: {count(skipped)} messages skipped, {count(reread)} to re-read"


def policy_reset_needs_two() -> str:
    return "reset_offsets loses data: it needs 2 approvals, by two different people"


def policy_no_modes() -> str:
    return "at least one mode is needed (latest, earliest, shift, datetime); to forbid resets, remove reset_offsets"


def policy_mode_not_allowed(rule: str, mode: str, modes: Sequence[str]) -> str:
    return f"rule {rule!r} does not allow resetting offsets {mode!r}; allowed: {', '.join(modes)}"


def explain_modes(modes: Sequence[str]) -> str:
    return f"modes {', '.join(modes)}, only while the group is Empty"
