"""`lagbot drain`: plan a drain from the broker's offsets, print it, run it with a progress bar.

The CLI has no executor: a group with running consumers is refused (stop them first, or drain from
Slack, where the policy names the workload to pause). Exit codes are in `lagbot.cli.main.drain`.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from lagbot.cli import wording
from lagbot.core import messages
from lagbot.core.config import ClusterConfig, ConfigError, Settings
from lagbot.core.model import GroupVerdict, Status
from lagbot.engine.check import Checker
from lagbot.engine.collector import make_admin
from lagbot.engine.window import MemoryWindowStore
from lagbot.remediations.base import Plan
from lagbot.remediations.drain.context import DrainContext
from lagbot.remediations.drain.job import JobProgress
from lagbot.remediations.drain.offsets import DrainError
from lagbot.remediations.drain.params import DrainParams
from lagbot.remediations.drain.preflight import java_problem, sink_problem, spark_problem
from lagbot.remediations.drain.remediation import (
    DrainRemediation,
    needs_pause,
    plan_partitions,
    plan_ranges,
)

EXIT_OK, EXIT_FAILED, EXIT_UNREADABLE = 0, 1, 3
MIN_WIDTH = 240
"""The plan's table is never squeezed to the terminal: long lines wrap."""
_FLAGS = {"sink": "--sink", "chunk": "--chunk", "master": "--master", "topics": "--topic"}


def run_drain(
    settings: Settings,
    *,
    group: str,
    cluster: str | None,
    sink: str | None,
    overrides: dict[str, Any],
    dry_run: bool,
    out: Console | None = None,
) -> int:
    """Plan (and unless `dry_run`, execute) a drain of `group`; the process exit code.

    Raises:
        ConfigError: a bad flag or setting (named), or no such group on the cluster.
    """
    out = wide(out or Console())
    err = Console(stderr=True, soft_wrap=True)  # one line per error, never cut at 80 columns
    target = pick_cluster(settings, cluster)
    params = drain_params(settings, sink, overrides)
    if not dry_run and not spark_installed():
        raise ConfigError(wording.cli_drain_needs_spark())
    problem = None if dry_run else preflight(params)
    if problem is not None:
        err.print(f"lagbot: {problem}", style="bold red", highlight=False, markup=False)
        return EXIT_FAILED
    verdict = read_verdict(settings, target, group)
    if isinstance(verdict, str):
        err.print(f"lagbot: {verdict}", style="bold red", highlight=False, markup=False)
        return EXIT_UNREADABLE
    try:
        plan = DrainRemediation().plan(verdict, params, now=time.time())
    except DrainError as exc:
        err.print(f"lagbot: {exc}", style="bold red", highlight=False, markup=False)
        return EXIT_UNREADABLE
    if not dry_run and plan_ranges(plan) and needs_pause(verdict):  # refused before any plan or bar is drawn
        running = wording.cli_drain_consumers_running(group, len(verdict.members), verdict.state.value)
        err.print(f"lagbot: {running}", style="bold red", highlight=False, markup=False)
        return EXIT_FAILED
    print_plan(plan, out)
    if dry_run:
        out.print(wording.cli_drain_dry_run())
        return EXIT_OK
    ok, detail = execute_with_bar(plan, target, settings, out)
    if not ok:
        err.print(f"lagbot: {detail}", style="bold red", highlight=False, markup=False)
        return EXIT_FAILED
    out.print(detail, highlight=False, markup=False)
    return EXIT_OK


def preflight(params: DrainParams) -> str | None:
    """What stops the drain from running here (the PySpark installed, Java, the sink), or None."""
    return spark_problem(params.master) or java_problem(params.master) or sink_problem(params.sink, params.master)


def wide(console: Console) -> Console:
    """The console at least MIN_WIDTH wide."""
    if console.width >= MIN_WIDTH:
        return console
    return Console(file=console.file, width=MIN_WIDTH, force_terminal=console.is_terminal, no_color=console.no_color)


def spark_installed() -> bool:
    """Whether PySpark is installed (the `drain` extra, or `drain-connect` for a Spark Connect server)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return False
    return True


def pick_cluster(settings: Settings, name: str | None) -> ClusterConfig:
    if name is not None:
        return settings.cluster(name)
    if len(settings.clusters) == 1:
        return settings.clusters[0]
    raise ConfigError(wording.bad_option("--cluster", f"required with {len(settings.clusters)} clusters configured"))


def drain_params(settings: Settings, sink: str | None, overrides: dict[str, Any]) -> DrainParams:
    """The drain's parameters from the settings and the flags; a bad value is named by its flag."""
    if sink is None and settings.drain.sink is None:
        raise ConfigError(wording.cli_drain_need_sink())
    try:
        # The CLI cannot pause consumers (no executor): an active group is refused instead.
        return DrainParams.from_settings(settings.drain, sink=sink, pause_consumers=False, **overrides)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        field = str(error["loc"][0]) if error["loc"] else ""
        flag = _FLAGS.get(field, f"drain.{field}")
        raise ConfigError(wording.bad_option(flag, error["msg"].removeprefix("Value error, "))) from None


def read_verdict(settings: Settings, cluster: ClusterConfig, group: str) -> GroupVerdict | str:
    """The group's verdict from one snapshot of the broker, or the reason it could not be read.

    Raises:
        ConfigError: the cluster has no such group.
    """
    only = settings.model_copy(update={"clusters": [cluster]})
    report = Checker(only, MemoryWindowStore(samples=2, ttl=60.0)).run(1, 0.0)
    if cluster.name in report.cluster_errors:
        return report.cluster_errors[cluster.name]
    for verdict in report.verdicts:
        if verdict.group == group:
            if verdict.status is Status.ERR:
                return verdict.error or verdict.severity_reason
            return verdict
    raise ConfigError(wording.cli_drain_no_group(group, cluster.name))


def print_plan(plan: Plan, out: Console) -> None:
    """The plan as approvers see it: summary, steps, and one row per drained partition."""
    out.print(wording.cli_drain_plan_title(plan.group, plan.cluster, plan.before["state"]), style="bold")
    out.print(plan.summary, highlight=False)
    table = Table("TOPIC", "PARTITION", "COMMITTED", "FROM", "TO", "OFFSETS", "RANGES", "LOST", box=None)
    ranges = plan_ranges(plan)
    for p in plan_partitions(plan):
        tasks = sum(1 for r in ranges if (r.topic, r.partition) == (p.topic, p.partition))
        committed = "-" if p.committed is None else f"{p.committed:,}"
        table.add_row(p.topic, str(p.partition), committed, f"{p.start:,}", f"{p.end:,}", f"{p.offsets:,}",
                      str(tasks), f"{p.lost:,}")  # fmt: skip
    out.print(table)
    for number, step in enumerate(plan.steps, 1):
        out.print(f"  {number}. {step}", highlight=False, soft_wrap=True)
    eta = messages.duration(plan.after["eta_seconds"])
    out.print(f"  ETA ~{eta} at {plan.after['slots']} tasks at a time; sink {plan.after['sink']}", highlight=False)


def execute_with_bar(plan: Plan, cluster: ClusterConfig, settings: Settings, out: Console) -> tuple[bool, str]:
    """Execute the plan showing ranges done of the total and messages/s; (ok, detail)."""
    if not plan.after["ranges"]:
        return True, messages.drain_nothing(plan.group)
    columns = (
        TextColumn("draining"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("ranges · {task.fields[messages]} msgs · {task.fields[rate]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task("drain", total=len(plan.after["ranges"]), messages="0", rate="-")

        def on_progress(p: JobProgress) -> None:
            bar.update(task, completed=p.ranges_done, messages=messages.count(p.messages), rate=messages.rate(p.rate))

        context = DrainContext(
            admin=make_admin(cluster),
            progress=lambda line: bar.console.print(line, highlight=False),
            kafka_config=cluster.client_config(),
            settings=settings,
            on_progress=on_progress,
        )
        outcome = DrainRemediation().execute(plan, context)
    return outcome.ok, outcome.detail
