"""Real consumers for the pods of a Deployment on the real control plane: one consumer process per running pod.

The test control plane has no scheduler and no kubelet (tests/support/k8s_cluster.py), so the follower plays the
kubelet's part for one workload's pods (label app=<name>) and nothing else:

- a pod the ReplicaSet controller made, not yet Running: its status is written as a kubelet would (phase Running,
  a pod IP of its own from 10.244.0.0/24, Ready), through the status subresource;
- a Running pod without a consumer: its container is started, a real Kafka consumer process
  (`python -m lagbot.devkit.fleet_worker`, the local fleet's member) with client.id = the pod's name, so the member
  Kafka reports names its pod (a policy's `member_pod: "{client_id}"`; all members connect from 127.0.0.1 here,
  so the host could not tell the pods apart);
- a consumer whose pod is gone or being deleted: SIGTERM (it commits, leaves the group and exits), SIGKILL of its
  process group if it has not exited `stop_timeout` later;
- a consumer that exited while its pod lives is started again (restartPolicy Always).

It polls the API server (a list of the pods every `every` seconds) in a thread, bounded by `max_seconds`; every
start and stop is kept in `events` in order, and a failure of the thread is raised by `check()` and `stop()`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from lagbot.devkit.fleet import FleetSpec, worker_args
from tests.support.k8s_fixtures import Cluster
from tests.support.pod_status import ready

POD_NETWORK = "10.244.0."


@dataclass
class PodConsumer:
    """The consumer process that runs one pod's container."""

    pod: str
    uid: str
    process: subprocess.Popen[bytes]
    status_file: Path
    stopping_since: float | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def report(self) -> dict[str, Any] | None:
        """What the consumer last wrote to its status file (None before it wrote, or from an older process)."""
        try:
            report: dict[str, Any] = json.loads(self.status_file.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None
        return report if report.get("pid") == self.pid else None

    def settled(self) -> bool:
        """It joined the group and is not rebalancing."""
        report = self.report()
        return bool(report and report.get("assigns", 0) >= 1 and not report.get("rebalancing"))

    def owned(self) -> int:
        return len((self.report() or {}).get("assignment", []))


@dataclass(frozen=True)
class FollowerEvent:
    what: str
    """"running" (the pod's status written), "started", "stopped", "killed", "restarted"."""
    pod: str
    pid: int | None = None
    code: int | None = None
    """How the consumer exited ("stopped", "killed")."""


@dataclass
class _State:
    consumers: dict[str, PodConsumer] = field(default_factory=dict)
    """By pod uid: the consumers of live pods."""
    leaving: list[PodConsumer] = field(default_factory=list)
    """Consumers of pods that are gone, stopping."""
    ips: dict[str, str] = field(default_factory=dict)
    """By pod uid: the IP given to the pod."""
    events: list[FollowerEvent] = field(default_factory=list)


class PodFollower:
    """Keeps one real consumer per running pod of the Deployment `spec.name` in the cluster's namespace.

    `spec` says what the consumers do (bootstrap, group, topics, processing delay, commits); its `replicas` is
    not used: the pods decide. Use as a context manager, or `start()` then `stop()`.
    """

    def __init__(
        self,
        cluster: Cluster,
        spec: FleetSpec,
        folder: Path,
        *,
        every: float = 0.1,
        stop_timeout: float = 15.0,
        max_seconds: float = 600.0,
    ) -> None:
        self.cluster = cluster
        self.spec = spec
        self.folder = folder
        self.every = every
        self.stop_timeout = stop_timeout
        self.max_seconds = max_seconds
        self._state = _State()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"pod-follower-{spec.name}", daemon=True)
        self._error: BaseException | None = None

    # --- lifecycle -----------------------------------------------------------------------------------

    def start(self) -> Self:
        for sub in ("status", "logs"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop following, then stop every consumer (SIGTERM, SIGKILL after stop_timeout); raises what failed."""
        self._stopped.set()
        self._thread.join(timeout=30)
        with self._lock:
            everyone = [*self._state.consumers.values(), *self._state.leaving]
            self._state.consumers.clear()
            self._state.leaving = []
        for consumer in everyone:
            _signal_group(consumer.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout
        for consumer in everyone:
            with contextlib.suppress(subprocess.TimeoutExpired):
                consumer.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            if consumer.process.poll() is None:
                _signal_group(consumer.pid, signal.SIGKILL)
                consumer.process.wait(timeout=15)
        self.check()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    # --- what tests read -----------------------------------------------------------------------------

    def check(self) -> None:
        """Raise what stopped the follower's thread, if anything did."""
        if self._error is not None:
            raise AssertionError(f"the pod follower of {self.spec.name} failed: {self._error!r}") from self._error

    def consumers(self) -> dict[str, PodConsumer]:
        """The consumers of live pods, by pod name."""
        self.check()
        with self._lock:
            return {c.pod: c for c in self._state.consumers.values()}

    def events(self) -> list[FollowerEvent]:
        with self._lock:
            return list(self._state.events)

    def settled(self, pods: int, partitions: int) -> bool:
        """`pods` consumers run, each joined and not rebalancing, owning `partitions` between them."""
        running = list(self.consumers().values())
        return (
            len(running) == pods and all(c.settled() for c in running) and sum(c.owned() for c in running) == partitions
        )

    def log_tails(self, lines: int = 5) -> str:
        """The end of each consumer's log, for a failing test's message."""
        out = []
        for path in sorted((self.folder / "logs").glob("*.log")):
            tail = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
            out.append(f"--- {path.name}\n" + "\n".join(tail))
        return "\n".join(out)

    # --- the loop ------------------------------------------------------------------------------------

    def _run(self) -> None:
        deadline = time.monotonic() + self.max_seconds
        try:
            while not self._stopped.is_set() and time.monotonic() < deadline:
                self.sync()
                self._stopped.wait(self.every)
        except BaseException as exc:  # kept for check(): a thread's exception would otherwise be lost
            self._error = exc

    def sync(self) -> None:
        """One pass: read the pods, then make the consumers match them."""
        listed = self.cluster.core.list_namespaced_pod(
            self.cluster.namespace, label_selector=f"app={self.spec.name}", _request_timeout=(10, 10)
        )
        live = {p.metadata.uid: p for p in listed.items if p.metadata.deletion_timestamp is None}
        for uid, pod in sorted(live.items(), key=lambda item: str(item[1].metadata.name)):
            if pod.status.phase != "Running":
                self._mark_running(uid, str(pod.metadata.name))
            else:
                self._ensure_consumer(uid, str(pod.metadata.name))
        self._let_go(set(live))
        self._reap_leaving()

    def _mark_running(self, uid: str, pod: str) -> None:
        """What a kubelet writes once the pod's container runs."""
        with self._lock:
            ip = self._state.ips.setdefault(uid, f"{POD_NETWORK}{len(self._state.ips) + 1}")
        from kubernetes.client.exceptions import ApiException

        try:
            ready(self.cluster, pod, ip)
        except ApiException as exc:
            if exc.status == 404:  # deleted since it was listed: nothing to run
                return
            raise
        self._record(FollowerEvent("running", pod))

    def _ensure_consumer(self, uid: str, pod: str) -> None:
        with self._lock:
            current = self._state.consumers.get(uid)
        if current is not None and current.process.poll() is None:
            return
        consumer = self._spawn(uid, pod)
        with self._lock:
            self._state.consumers[uid] = consumer
        self._record(FollowerEvent("started" if current is None else "restarted", pod, consumer.pid))

    def _let_go(self, live: set[str]) -> None:
        """SIGTERM the consumers whose pods are gone."""
        with self._lock:
            gone = [uid for uid in self._state.consumers if uid not in live]
            leaving = [self._state.consumers.pop(uid) for uid in gone]
            self._state.leaving.extend(leaving)
        for consumer in leaving:
            consumer.stopping_since = time.monotonic()
            _signal_group(consumer.pid, signal.SIGTERM)

    def _reap_leaving(self) -> None:
        with self._lock:
            leaving = list(self._state.leaving)
        for consumer in leaving:
            if consumer.process.poll() is not None:
                what = "stopped"
            elif time.monotonic() - (consumer.stopping_since or 0.0) > self.stop_timeout:
                _signal_group(consumer.pid, signal.SIGKILL)
                consumer.process.wait(timeout=15)
                what = "killed"
            else:
                continue
            with self._lock:
                self._state.leaving.remove(consumer)
            self._record(FollowerEvent(what, consumer.pod, consumer.pid, consumer.process.returncode))

    def _spawn(self, uid: str, pod: str) -> PodConsumer:
        status = self.folder / "status" / f"{pod}.json"
        status.unlink(missing_ok=True)
        argv = [sys.executable, "-m", "lagbot.devkit.fleet_worker", *worker_args(self.spec, pod)]
        argv += ["--status-file", str(status)]
        with open(self.folder / "logs" / f"{pod}.log", "ab") as log:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(os.environ),
                start_new_session=True,
            )
        return PodConsumer(pod, uid, process, status)

    def _record(self, event: FollowerEvent) -> None:
        with self._lock:
            self._state.events.append(event)


def _signal_group(pid: int, signum: int) -> None:
    """Signal the consumer's process group (it leads its own session); a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)
