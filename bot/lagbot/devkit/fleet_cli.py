"""`lagbot fleet`: a local consumer fleet for the demo (real consumer processes on this machine).

Exit codes: 0 done, 1 the operation failed (the message says why), 4 bad usage (named).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from lagbot.cli import wording

if TYPE_CHECKING:
    from lagbot.devkit.fleet import LocalExecutor
    from lagbot.remediations.base import Outcome

# The commands (their options are declared in lagbot.cli.main's command tree) import what they use when they run:
# building `lagbot`'s command tree (every command's --help) must not load pydantic or the executors.

EXIT_FAILED = 1
DEFAULT_STATE_DIR = Path(os.environ.get("LAGBOT_FLEET_DIR", "~/.cache/lagbot/fleets"))


def _executor(state_dir: Path) -> LocalExecutor:
    from lagbot.devkit.fleet import LocalExecutor
    from lagbot.remediations.executors.config import LocalConfig

    return LocalExecutor(LocalConfig(state_dir=state_dir))


def _finish(outcome: Outcome) -> int:
    """Print what happened; the exit code."""
    print(outcome.detail)
    return 0 if outcome.ok else EXIT_FAILED


def _run(action: str, call: Callable[[], Outcome]) -> Outcome:
    """Run an executor call, turning ExecutorError into a failed outcome."""
    from lagbot.remediations.base import Outcome
    from lagbot.remediations.executors.base import ExecutorError

    try:
        return call()
    except ExecutorError as exc:
        return Outcome(ok=False, detail=wording.fleet_cli_failed(action, str(exc)))


def start(
    *,
    name: str,
    bootstrap: str,
    group: str,
    topic: list[str],
    replicas: int,
    delay_ms: float,
    commit_every: int,
    stuck_after: int,
    max_seconds: float,
    state_dir: Path,
) -> int:
    """Start a fleet of consumer processes."""
    from pydantic import ValidationError

    from lagbot.core.errors import ConfigError
    from lagbot.devkit.fleet import FleetSpec

    try:
        spec = FleetSpec(
            name=name,
            bootstrap=bootstrap,
            group=group,
            topics=topic,
            replicas=replicas,
            delay_ms=delay_ms,
            commit_every=commit_every,
            stuck_after=stuck_after,
            max_seconds=max_seconds,
        )
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors(include_url=False))
        raise ConfigError(wording.bad_option("fleet start", problems)) from None
    return _finish(_run("start", lambda: _executor(state_dir).start(spec)))


def scale(*, name: str, replicas: int, state_dir: Path) -> int:
    """Start or stop members until REPLICAS run."""
    from lagbot.remediations.executors.base import Workload

    return _finish(_run("scale", lambda: _executor(state_dir).scale(Workload(executor="local", name=name), replicas)))


def restart(*, name: str, member: str | None, state_dir: Path) -> int:
    """Restart every member one at a time, or only --member."""
    from lagbot.core.model import Member
    from lagbot.remediations.executors.base import Workload

    executor, workload = _executor(state_dir), Workload(executor="local", name=name)
    if member is None:
        return _finish(_run("restart", lambda: executor.restart(workload)))
    target = Member(member_id="", client_id=member, host="")
    return _finish(_run("restart", lambda: executor.restart_member(workload, target)))


def stuck(*, name: str, member: str, state_dir: Path) -> int:
    """Make one member stuck: it stays in the group but stops consuming and committing."""
    from lagbot.remediations.base import Outcome
    from lagbot.remediations.executors.base import ExecutorError

    try:
        _executor(state_dir).make_stuck(name, member)
    except ExecutorError as exc:
        return _finish(Outcome(ok=False, detail=wording.fleet_cli_failed("stuck", str(exc))))
    return _finish(Outcome(ok=True, detail=wording.fleet_cli_stuck(name, member)))


def stop(*, name: str, state_dir: Path) -> int:
    """Stop every member (each leaves its group)."""
    return _finish(_run("stop", lambda: _executor(state_dir).stop(name)))


def status(*, name: str, as_json: bool, state_dir: Path) -> int:
    """The live members: client id, pid, state, messages processed, assignment, committed offsets."""
    import json

    from lagbot.remediations.base import Outcome
    from lagbot.remediations.executors.base import ExecutorError

    try:
        members = _executor(state_dir).status(name)
    except ExecutorError as exc:
        return _finish(Outcome(ok=False, detail=wording.fleet_cli_failed("status", str(exc))))
    if as_json:
        rows = [{"client_id": m.record.client_id, "pid": m.record.pid, "report": m.report} for m in members]
        print(json.dumps({"fleet": name, "members": rows}, indent=2))
        return 0
    print(wording.fleet_cli_status_header(name, len(members)))
    for m in members:
        report = m.report or {}
        print(
            wording.fleet_cli_status_row(
                m.record.client_id,
                m.record.pid,
                m.state,
                int(report.get("processed", 0)),
                [f"{t}/{p}" for t, p in report.get("assignment", [])],
                dict(report.get("committed", {})),
            )
        )
    return 0
