"""The local executor: a real fleet of consumer processes on this machine (the demo and the tests).

A fleet is a directory under `LocalConfig.state_dir`, so any process (two bot replicas, the CLI, a
test) can operate on it; every change holds an exclusive `fcntl` lock on the fleet's `lock` file:

    <state_dir>/<fleet>/fleet.json           the FleetSpec (versioned JSON)
    <state_dir>/<fleet>/members/<index>.json one record per member: index, client id, pid, start time, argv
    <state_dir>/<fleet>/status/<client>.json what the member reports (lagbot.devkit.fleet_worker)
    <state_dir>/<fleet>/logs/<client>.log    its output
    <state_dir>/<fleet>/stuck/<client>       present: the member is (made) stuck

Members run `python -m lagbot.devkit.fleet_worker`, each in its own session (process group), with
client.id "<fleet>-<index>", as Kafka then reports it. A member is live when its pid runs and was
started at the recorded time (a reused pid is not mistaken for it); records of dead members are
removed whenever the fleet is read. Stopping sends SIGTERM (the member commits, leaves the group
and exits), then SIGKILL to its group after `stop_timeout`. A new member counts as started when it
reports that it runs (its status file), within `start_timeout`.

The `Workload` of a fleet is `Workload(executor="local", name=<fleet>)`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lagbot.core import codec
from lagbot.core.model import Member
from lagbot.devkit import wording as devkit_wording
from lagbot.remediations.base import Outcome
from lagbot.remediations.executors import wording as executors_wording
from lagbot.remediations.executors.base import Executor, ExecutorError, Workload
from lagbot.remediations.executors.config import LocalConfig, register_executor

RECORD_VERSION = 1
_POLL = 0.05


class FleetSpec(BaseModel):
    """What a fleet consumes and how its members behave (see lagbot.devkit.fleet_worker)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
    bootstrap: str = Field(min_length=1)
    group: str = Field(min_length=1)
    topics: list[str] = Field(min_length=1)
    replicas: int = Field(default=1, ge=0, le=64)
    delay_ms: float = Field(default=0.0, ge=0, le=60_000)
    """Processing time per message: a slow consumer (throughput deficit)."""
    commit_every: int = Field(default=100, ge=1, le=1_000_000)
    commit_interval_ms: int = Field(default=1000, ge=10, le=600_000)
    stuck_after: int = Field(default=0, ge=0)
    """Every member gets stuck after this many messages (0: never); see also `LocalExecutor.make_stuck`."""
    max_seconds: float = Field(default=3600.0, gt=0, le=86_400)
    """A member exits by itself after this long, so a forgotten fleet does not run forever."""
    kafka: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """Extra librdkafka properties (SASL, SSL ...)."""

    def to_json(self) -> str:
        return SPEC_CODEC.encode(self)

    @classmethod
    def from_json(cls, raw: str) -> FleetSpec:
        """Raises StoredFormatError (lagbot.core.stored) when it is not a spec lagbot wrote."""
        return SPEC_CODEC.decode(raw)


SPEC_CODEC = codec.register(codec.Codec("fleet spec", FleetSpec, RECORD_VERSION))


@dataclass(frozen=True)
class MemberRecord:
    """One member process, as the fleet directory records it."""

    index: int
    client_id: str
    pid: int
    proc_start: int | None
    """The process's start time in clock ticks since boot (/proc/<pid>/stat), None where /proc is absent."""
    started_at: float
    argv: list[str]

    def to_json(self) -> str:
        return RECORD_CODEC.encode(self)

    @classmethod
    def from_json(cls, raw: str) -> MemberRecord:
        """Raises StoredFormatError (lagbot.core.stored) when it is not a record lagbot wrote."""
        return RECORD_CODEC.decode(raw)


RECORD_CODEC = codec.register(codec.Codec("member record", MemberRecord, RECORD_VERSION))


@dataclass(frozen=True)
class MemberStatus:
    """A live member and what it last reported (None before its first report)."""

    record: MemberRecord
    report: dict[str, Any] | None

    @property
    def state(self) -> str:
        return str(self.report["state"]) if self.report else "unknown"

    @property
    def settled(self) -> bool:
        """The member joined the group and no rebalance is under way for it."""
        return bool(self.report and self.report.get("assigns", 0) >= 1 and not self.report.get("rebalancing"))

    @property
    def assignment(self) -> list[tuple[str, int]]:
        return [(str(t), int(p)) for t, p in (self.report or {}).get("assignment", [])]


def proc_start_time(pid: int) -> int | None:
    """The start time of `pid` (clock ticks since boot), None if it is gone, a zombie, or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    except OSError:
        return None
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def process_alive(pid: int, proc_start: int | None) -> bool:
    """True when `pid` runs and (where /proc exists) is the same process that started at `proc_start`."""
    if Path("/proc/self/stat").exists():
        current = proc_start_time(pid)
        return current is not None and (proc_start is None or current == proc_start)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LocalExecutor(Executor):
    """Starts, scales, restarts and stops fleets of consumer processes on this machine."""

    name = "local"

    def __init__(self, config: LocalConfig) -> None:
        self.config = config
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # --- fleets ---------------------------------------------------------------------------------

    def start(self, spec: FleetSpec) -> Outcome:
        """Create (or re-create) the fleet and start `spec.replicas` members; refused while members run."""
        with self._locked(spec.name, create=True):
            live = self._live(spec.name)
            if live:
                return Outcome(ok=False, detail=devkit_wording.fleet_already_running(spec.name, len(live)))
            self._write(self._dir(spec.name) / "fleet.json", spec.to_json())
            try:
                started = self._start_members(spec, list(range(spec.replicas)))
            except ExecutorError as exc:
                return Outcome(ok=False, detail=str(exc))
        pids = [r.pid for r in started]
        detail = devkit_wording.fleet_started(spec.name, spec.group, len(started))
        return Outcome(ok=True, detail=detail, data={"before": 0, "after": len(started), "pids": pids})

    def stop(self, fleet: str) -> Outcome:
        """Stop every member of the fleet (SIGTERM, then SIGKILL after stop_timeout); the spec is kept."""
        if not (self._dir(fleet) / "fleet.json").exists():
            return Outcome(ok=True, detail=devkit_wording.fleet_unknown(fleet), data={"before": 0, "after": 0})
        with self._locked(fleet):
            live = self._live(fleet)
            self._stop_members(fleet, live)
        return Outcome(
            ok=True, detail=devkit_wording.fleet_stopped(fleet, len(live)), data={"before": len(live), "after": 0}
        )

    def stop_all(self) -> None:
        """Stop every fleet under the state directory (a test's teardown)."""
        for fleet in self.fleets():
            self.stop(fleet)

    def fleets(self) -> list[str]:
        """The names of the fleets under the state directory."""
        root = self.config.state_dir
        if not root.is_dir():
            return []
        return sorted(p.name for p in root.iterdir() if (p / "fleet.json").is_file())

    def spec(self, fleet: str) -> FleetSpec:
        """The fleet's spec.

        Raises:
            ExecutorError: the fleet was never started (or its spec is unreadable).
        """
        path = self._dir(fleet) / "fleet.json"
        try:
            return FleetSpec.from_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ExecutorError(devkit_wording.fleet_unknown(fleet)) from None
        except (ValueError, ValidationError) as exc:
            raise ExecutorError(devkit_wording.fleet_unreadable(str(path), str(exc))) from exc

    def members(self, fleet: str) -> list[MemberRecord]:
        """The fleet's live members by index; records of dead ones are removed."""
        self._check_name(fleet)
        if not self._dir(fleet).is_dir():
            return []
        with self._locked(fleet):
            return self._live(fleet)

    def status(self, fleet: str) -> list[MemberStatus]:
        """The live members and their last reports."""
        return [MemberStatus(r, self._report(fleet, r)) for r in self.members(fleet)]

    def wait_settled(self, fleet: str, *, partitions: int | None = None, timeout: float = 60.0) -> list[MemberStatus]:
        """Wait until every live member joined and none is rebalancing (and, given `partitions`, the members
        own that many partitions between them): the group is stable.

        Raises:
            ExecutorError: not settled within `timeout` (the message shows each member's state).
        """
        deadline = time.monotonic() + timeout
        status = self.status(fleet)
        while time.monotonic() < deadline:
            if _settled(status, partitions):
                return status
            time.sleep(0.2)
            status = self.status(fleet)
        if _settled(status, partitions):
            return status
        members = [f"{m.record.client_id}: {m.state}, owns {len(m.assignment)}" for m in status]
        raise ExecutorError(devkit_wording.fleet_not_settled(fleet, timeout, members))

    def make_stuck(self, fleet: str, client_id: str) -> None:
        """Make one member stuck (it stops polling and committing but stays in the group) until restarted."""
        self._check_name(fleet)
        if not any(r.client_id == client_id for r in self.members(fleet)):
            raise ExecutorError(devkit_wording.fleet_no_member(fleet, client_id, self._client_ids(fleet)))
        flag = self._dir(fleet) / "stuck" / client_id
        flag.parent.mkdir(parents=True, exist_ok=True)
        flag.touch()

    # --- the contract ---------------------------------------------------------------------------

    def replicas(self, workload: Workload) -> int:
        return len(self.members(self._fleet(workload)))

    def scale(self, workload: Workload, replicas: int) -> Outcome:
        """Start members (lowest free index first) or stop them (highest index first) until `replicas` run."""
        fleet = self._fleet(workload)
        if replicas < 0:
            raise ExecutorError(executors_wording.executor_bad_replicas(replicas))
        try:
            with self._locked(fleet):
                spec = self.spec(fleet)
                live = self._live(fleet)
                before = len(live)
                if replicas > before:
                    taken = {r.index for r in live}
                    free = [i for i in range(replicas + before) if i not in taken][: replicas - before]
                    self._start_members(spec, free)
                elif replicas < before:
                    self._stop_members(fleet, sorted(live, key=lambda r: r.index)[replicas:])
        except ExecutorError as exc:
            return Outcome(ok=False, detail=str(exc))
        detail = executors_wording.executor_scaled(f"fleet {fleet}", before, replicas)
        return Outcome(ok=True, detail=detail, data={"before": before, "after": replicas})

    def restart(self, workload: Workload) -> Outcome:
        """A rolling restart: one member at a time is stopped, started again, and awaited until it joined
        the group (within start_timeout) before the next; a member that does not join halts the restart."""
        fleet = self._fleet(workload)
        try:
            with self._locked(fleet):
                spec = self.spec(fleet)
                live = self._live(fleet)
                pids = []
                for record in live:
                    new = self._replace(spec, record)
                    self._await_joined(fleet, new)
                    pids.append(new.pid)
        except ExecutorError as exc:
            return Outcome(ok=False, detail=str(exc))
        return Outcome(ok=True, detail=devkit_wording.fleet_restarted(fleet, len(pids)), data={"pids": pids})

    def restart_member(self, workload: Workload, member: Member) -> Outcome:
        """Restart the member whose client id is `member.client_id` (its stuck flag is cleared)."""
        fleet = self._fleet(workload)
        try:
            with self._locked(fleet):
                spec = self.spec(fleet)
                live = self._live(fleet)
                record = next((r for r in live if r.client_id == member.client_id), None)
                if record is None:
                    ids = [r.client_id for r in live]
                    return Outcome(ok=False, detail=devkit_wording.fleet_no_member(fleet, member.client_id, ids))
                new = self._replace(spec, record)
        except ExecutorError as exc:
            return Outcome(ok=False, detail=str(exc))
        detail = executors_wording.executor_member_restarted(
            member.client_id, f"pid {record.pid} -> {new.pid}", f"fleet {fleet}"
        )
        return Outcome(
            ok=True, detail=detail, data={"client_id": member.client_id, "old_pid": record.pid, "new_pid": new.pid}
        )

    # --- members --------------------------------------------------------------------------------

    def _replace(self, spec: FleetSpec, record: MemberRecord) -> MemberRecord:
        self._stop_members(spec.name, [record])
        (self._dir(spec.name) / "stuck" / record.client_id).unlink(missing_ok=True)
        return self._start_members(spec, [record.index])[0]

    def _start_members(self, spec: FleetSpec, indexes: list[int]) -> list[MemberRecord]:
        """Spawn one member per index, then wait until each reports that it runs.

        Raises:
            ExecutorError: a member exited or did not report within start_timeout (it is stopped).
        """
        records = [self._spawn(spec, index) for index in indexes]
        deadline = time.monotonic() + self.config.start_timeout
        for record in records:
            self._await_report(spec.name, record, deadline, records)
        return records

    def _spawn(self, spec: FleetSpec, index: int) -> MemberRecord:
        fleet_dir = self._dir(spec.name)
        client_id = f"{spec.name}-{index}"
        status = fleet_dir / "status" / f"{client_id}.json"
        for sub in ("members", "status", "logs", "stuck"):
            (fleet_dir / sub).mkdir(parents=True, exist_ok=True)
        status.unlink(missing_ok=True)
        argv = [
            self.config.python or sys.executable,
            "-m",
            "lagbot.devkit.fleet_worker",
            *worker_args(spec, client_id),
        ]
        argv += ["--status-file", str(status), "--stuck-flag", str(fleet_dir / "stuck" / client_id)]
        env = dict(os.environ)  # members import the installed `lagbot`, as this process does
        with open(fleet_dir / "logs" / f"{client_id}.log", "ab") as log:
            try:
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            except OSError as exc:
                raise ExecutorError(executors_wording.executor_failed(f"start {client_id}", str(exc))) from exc
        self._children[process.pid] = process
        record = MemberRecord(index, client_id, process.pid, proc_start_time(process.pid), time.time(), argv)
        self._write(fleet_dir / "members" / f"{index}.json", record.to_json())
        return record

    def _await_report(self, fleet: str, record: MemberRecord, deadline: float, batch: list[MemberRecord]) -> None:
        while time.monotonic() < deadline:
            report = self._report(fleet, record)
            if report is not None and report.get("pid") == record.pid and report.get("state") != "starting":
                return
            if not self._alive(record):
                break
            time.sleep(_POLL)
        tail = self._log_tail(fleet, record.client_id)
        self._stop_members(fleet, batch)
        raise ExecutorError(devkit_wording.fleet_member_not_started(record.client_id, self.config.start_timeout, tail))

    def _await_joined(self, fleet: str, record: MemberRecord) -> None:
        deadline = time.monotonic() + self.config.start_timeout
        while time.monotonic() < deadline:
            if MemberStatus(record, self._report(fleet, record)).settled:
                return
            time.sleep(_POLL)
        raise ExecutorError(devkit_wording.fleet_member_not_joined(record.client_id, self.config.start_timeout))

    def _stop_members(self, fleet: str, records: list[MemberRecord]) -> None:
        """SIGTERM each member's group, wait (one deadline for all), SIGKILL what is left; records removed."""
        for record in records:
            if self._alive(record):
                _signal_group(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.config.stop_timeout
        while any(self._alive(r) for r in records) and time.monotonic() < deadline:
            time.sleep(_POLL)
        for record in records:
            if self._alive(record):
                _signal_group(record.pid, signal.SIGKILL)
            self._reap(record.pid)
            (self._dir(fleet) / "members" / f"{record.index}.json").unlink(missing_ok=True)

    def _live(self, fleet: str) -> list[MemberRecord]:
        """Live members by index; the records of dead ones are removed. Call with the lock held."""
        live = []
        for path in sorted((self._dir(fleet) / "members").glob("*.json")):
            try:
                record = MemberRecord.from_json(path.read_text(encoding="utf-8"))
            except (ValueError, TypeError) as exc:
                raise ExecutorError(devkit_wording.fleet_unreadable(str(path), str(exc))) from exc
            if self._alive(record):
                live.append(record)
            else:
                self._reap(record.pid)
                path.unlink(missing_ok=True)
        return sorted(live, key=lambda r: r.index)

    def _alive(self, record: MemberRecord) -> bool:
        child = self._children.get(record.pid)
        if child is not None and child.poll() is not None:
            return False
        return process_alive(record.pid, record.proc_start)

    def _reap(self, pid: int) -> None:
        child = self._children.pop(pid, None)
        if child is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=1)

    # --- files ----------------------------------------------------------------------------------

    def _fleet(self, workload: Workload) -> str:
        if workload.executor != "local":
            raise ExecutorError(executors_wording.executor_wrong_workload("local", workload.executor, workload.name))
        self._check_name(workload.name)
        return workload.name

    @staticmethod
    def _check_name(fleet: str) -> None:
        if not fleet or fleet.startswith(".") or "/" in fleet or fleet != os.path.basename(fleet):
            raise ExecutorError(devkit_wording.fleet_bad_name(fleet))

    def _dir(self, fleet: str) -> Path:
        self._check_name(fleet)
        return self.config.state_dir / fleet

    def _client_ids(self, fleet: str) -> list[str]:
        return [r.client_id for r in self.members(fleet)]

    def _report(self, fleet: str, record: MemberRecord) -> dict[str, Any] | None:
        path = self._dir(fleet) / "status" / f"{record.client_id}.json"
        try:
            report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None
        return report if report.get("pid") == record.pid else None

    def _log_tail(self, fleet: str, client_id: str, lines: int = 10) -> str:
        path = self._dir(fleet) / "logs" / f"{client_id}.log"
        try:
            return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    @staticmethod
    def _write(path: Path, text: str) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)

    @contextlib.contextmanager
    def _locked(self, fleet: str, *, create: bool = False) -> Iterator[None]:
        """Hold the fleet's exclusive lock (across processes), waiting at most lock_timeout."""
        fleet_dir = self._dir(fleet)
        if create:
            fleet_dir.mkdir(parents=True, exist_ok=True)
        elif not fleet_dir.is_dir():
            raise ExecutorError(devkit_wording.fleet_unknown(fleet))
        with open(fleet_dir / "lock", "a+b") as lock:
            deadline = time.monotonic() + self.config.lock_timeout
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise ExecutorError(devkit_wording.fleet_locked(fleet, self.config.lock_timeout)) from None
                    time.sleep(_POLL)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _settled(status: list[MemberStatus], partitions: int | None) -> bool:
    if not status or not all(m.settled for m in status):
        return False
    return partitions is None or sum(len(m.assignment) for m in status) == partitions


def worker_args(spec: FleetSpec, client_id: str) -> list[str]:
    """The fleet_worker options of one member (without its status and stuck-flag paths)."""
    return [
        "--bootstrap",
        spec.bootstrap,
        "--group",
        spec.group,
        "--topics",
        ",".join(spec.topics),
        "--client-id",
        client_id,
        "--delay-ms",
        str(spec.delay_ms),
        "--commit-every",
        str(spec.commit_every),
        "--commit-interval-ms",
        str(spec.commit_interval_ms),
        "--stuck-after",
        str(spec.stuck_after),
        "--max-seconds",
        str(spec.max_seconds),
        "--kafka",
        json.dumps(spec.kafka),
    ]


def _signal_group(pid: int, signum: int) -> None:
    """Signal the member's process group (it leads its own session); a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def register_local_executor() -> None:
    """Let lagbot.remediations.executors.config's `build_executor("local", ...)` build a LocalExecutor."""
    register_executor("local", LocalExecutor)
