"""The owner's pod as evidence, from the JSON the API server serves (pure: no server; the same pods read from a
real API server are in test_pod_evidence.py)."""

from __future__ import annotations

from lagbot.remediations.executors.pod_evidence import escalation, findings, read_pod

NOW = 1_763_976_600.0  # 2025-11-24T09:30:00Z


def pod(**status: object) -> dict[str, object]:
    return {
        "metadata": {"name": "orders-7d9f8-x2lqp"},
        "spec": {"containers": [{"name": "consumer", "resources": {"limits": {"memory": "256Mi", "cpu": "1"}}}]},
        "status": {"phase": "Running", **status},
    }


def container(restarts: int, reason: str, exit_code: int, finished: str, waiting: str | None = None) -> object:
    state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
    terminated = {"reason": reason, "exitCode": exit_code, "finishedAt": finished}
    return {
        "name": "consumer",
        "restartCount": restarts,
        "ready": False,
        "state": state,
        "lastState": {"terminated": terminated},
    }


def test_an_error_exit_names_its_code_and_is_not_an_escalation() -> None:
    evidence = read_pod(pod(containerStatuses=[container(2, "Error", 3, "2025-11-24T09:25:00Z")]))
    assert findings(evidence, NOW, 600) == [
        "pod orders-7d9f8-x2lqp: container consumer restarted 2 times, last ended Error (exit code 3) 5 min ago",
        "container consumer limits: cpu 1, memory 256Mi",
        "pod orders-7d9f8-x2lqp is running but not Ready",
    ]
    assert escalation(evidence, NOW, 600) is None


def test_oom_killed_again_and_again_is_an_escalation_but_twice_is_not() -> None:
    looping = read_pod(
        pod(containerStatuses=[container(3, "OOMKilled", 137, "2025-11-24T09:29:00Z", "CrashLoopBackOff")])
    )
    assert escalation(looping, NOW, 600) == (
        "pod orders-7d9f8-x2lqp: container consumer was OOM-killed and restarted 3 times: a restart brings back the "
        "same limit; raise its memory limit (256Mi) or find what grew, then restart"
    )
    twice = read_pod(pod(containerStatuses=[container(2, "OOMKilled", 137, "2025-11-24T09:29:00Z")]))
    assert escalation(twice, NOW, 600) is None


def test_evicted_and_terminating_pods() -> None:
    evicted = read_pod(pod(phase="Failed", reason="Evicted"))
    assert findings(evicted, NOW, 600) == ["pod orders-7d9f8-x2lqp was evicted by its node"]
    going = pod(conditions=[{"type": "Ready", "status": "True"}])
    going["metadata"] = {"name": "orders-7d9f8-x2lqp", "deletionTimestamp": "2025-11-24T09:29:50Z"}
    assert findings(read_pod(going), NOW, 600) == ["pod orders-7d9f8-x2lqp is terminating"]


def test_a_healthy_pod_says_nothing() -> None:
    healthy = read_pod(pod(conditions=[{"type": "Ready", "status": "True"}]))
    assert healthy.ready and findings(healthy, NOW, 600) == [] and escalation(healthy, NOW, 600) is None


def test_every_text_of_the_status_is_kept_cut_to_a_hundred_characters() -> None:
    """A reason is free text in the status (anyone who may patch it writes it): kept short, whatever is written."""
    long = "<!channel> " + "r" * 500
    cut = long[:99] + "…"
    evidence = read_pod(pod(reason=long, containerStatuses=[container(2, long, 1, "2025-11-24T09:25:00Z", long)]))
    [c] = evidence.containers
    assert (evidence.reason, c.last_reason, c.waiting_reason) == (cut, cut, cut)
    assert findings(evidence, NOW, 600)[:2] == [
        f"pod orders-7d9f8-x2lqp: container consumer restarted 2 times, last ended {cut} (exit code 1) 5 min ago",
        f"pod orders-7d9f8-x2lqp: container consumer is waiting in {cut}",
    ]
    exact = "r" * 100
    assert read_pod(pod(reason=exact)).reason == exact  # a hundred is kept whole
