"""The `lagbot` command line.

Exit codes of `lagbot check`: 0 nothing at warn or above, 1 warn, 2 critical or page, 3 a cluster
unreachable (you cannot know its lag, so it outranks severities), 4 bad configuration or usage.
No traceback reaches the user: bad input is reported in one message naming what is wrong.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from typer.exceptions import TyperException

from bot import messages
from bot.check import Checker, CheckReport
from bot.config import ConfigError, build_settings, read_yaml
from bot.logs import configure_logging
from bot.model import Severity
from bot.report import report_json
from bot.terminal import print_report
from bot.window import MemoryWindowStore

EXIT_OK, EXIT_WARN, EXIT_CRITICAL, EXIT_UNREACHABLE, EXIT_USAGE = 0, 1, 2, 3, 4
EXIT_INTERNAL = 70  # EX_SOFTWARE: not the user's input, a failure of lagbot or its environment

app = typer.Typer(
    name="lagbot",
    help="Watch Kafka consumer lag, explain it, and fix it with a human's approval.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def exit_code(report: CheckReport) -> int:
    """The process exit code for a check report."""
    if report.cluster_errors:
        return EXIT_UNREACHABLE
    worst = report.worst_severity
    if worst >= Severity.CRITICAL:
        return EXIT_CRITICAL
    return EXIT_WARN if worst is Severity.WARN else EXIT_OK


def settings_data(config: Path | None, bootstrap: str | None, group: str | None) -> tuple[dict[str, Any], str]:
    """The raw settings (before validation) from the config file and the command-line overrides."""
    if config is None and bootstrap is None and "LAGBOT_CLUSTERS" not in os.environ:
        raise ConfigError(messages.cli_no_cluster())
    data: dict[str, Any] = read_yaml(config) if config is not None else {}
    source = str(config) if config is not None else "command line"
    if bootstrap is not None:
        clusters = data.get("clusters")
        if config is None or clusters is None:
            data["clusters"] = [{"name": "default", "bootstrap_servers": bootstrap}]
        elif isinstance(clusters, list) and len(clusters) == 1 and isinstance(clusters[0], dict):
            data["clusters"] = [{**clusters[0], "bootstrap_servers": bootstrap}]
        else:
            raise ConfigError(messages.bad_option("--bootstrap", messages.cli_bootstrap_needs_one_cluster()))
    if group is not None:
        _check_regex(group)
        for cluster in data.get("clusters") or []:
            if isinstance(cluster, dict):
                filters = dict(cluster.get("groups") or {})
                cluster["groups"] = {**filters, "include": [group]}
    return data, source


def _check_regex(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigError(messages.bad_option("--group", messages.bad_regex(pattern, str(exc)))) from exc


@app.command()
def check(
    config: Annotated[Path | None, typer.Option("--config", "-c", help="YAML configuration file.")] = None,
    bootstrap: Annotated[
        str | None, typer.Option("--bootstrap", "-b", help="HOST:PORT of a broker (one cluster, no config).")
    ] = None,
    group: Annotated[str | None, typer.Option("--group", "-g", help="Only groups matching this regex.")] = None,
    samples: Annotated[
        int, typer.Option("--samples", "-n", min=1, max=1000, help="Snapshots to take (1: lag only).")
    ] = 4,
    every: Annotated[float, typer.Option("--every", min=0.1, max=3600, help="Seconds between snapshots.")] = 5.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens (JSON lines).")] = False,
) -> None:
    """Check consumer lag now: per-partition table, status, lag in seconds and likely causes."""
    configure_logging(verbose=verbose)
    data, source = settings_data(config, bootstrap, group)
    settings = build_settings(data, source=source)
    store = MemoryWindowStore(samples=max(samples, 2), ttl=settings.window.ttl)
    checker = Checker(settings, store)
    console = Console(stderr=True)
    snapshots = checker.sample()
    for _ in range(samples - 1):
        if not as_json and console.is_terminal:
            console.print(messages.cli_sampling(samples, every), end="\r")
        time.sleep(every)
        snapshots = checker.sample()
    report = checker.evaluate(snapshots)
    if as_json:
        print(json.dumps(report_json(report), indent=2))
    else:
        print_report(report, Console())
    raise typer.Exit(exit_code(report))


@app.command()
def demo(
    seconds: Annotated[float, typer.Option("--every", min=0.5, max=60, help="Seconds between snapshots.")] = 4.0,
    samples: Annotated[int, typer.Option("--samples", "-n", min=2, max=50, help="Snapshots to take.")] = 4,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Start an embedded broker, create a lagging group, and run `lagbot check` on it."""
    from bot.demo import run_demo

    raise typer.Exit(run_demo(every=seconds, samples=samples, as_json=as_json))


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning every usage or config error into one message and exit code 4."""
    try:
        result = app(args=argv, standalone_mode=False)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except TyperException as exc:  # usage errors: unknown option, bad value, missing argument
        print(f"lagbot: {exc.format_message()}", file=sys.stderr)
        ctx = getattr(exc, "ctx", None)
        if ctx is not None:
            print(ctx.get_usage(), file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except typer.Abort:
        sys.exit(130)
    except ConfigError as exc:
        print(f"lagbot: {exc}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except Exception as exc:  # a bug or an environment failure: one line, details in the (verbose) log
        logging.getLogger(__name__).info("internal error", exc_info=True)
        print(messages.cli_internal_error(exc), file=sys.stderr)
        sys.exit(EXIT_INTERNAL)
    sys.exit(result if isinstance(result, int) else EXIT_OK)


if __name__ == "__main__":
    main()
