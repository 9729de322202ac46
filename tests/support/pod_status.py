"""A pod's status as a kubelet writes it (the test control plane runs none: it is patched through the status
subresource), and what lagbot says of each status these write: one builder per status the pod tests use.

- `ready`: Running and Ready (the pod follower's pods, a healthy owner).
- `oom_looping`: a container OOM-killed again and again, backing off; `oom_findings` / `oom_refusal`: its lines, and
  why a restart is refused for it.
- `crashed_once`: a container that ended once with Error and runs again; `crashed_findings`: its lines.
- `hostile`: a reason that is a mention, a code span, a terminal escape and far too long (`HOSTILE`), as kept when
  read (`HOSTILE_CUT`).

The containers are those of tests/support/pod_evidence_rig.py's Deployment `orders` (limits `LIMITS`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.support.k8s_fixtures import Cluster

READY = [{"type": "Ready", "status": "True"}]
"""The pod's conditions once its container runs and is ready."""
LIMITS = "container consumer limits: cpu 500m, memory 256Mi"
"""The line of the `orders` container's limits, which every reading of a pod with findings shows."""
HOSTILE = "<!channel> `x`\x1b[2J" + "y" * 200
"""A reason written into a pod's status: a mention, a code span, a terminal escape, and far too long."""
HOSTILE_CUT = HOSTILE[:99] + "…"
"""As it is kept when read: 100 characters, the last an ellipsis."""


def stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def container(restarts: int, reason: str, exit_code: int, finished: float, **state: Any) -> dict[str, Any]:
    """A container status as a kubelet writes it: its last termination and its state now (`waiting=`, `running=`)."""
    return {
        "name": "consumer",
        "image": "example.invalid/consumer:1",
        "imageID": "",
        "restartCount": restarts,
        "ready": "running" in state,
        "started": "running" in state,
        "state": state,
        "lastState": {
            "terminated": {
                "reason": reason,
                "exitCode": exit_code,
                "startedAt": stamp(finished - 30),
                "finishedAt": stamp(finished),
            }
        },
    }


def ready(k8s: Cluster, pod: str, ip: str) -> None:
    """Running and Ready, with the IP `ip`."""
    k8s.set_pod_status(pod, ip, conditions=READY)


def oom_looping(k8s: Cluster, pod: str, ip: str, finished: float, restarts: int) -> None:
    """A container OOM-killed `restarts` times, the last at `finished`, now backing off."""
    backoff = {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}
    status = container(restarts, "OOMKilled", 137, finished, waiting=backoff)
    conditions = [{"type": "Ready", "status": "False"}, {"type": "ContainersReady", "status": "False"}]
    k8s.set_pod_status(pod, ip, containerStatuses=[status], conditions=conditions)


def oom_findings(pod: str, ago: str, restarts: int = 4) -> list[str]:
    """What lagbot says of an `oom_looping` pod, its last OOM kill `ago` ("30 s ago")."""
    return [
        f"pod {pod}: container consumer restarted {restarts} times, last ended OOMKilled {ago}",
        f"pod {pod}: container consumer is waiting in CrashLoopBackOff",
        LIMITS,
        f"pod {pod} is running but not Ready",
    ]


def oom_refusal(pod: str, restarts: int = 4) -> str:
    """Why a restart is not offered for an `oom_looping` pod (its recent OOM kills are the evidence)."""
    return (
        f"pod {pod}: container consumer was OOM-killed and restarted {restarts} times: a restart brings back the same "
        "limit; raise its memory limit (256Mi) or find what grew, then restart"
    )


def crashed_once(k8s: Cluster, pod: str, ip: str, finished: float) -> None:
    """A container that ended once with Error (exit 1) at `finished` and is running again."""
    status = container(1, "Error", 1, finished, running={"startedAt": stamp(finished + 1)})
    k8s.set_pod_status(pod, ip, containerStatuses=[status], conditions=READY)


def crashed_findings(pod: str, ago: str) -> list[str]:
    """What lagbot says of a `crashed_once` pod, its crash `ago` ("2 min ago")."""
    return [f"pod {pod}: container consumer restarted once, last ended Error (exit code 1) {ago}", LIMITS]


def hostile(k8s: Cluster, pod: str, ip: str, finished: float, *, is_ready: bool) -> None:
    """A container restarted twice whose last termination and waiting state say `HOSTILE`."""
    status = container(2, HOSTILE, 1, finished, waiting={"reason": HOSTILE, "message": HOSTILE})
    conditions = READY if is_ready else [{"type": "Ready", "status": "False"}]
    k8s.set_pod_status(pod, ip, containerStatuses=[status], conditions=conditions)
