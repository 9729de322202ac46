"""The words of the `scale` remediation: its plan, pre-flight checks, progress, outcome and policy.

Tiny functions, one per message; the words every remediation shares are lagbot.remediations.wording's.
"""

from __future__ import annotations

from lagbot.core.messages import duration
from lagbot.remediations.wording import button


def preflight_not_at_target(target: int) -> str:
    return f"the workload has not reached {target} replicas meanwhile"


def preflight_can_pause_keda() -> str:
    return "the executor can pause the KEDA ScaledObject"


def scale_outside_limits(replicas: int, low: int, high: int) -> str:
    return f"{replicas} replicas is outside the policy's limits ({low} to {high})"


def scale_cannot_size(group: str) -> str:
    return f"cannot size {group}: its produce and consume rates are not known yet; give an explicit replica count"


def scale_nothing_to_do(workload: str, replicas: int) -> str:
    return f"{workload} already runs {replicas} replicas, the count that fits the rates and the policy's limits"


def scale_summary(workload: str, current: int, target: int) -> str:
    return button(f"Scale {workload} {current} -> {target}")


def scale_step(workload: str, current: int, target: int) -> str:
    return f"scale {workload} from {current} to {target} replicas"


def scale_step_keda_pause(scaled_object: str, annotation: str, target: int) -> str:
    return f"pause KEDA ScaledObject {scaled_object} at {target} replicas ({annotation}={target}) so it keeps them"


def scale_step_keda_restore(scaled_object: str, hold_for: float) -> str:
    return f"after {duration(hold_for)}: restore {scaled_object}'s annotation as it was, so KEDA scales again"


def scale_progress_keda(scaled_object: str, target: int) -> str:
    return f"pausing KEDA ScaledObject {scaled_object} at {target} replicas ..."


def scale_progress(workload: str, target: int) -> str:
    return f"scaling {workload} to {target} replicas ..."


def scale_already(workload: str, replicas: int) -> str:
    return f"{workload} runs {replicas} replicas now"


def scale_nothing_to_restore(workload: str) -> str:
    return f"{workload} is not managed by KEDA: nothing to restore"


def executor_cannot_pause_keda(executor: str) -> str:
    return f"the {executor} executor cannot pause a KEDA ScaledObject; a plain scale would be undone by KEDA"


def explain_replicas(low: int, high: int, keda_hold: float | None) -> str:
    text = f"replicas {low} to {high} (and at most one per partition)"
    return text + (f", KEDA paused for {duration(keda_hold)} then restored" if keda_hold is not None else "")


def restored(ok: bool, detail: str) -> str:
    if ok:
        return f"The hold after scaling is over: handed back to the autoscaler: {detail}"
    return f"The hold after scaling is over, but handing back to the autoscaler failed: {detail}"


def restored_after_interruption(ok: bool, detail: str) -> str:
    if ok:
        return f"The interrupted scale is handed back to the autoscaler: {detail}"
    return f"The interrupted scale could not be handed back to the autoscaler: {detail}"


def keda_restore_by_hand(scaled_object: str, before: object, detail: str) -> str:
    want = f"set to {before}" if before is not None else "removed"
    return f"{detail}; by hand: ScaledObject {scaled_object}'s {PAUSED} annotation {want}"


def keda_hand_back_unreadable(scaled_object: str | None, problem: str) -> str:
    where = f"ScaledObject {scaled_object}'s {PAUSED} annotation" if scaled_object else f"the {PAUSED} annotation"
    return f"RESTORE FAILED: what to hand back cannot be read ({problem}); nothing changed: by hand, set {where} back"


PAUSED = "autoscaling.keda.sh/paused-replicas"


def scale_down_without_members(group: str, replicas: int, target: int) -> str:
    return (
        f"not scaling down from {replicas} to {target}: {group} has no members, so its rates say nothing about the "
        "workload's consumers (anyone can make such a group by committing an offset); give an explicit replica count"
    )
