"""The owner's pod in `lagbot check`: what the pods of the members a cause blames show, on the cause's line of the
table and as the cause's `pods` in --json (docs/check.md, "The owners' pods").

Read as the bot reads them (lagbot.service.pod_causes, the same reading and matching): the group's rule in the policy
file (settings.policy_file) names the workload, the executor of that workload reads its pods (the kubernetes one,
under the read-only evidence Role). Nothing is read, and nothing of the policy model, the remediations or the
Kubernetes client is imported, when there is no policy file, no cause, or a policy file that names no workload: the
check of a cluster without Kubernetes costs what it did.

A pod that cannot be read (refused, not found, no answer within the executor's timeout), a policy file that cannot
be read, an executor that is not configured: the check is not failed; the report says once that the pods could not
be read and why (`CheckPods.error`), and no other group's pod is read after that in this check (the others would meet
the same refusal or slowness); a pod not found is its owner's fact, and the same group's next owners are read.

The reading as a whole is bounded by the check's timeout (`pods_budget`: --timeout): the executor is built with that
budget for all its requests together (lagbot.remediations.executors.kubernetes), each waits at most what is left of
it, and a read it cuts short is said as any other reason, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lagbot.cli import wording

if TYPE_CHECKING:
    from lagbot.core.config import Settings
    from lagbot.core.model import Cause, GroupVerdict
    from lagbot.engine.check import CheckReport
    from lagbot.remediations.executors.base import Executor, Workload
    from lagbot.service.pod_causes import PodsRead


@dataclass(frozen=True)
class CheckPods:
    """What a check read of the pods: per (cluster, group), and why they could not be read (said once), if so."""

    read: Mapping[tuple[str, str], PodsRead] = field(default_factory=dict)
    error: str | None = None


NO_PODS = CheckPods()


def names_workload(policy: Mapping[str, Any]) -> bool:
    """Pure: whether a policy file's mapping (as YAML reads it) names a workload in its default or in a rule."""
    rules = policy.get("rules")
    sections = [policy.get("default"), *(rules if isinstance(rules, list) else ())]
    return any(isinstance(s, Mapping) and s.get("workload") is not None for s in sections)


def pods_budget(settings: Settings) -> float:
    """Pure: the seconds the owners' pods of a check are read in, all together: the check's timeout (--timeout, which
    is every cluster's request_timeout; else the longest request_timeout of its clusters)."""
    return max(c.request_timeout for c in settings.clusters)


def with_pods(report: CheckReport, settings: Settings) -> tuple[CheckReport, CheckPods]:
    """The report whose causes carry what their owners' pods show (as the incident thread's do), and what was read,
    its requests within `pods_budget` seconds. The pods' findings are worded as of the check's time
    (`report.taken_at`). Never raises."""
    path = settings.policy_file
    if path is None or not any(v.causes for v in report.verdicts):
        return report, NO_PODS
    from lagbot.core.config import read_yaml
    from lagbot.core.errors import ConfigError

    try:
        data = read_yaml(path)
    except ConfigError as exc:
        return report, CheckPods(error=wording.cli_pods_unread(str(exc)))
    if not names_workload(data):
        return report, NO_PODS
    try:
        return _read(report, settings, data, str(path))
    except Exception as exc:  # the check never fails for its pods: said once, as any other reason
        return report, CheckPods(error=wording.cli_pods_unread(str(exc) or type(exc).__name__))


def _read(report: CheckReport, settings: Settings, data: dict[str, Any], source: str) -> tuple[CheckReport, CheckPods]:
    from lagbot.policies.loader import PolicyError, parse_policy
    from lagbot.remediations.executors.config import build_executor
    from lagbot.remediations.executors.pod_evidence import PodReadings
    from lagbot.service.pod_causes import PodCauses, with_pod_evidence

    try:
        policy = parse_policy(data, source=source)
    except PolicyError as exc:
        return report, CheckPods(error=wording.cli_pods_unread(str(exc)))
    executors: dict[str, Executor] = {}
    budget = pods_budget(settings)

    def executor_for(workload: Workload) -> Executor:
        if workload.executor not in executors:
            executors[workload.executor] = build_executor(workload.executor, settings.executors, budget=budget)
        return executors[workload.executor]

    causes = PodCauses(PodReadings(), lambda cluster, group: policy.match(cluster, group).workload, executor_for)
    read: dict[tuple[str, str], PodsRead] = {}
    verdicts: list[GroupVerdict] = []
    error = None
    for verdict in report.verdicts:
        pods = None if error is not None else causes.read(verdict, now=report.taken_at)
        if pods is not None:
            read[(verdict.cluster, verdict.group)] = pods
            error = None if pods.error is None else wording.cli_pods_unread(pods.error)
            verdict = with_pod_evidence(verdict, pods.shown())
        verdicts.append(verdict)
    return replace(report, verdicts=verdicts), CheckPods(read, error)


def cause_pods_json(cause: Cause, verdict: GroupVerdict, pods: CheckPods) -> list[dict[str, Any]]:
    """--json's `pods` of a cause: each pod read of the members it blames (healthy ones too, `findings` empty)."""
    found = pods.read.get((verdict.cluster, verdict.group))
    if found is None:
        return []
    from lagbot.service.pod_causes import cause_pods

    owners = cause_pods(cause, verdict, found)
    return [{"pod": o.pod, **o.member.owner_json(), "findings": list(o.findings)} for o in owners]
