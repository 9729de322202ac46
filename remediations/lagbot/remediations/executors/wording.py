"""The wording of the executors (Kubernetes, command, local fleet): what they did or why they could not.

Tiny functions, one per message (see lagbot.core.messages for the shared ones and the number formats).
"""

from __future__ import annotations

from collections.abc import Sequence


def workload_label(executor: str, kind: str, namespace: str, name: str) -> str:
    """A workload as people know it: a Kubernetes kind and namespace/name, or a local fleet by its name."""
    return f"local fleet {name}" if executor == "local" else f"{kind} {namespace}/{name}"


def executor_unknown(name: str) -> str:
    return f"no executor called {name!r}: use kubernetes, command or local"


def executor_not_registered(name: str) -> str:
    return f"the {name} executor is the dev kit's (lagbot.devkit.fleet) and is not loaded in this process"


def executor_not_configured(name: str) -> str:
    return f"the {name} executor is not configured: add an `executors.{name}` section"


def executor_wrong_workload(executor: str, wanted: str, workload: str) -> str:
    return f"workload {workload} is for the {wanted} executor, not {executor}"


def executor_bad_replicas(replicas: int) -> str:
    return f"replicas must be 0 or more, not {replicas}"


def executor_failed(doing: str, problem: str) -> str:
    return f"could not {doing}: {problem}"


def executor_scaled(target: str, before: int | None, after: int) -> str:
    return f"scaled {target} from {'?' if before is None else before} to {after} replicas"


def executor_restarted(target: str) -> str:
    return f"rolling restart of {target} started"


def executor_member_restarted(client_id: str, what: str, target: str) -> str:
    return f"restarted {client_id} ({what}) of {target}"


def k8s_config_sources(given: Sequence[str]) -> str:
    named = ", ".join(given) if given else "none"
    return f"set exactly one of api_url, kubeconfig, in_cluster (given: {named})"


def k8s_config_only_with(what: str, field: str) -> str:
    return f"{what} can only be set together with {field}"


def k8s_config_exclusive(a: str, b: str) -> str:
    return f"{a} and {b} cannot be set together"


def k8s_client_unbuildable(problem: str) -> str:
    return f"cannot build the Kubernetes client: {problem}"


def k8s_doing(verb: str, target: str) -> str:
    return f"{verb} {target}"


def k8s_api_problem(status: int | None, reason: str | None, message: str | None) -> str:
    head = " ".join(str(part) for part in (status, reason) if part)
    return f"{head}: {message}" if message else head or "no answer"


def k8s_cut_short(seconds: float) -> str:
    """A request not sent, or not answered, before the deadline of the calls it is one of (executors.base.Deadline)."""
    return f"cut short: no answer within the {seconds:g} s deadline"


def k8s_bad_name(name: str) -> str:
    return f"{name!r} is not a Kubernetes name (lower-case letters, digits, '-' and '.')"


def k8s_bad_member_pod(template: str, problem: str) -> str:
    return f"member_pod {template!r} is not a valid template ({problem}): use {{host}} or {{client_id}}"


def k8s_no_pod_name(client_id: str, host: str) -> str:
    return f"no pod name can be derived from member {client_id!r} on host {host!r}"


def k8s_bad_pod_name(pod: str) -> str:
    return f"{pod!r} is not a pod name (a DNS-1123 subdomain): check the workload's member_pod"


def k8s_pod_not_of_workload(pod: str, workload: str) -> str:
    return f"pod {pod} does not belong to {workload} (its name does not start with '{workload}-'); nothing deleted"


def k8s_pods_for_ip(ip: str, namespace: str, names: Sequence[str]) -> str:
    found = ", ".join(names) if names else "none"
    return f"expected one running pod with IP {ip} in namespace {namespace}, found {found}; nothing deleted"


def k8s_no_keda(target: str) -> str:
    return f"{target} has no KEDA ScaledObject: nothing to restore"


def then(first: str, second: str) -> str:
    """Two things that happened, in order: 'could not scale ...; ScaledObject x unpaused ...'."""
    return f"{first}; {second}"


def k8s_forbidden(doing: str, who: str | None, verb: str, resource: str, group: str, namespace: str, role: str) -> str:
    """A 403 from RBAC, as the approver needs it: who may not do what, where, and where to grant it."""
    account = who or "lagbot's account"
    api = f"API group {group}" if group else "the core API group"
    return (
        f"could not {doing}: forbidden by RBAC: {account} may not {verb} {resource} ({api}) in namespace "
        f"{namespace}; grant it in the Role {role} of namespace {namespace}"
    )


def k8s_keda_paused(scaled_object: str, before: str | None, after: int | None) -> str:
    """What setting the ScaledObject's paused-replicas did: a new pause, a change, or the pause removed."""
    if after is None:
        return k8s_keda_restored(scaled_object, None)
    if before is None:
        return f"ScaledObject {scaled_object} paused at {after} replicas: KEDA leaves the count alone"
    if before == str(after):
        return f"ScaledObject {scaled_object} already paused at {after} replicas"
    return f"ScaledObject {scaled_object} paused-replicas changed from {before} to {after}"


def k8s_keda_restored(scaled_object: str, previous: str | None) -> str:
    if previous is None:
        return f"ScaledObject {scaled_object} unpaused: KEDA scales it again"
    return f"ScaledObject {scaled_object} paused-replicas set back to {previous}"


def _argv(argv: Sequence[str]) -> str:
    import shlex

    return shlex.join(argv)


def command_bad_element(element: str, problem: str) -> str:
    return f"argv element {element!r} is not a valid template: {problem}"


def command_no_templates(operations: Sequence[str]) -> str:
    return f"give an argv template for at least one of {', '.join(operations)}"


def command_no_program(operation: str) -> str:
    return f"{operation}: the argv template needs a program as its first element"


def command_program_placeholder(operation: str, program: str) -> str:
    return f"{operation}: the program {program!r} must be fixed, not a placeholder"


def command_unknown_placeholder(operation: str, name: str, allowed: Sequence[str]) -> str:
    return f"{operation}: unknown placeholder {{{name}}}; allowed: {', '.join('{' + a + '}' for a in allowed)}"


def command_bad_value(name: str, value: str, pattern: str) -> str:
    return f"refused {{{name}}} = {value!r}: it must match {pattern}; nothing was run"


def command_no_template(operation: str) -> str:
    return f"the command executor has no `{operation}` template: add `executors.command.{operation}`"


def command_doing(operation: str, workload: str) -> str:
    return f"run the {operation} command for {workload}"


def command_done(argv: Sequence[str], output: str) -> str:
    return f"$ {_argv(argv)}\n{output}".rstrip()


def command_exit(argv: Sequence[str], code: int, output: str) -> str:
    how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
    return f"`{_argv(argv)}` failed with {how}\n{output}".rstrip()


def command_not_found(program: str) -> str:
    return f"program {program!r} not found"


def command_timed_out(argv: Sequence[str], seconds: float, output: str) -> str:
    return f"`{_argv(argv)}` timed out after {seconds:g} s and was killed\n{output}".rstrip()


def command_not_a_count(line: str) -> str:
    return f"expected a replica count as the last line of the output, got {line!r}"


# --- the owner's pod as evidence (pod_evidence.py) ---------------------------------------------------------


def _ago(seconds: float) -> str:
    return f"{int(seconds // 60)} min ago" if seconds >= 120 else f"{int(seconds)} s ago"


def pod_restarted(pod: str, container: str, restarts: int, reason: str, exit_code: int | None, ago: float) -> str:
    ended = f"{reason} (exit code {exit_code})" if reason != "OOMKilled" and exit_code is not None else reason
    times = "once" if restarts == 1 else f"{restarts} times"
    return f"pod {pod}: container {container} restarted {times}, last ended {ended} {_ago(ago)}"


def pod_waiting(pod: str, container: str, reason: str) -> str:
    return f"pod {pod}: container {container} is waiting in {reason}"


def pod_limits(container: str, limits: dict[str, str]) -> str:
    shown = ", ".join(f"{k} {v}" for k, v in sorted(limits.items()))
    return f"container {container} limits: {shown}"


def pod_not_ready(pod: str) -> str:
    return f"pod {pod} is running but not Ready"


def pod_evicted(pod: str) -> str:
    return f"pod {pod} was evicted by its node"


def pod_terminating(pod: str) -> str:
    return f"pod {pod} is terminating"


def pod_rollout(replica_sets: int) -> str:
    return f"a rollout is in progress: {replica_sets} ReplicaSets of the workload have pods"


def pod_oom_escalation(pod: str, container: str, restarts: int, memory: str | None) -> str:
    limit = f"its memory limit ({memory})" if memory else "a memory limit"
    return (
        f"pod {pod}: container {container} was OOM-killed and restarted {restarts} times: a restart brings back the "
        f"same limit; raise {limit} or find what grew, then restart"
    )


def pods_not_asked_silent() -> str:
    """A pod read not sent: its API server gave no answer earlier in this check (executors.pod_evidence.ReadRound)."""
    return "not asked: the API server gave no answer earlier in this check"


def pods_not_asked_spent(seconds: float) -> str:
    """A pod read not sent: the check's time for reading pods is spent (executors.pod_evidence.ReadRound)."""
    return f"not asked: this check's {seconds:g} s for reading pods is spent"
