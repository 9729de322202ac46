"""`lagbot fleet`: a local consumer fleet for the demo (real consumer processes on this machine).

Exit codes: 0 done, 1 the operation failed (the message says why), 4 bad usage (named).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lagbot.cli import wording

if TYPE_CHECKING:
    from lagbot.remediations.base import Outcome
    from lagbot.remediations.executors.local import LocalExecutor

# The commands import what they use when they run: building `lagbot`'s command tree (every command's --help)
# must not load pydantic or the executors.

EXIT_FAILED = 1
DEFAULT_STATE_DIR = Path(os.environ.get("LAGBOT_FLEET_DIR", "~/.cache/lagbot/fleets"))

fleet_app = typer.Typer(
    name="fleet",
    help="A local consumer fleet for the demo: start, scale, restart, make stuck, stop.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

StateDir = Annotated[
    Path, typer.Option("--state-dir", help="Directory of the fleets ($LAGBOT_FLEET_DIR).", show_default=True)
]


def _executor(state_dir: Path) -> LocalExecutor:
    from lagbot.remediations.executors.config import LocalConfig
    from lagbot.remediations.executors.local import LocalExecutor

    return LocalExecutor(LocalConfig(state_dir=state_dir))


def _finish(outcome: Outcome) -> None:
    typer.echo(outcome.detail)
    raise typer.Exit(0 if outcome.ok else EXIT_FAILED)


def _run(action: str, call: Callable[[], Outcome]) -> Outcome:
    """Run an executor call, turning ExecutorError into a failed outcome."""
    from lagbot.remediations.base import Outcome
    from lagbot.remediations.executors.base import ExecutorError

    try:
        return call()
    except ExecutorError as exc:
        return Outcome(ok=False, detail=wording.fleet_cli_failed(action, str(exc)))


@fleet_app.command()
def start(
    name: Annotated[str, typer.Argument(help="The fleet's name (client ids are <name>-<index>).")],
    bootstrap: Annotated[str, typer.Option("--bootstrap", "-b", help="HOST:PORT of a broker.")],
    group: Annotated[str, typer.Option("--group", "-g", help="The consumer group.")],
    topic: Annotated[list[str], typer.Option("--topic", "-t", help="A topic to consume (repeat for more).")],
    replicas: Annotated[int, typer.Option("--replicas", "-n", help="Members to start.")] = 1,
    delay_ms: Annotated[float, typer.Option("--delay-ms", help="Processing time per message.")] = 0.0,
    commit_every: Annotated[int, typer.Option("--commit-every", help="Commit after this many messages.")] = 100,
    stuck_after: Annotated[int, typer.Option("--stuck-after", help="Get stuck after N messages (0: never).")] = 0,
    max_seconds: Annotated[float, typer.Option("--max-seconds", help="Members exit by themselves after.")] = 3600,
    state_dir: StateDir = DEFAULT_STATE_DIR,
) -> None:
    """Start a fleet of consumer processes."""
    from pydantic import ValidationError

    from lagbot.core.errors import ConfigError
    from lagbot.remediations.executors.local import FleetSpec

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
    _finish(_run("start", lambda: _executor(state_dir).start(spec)))


@fleet_app.command()
def scale(
    name: Annotated[str, typer.Argument(help="The fleet.")],
    replicas: Annotated[int, typer.Argument(min=0, max=64, help="Members wanted.")],
    state_dir: StateDir = DEFAULT_STATE_DIR,
) -> None:
    """Start or stop members until REPLICAS run."""
    from lagbot.remediations.executors.base import Workload

    _finish(_run("scale", lambda: _executor(state_dir).scale(Workload(executor="local", name=name), replicas)))


@fleet_app.command()
def restart(
    name: Annotated[str, typer.Argument(help="The fleet.")],
    member: Annotated[str | None, typer.Option("--member", "-m", help="Only the member with this client id.")] = None,
    state_dir: StateDir = DEFAULT_STATE_DIR,
) -> None:
    """Restart every member one at a time, or only --member."""
    from lagbot.core.model import Member
    from lagbot.remediations.executors.base import Workload

    executor, workload = _executor(state_dir), Workload(executor="local", name=name)
    if member is None:
        _finish(_run("restart", lambda: executor.restart(workload)))
    else:
        target = Member(member_id="", client_id=member, host="")
        _finish(_run("restart", lambda: executor.restart_member(workload, target)))


@fleet_app.command()
def stuck(
    name: Annotated[str, typer.Argument(help="The fleet.")],
    member: Annotated[str, typer.Argument(help="The client id of the member to make stuck.")],
    state_dir: StateDir = DEFAULT_STATE_DIR,
) -> None:
    """Make one member stuck: it stays in the group but stops consuming and committing."""
    from lagbot.remediations.base import Outcome
    from lagbot.remediations.executors.base import ExecutorError

    try:
        _executor(state_dir).make_stuck(name, member)
    except ExecutorError as exc:
        _finish(Outcome(ok=False, detail=wording.fleet_cli_failed("stuck", str(exc))))
    _finish(Outcome(ok=True, detail=wording.fleet_cli_stuck(name, member)))


@fleet_app.command()
def stop(
    name: Annotated[str, typer.Argument(help="The fleet.")],
    state_dir: StateDir = DEFAULT_STATE_DIR,
) -> None:
    """Stop every member (each leaves its group)."""
    _finish(_run("stop", lambda: _executor(state_dir).stop(name)))


@fleet_app.command()
def status(
    name: Annotated[str, typer.Argument(help="The fleet.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    state_dir: StateDir = DEFAULT_STATE_DIR,
) -> None:
    """The live members: client id, pid, state, messages processed, assignment, committed offsets."""
    import json

    from lagbot.remediations.base import Outcome
    from lagbot.remediations.executors.base import ExecutorError

    try:
        members = _executor(state_dir).status(name)
    except ExecutorError as exc:
        _finish(Outcome(ok=False, detail=wording.fleet_cli_failed("status", str(exc))))
    if as_json:
        rows = [{"client_id": m.record.client_id, "pid": m.record.pid, "report": m.report} for m in members]
        typer.echo(json.dumps({"fleet": name, "members": rows}, indent=2))
        return
    typer.echo(wording.fleet_cli_status_header(name, len(members)))
    for m in members:
        report = m.report or {}
        typer.echo(
            wording.fleet_cli_status_row(
                m.record.client_id,
                m.record.pid,
                m.state,
                int(report.get("processed", 0)),
                [f"{t}/{p}" for t, p in report.get("assignment", [])],
                dict(report.get("committed", {})),
            )
        )
