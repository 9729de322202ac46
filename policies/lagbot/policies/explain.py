"""`lagbot policy explain`: which rule a group gets and what it allows, in lines for a terminal (pure)."""

from __future__ import annotations

from lagbot.core.config import Level, Thresholds
from lagbot.policies import wording
from lagbot.policies.model import MaintenanceWindow, Policy, Rule
from lagbot.remediations import registry
from lagbot.remediations.executors.base import Workload


def explain(policy: Policy, cluster: str, group: str, *, now: float) -> list[str]:
    """Every line of the explanation: the matched rule, then each thing it decides."""
    index = policy.match_index(cluster, group)
    rule = policy.match(cluster, group)
    if index is None:
        head = wording.explain_default(cluster, group, rule.name, len(policy.rules))
    else:
        match = policy.rules[index].match
        head = wording.explain_rule(cluster, group, rule.name, index, match.cluster, match.group)
    return [
        head,
        wording.explain_field("thresholds", thresholds_text(rule.thresholds)),
        wording.explain_field("channel", rule.channel or wording.explain_no_channel()),
        wording.explain_field("approvers", approvers_text(rule)),
        wording.explain_field("silencers", silencers_text(rule)),
        wording.explain_field("workload", workload_text(rule.workload)),
        wording.explain_field("remediations", ""),
        *[wording.explain_item(action, remediation_text(rule, action)) for action in registry.names_in_order()],
        wording.explain_field("maintenance", maintenance_text(rule, now)),
        *[wording.explain_item(str(i), window_text(w)) for i, w in enumerate(rule.maintenance)],
        wording.explain_field("dry-run", wording.explain_dry_run(rule.dry_run)),
        wording.explain_field("verification", wording.explain_verification(rule.verification.no_change_after)),
    ]


def thresholds_text(thresholds: Thresholds | None) -> str:
    if thresholds is None:
        return wording.explain_thresholds_from_config()
    return "; ".join(f"{name} {level_text(getattr(thresholds, name))}" for name in ("warn", "critical", "page"))


def level_text(level: Level) -> str:
    parts = []
    if level.messages is not None:
        parts.append(wording.explain_over_messages(level.messages))
    if level.seconds is not None:
        parts.append(wording.explain_over_seconds(level.seconds))
    text = " or ".join(parts)
    if level.growing:
        text += wording.explain_and_growing()
    if level.sustained_for:
        text += wording.explain_sustained(level.sustained_for)
    if level.doubling_within is not None:
        doubling = wording.explain_doubling(level.doubling_within, level.doubling_min_lag)
        text = f"{text} or {doubling}" if text else doubling
    return text


def approvers_text(rule: Rule) -> str:
    if not rule.approvers.configured:
        return wording.explain_nobody_can_approve()
    return wording.explain_approvers(rule.approvers.users, rule.approvers.usergroups)


def silencers_text(rule: Rule) -> str:
    """Who may /lag silence and unsilence the group: the rule's silencers, else its approvers."""
    if rule.silencers is None:
        return wording.explain_silencers_are_approvers()
    if not rule.silencers.configured:
        return wording.explain_nobody_can_silence()
    return wording.explain_approvers(rule.silencers.users, rule.silencers.usergroups)


def workload_text(workload: Workload | None) -> str:
    if workload is None:
        return wording.explain_no_workload([r.name for r in registry.remediations() if r.needs_workload])
    return wording.explain_workload(
        workload.executor, workload.kind, workload.namespace, workload.name, workload.keda_scaled_object
    )


def remediation_text(rule: Rule, action: str) -> str:
    policy = rule.allows(action)
    if policy is None:
        return wording.explain_not_allowed()
    risk = registry.risk_of(action)
    parts = [
        wording.explain_risk(risk.value if risk else None),
        wording.explain_approvals(policy.approvals_required),
        wording.explain_auto_approve(policy.auto_approve),
        wording.explain_cooldown(policy.cooldown),
        wording.explain_expiry(policy.proposal_expiry),
        *registry.get(action).explain_policy(policy, rule.workload),
    ]
    if registry.get(action).needs_workload and rule.workload is None:
        parts.append(wording.explain_needs_workload())
    return ", ".join(parts)


def maintenance_text(rule: Rule, now: float) -> str:
    if not rule.maintenance:
        return wording.explain_no_maintenance()
    return wording.explain_in_maintenance(rule.in_maintenance(now) is not None)


def window_text(window: MaintenanceWindow) -> str:
    return wording.explain_window(window.days, window.start, window.end, window.timezone, window.reason)
