"""The `lagbot` command line (exit codes of `lagbot check` in lagbot.cli.exits).

No traceback reaches the user: bad input is reported in one message naming what is wrong.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from typer._click.exceptions import NoArgsIsHelpError
from typer.exceptions import TyperException

from lagbot.cli import wording
from lagbot.cli.audit import audit_app
from lagbot.cli.exits import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE
from lagbot.cli.fleet import fleet_app
from lagbot.core.errors import ConfigError

if TYPE_CHECKING:
    from lagbot.engine.check import CheckReport

# Only what every command needs is imported above: each command imports its own modules when it runs, so
# that `lagbot check --help` (and every usage error) answers without loading pydantic, Kafka or Spark.

app = typer.Typer(
    name="lagbot",
    help="Watch Kafka consumer lag, explain it, and fix it with a human's approval.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help, as click lays it out: rich's help panels cost more than the rest of `lagbot check --help`.
    rich_markup_mode=None,
)


def _print_version(wanted: bool) -> None:
    if wanted:
        from importlib.metadata import version as package_version

        print(wording.cli_version(package_version("lagbot")))
        raise typer.Exit(EXIT_OK)


@app.callback()
def _options(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print lagbot's version and exit."),
    ] = False,
) -> None:
    """Watch Kafka consumer lag, explain it, and fix it with a human's approval."""
    if ctx.invoked_subcommand != check.__name__:  # `check` resumes the collector once it has loaded (see there)
        _resume_collector()


_collector_paused = False
"""True while the `lagbot` process has CPython's cyclic garbage collector paused: see `_pause_collector`."""


def _pause_collector() -> None:
    """As the `lagbot` process, pause CPython's cyclic garbage collector while the command line is parsed and the
    command loads its modules (every command but `check` resumes it before its own arguments are parsed).

    Loading makes objects that live as long as the process (modules, classes, validators): collecting them is work
    for nothing. Measured, a `lagbot check` of 200 groups ran 125 young, 12 middle and one full collection, 30 to
    60 ms of a 0.45 s process; paused until the check has loaded, 4 to 8 ms (the collections while `lagbot.cli.main`
    itself is imported, and the check's own). A collector already disabled (by whoever runs lagbot) is left as it is.
    """
    global _collector_paused
    if gc.isenabled():
        gc.disable()
        _collector_paused = True


def _resume_collector() -> None:
    """End `_pause_collector`'s pause: what was made until now is frozen (`gc.freeze`: never walked by a collection
    again, as it would be at every full one) and the collector runs with its usual thresholds."""
    global _collector_paused
    if _collector_paused:
        _collector_paused = False
        gc.freeze()
        gc.enable()


_leave_at_once = False
"""True when `main` runs as the `lagbot` process itself (not called by a program, a test): see `_finish_one_shot`."""


def _finish_one_shot(code: int) -> NoReturn:
    """End a one-shot command that has printed its answer.

    As the `lagbot` process, it leaves at once (output and logs flushed first): tearing the interpreter down
    (freeing every module and object) and the Kafka clients (librdkafka joins its threads) took 0.05 to 0.19 s
    of a 0.9 s `lagbot check` (median 0.14 s) and does nothing the operating system does not do when the process
    ends; a check holds no group membership, transaction or file to close. Called by a program, it raises
    `typer.Exit` as every other command does.
    """
    if _leave_at_once:
        with contextlib.suppress(BrokenPipeError):  # the reader went away (`| head`): nothing left to tell it
            sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    raise typer.Exit(code)


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
    from functools import partial

    from lagbot.cli.settings import load_for_cli
    from lagbot.core.logs import configure_logging
    from lagbot.engine.check import Checker
    from lagbot.engine.collector import make_admin
    from lagbot.engine.window import MemoryWindowStore

    configure_logging(verbose=verbose)
    settings = load_for_cli(config, bootstrap, group)
    store = MemoryWindowStore(samples=max(samples, 2), ttl=settings.window.ttl, arrays=False)
    # A one-shot command reads the groups in its own process: a crash of the Kafka client on a coordinator error
    # is then this command failing with a nonzero exit, and no second interpreter is started (the bot isolates them).
    checker = Checker(settings, store, admin_factory=partial(make_admin, isolate_group_reads=False))
    shown = _Progress(samples, every, quiet=as_json)
    # The check runs from here on while this thread loads what prints its report (rich, the report's layout): most
    # of the check is waiting on the brokers, which does not hold the interpreter.
    checking = _Started(partial(checker.run, samples, every, progress=shown))

    import json

    from rich.console import Console

    from lagbot.cli.exits import exit_code
    from lagbot.cli.terminal import print_report
    from lagbot.engine.report import report_json

    _resume_collector()  # everything is loaded: what is made from here on is the check's own
    report = checking.result()
    if as_json:
        print(json.dumps(report_json(report), indent=2))
    else:
        print_report(report, Console())
    _finish_one_shot(exit_code(report))


class _Progress:
    """`lagbot check`'s progress line between snapshots, on stderr when it is a terminal (never with --json)."""

    def __init__(self, samples: int, every: float, *, quiet: bool) -> None:
        self._samples, self._every, self._quiet = samples, every, quiet

    def __call__(self, taken: int) -> None:
        if self._quiet:
            return
        from rich.console import Console

        from lagbot.core import messages

        console = Console(stderr=True)
        if console.is_terminal:
            console.print(messages.cli_sampling(taken, self._samples, self._every), end="\r")


class _Started:
    """A call running in a thread of its own from creation; `result()` waits for it and returns (or raises) what it
    did. The thread is a daemon: an interrupted command (Ctrl-C reaches the waiting thread) does not wait for it."""

    def __init__(self, call: Callable[[], CheckReport]) -> None:
        self._call = call
        self._value: CheckReport | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="lagbot-check", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._call()
        except BaseException as exc:  # handed to the waiting thread, which reports it as before
            self._error = exc

    def result(self) -> CheckReport:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


@app.command()
def run(
    config: Annotated[Path | None, typer.Option("--config", "-c", help="YAML configuration file.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens (JSON lines).")] = False,
) -> None:
    """Run the Slack bot: scheduled checks, incident threads, slash commands, /healthz and /metrics."""
    from lagbot.app.runner import run_bot
    from lagbot.cli.settings import load_for_cli
    from lagbot.core.logs import configure_logging

    configure_logging(verbose=verbose)
    settings = load_for_cli(config, None, None, takes_bootstrap=False)
    raise typer.Exit(run_bot(settings))


@app.command()
def demo(
    check_only: Annotated[
        bool, typer.Option("--check-only", help="Only `lagbot check` on an embedded lagging group (no bot).")
    ] = False,
    web: Annotated[
        bool, typer.Option("--web", help="Serve the demo's Slack channel as a page on 127.0.0.1; you click Approve.")
    ] = False,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="--web: the page's port (0: a free one).")] = 0,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", min=60, max=900, help="Seconds the bot demo may take at most (170; --web: 900)."),
    ] = None,
    seconds: Annotated[
        float | None, typer.Option("--every", min=0.5, max=60, help="--check-only: seconds between snapshots.")
    ] = None,
    samples: Annotated[
        int | None, typer.Option("--samples", "-n", min=2, max=50, help="--check-only: snapshots to take.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="--check-only: one JSON object instead of tables.")] = False,
) -> None:
    """Run the Slack bot end to end on embedded services: an incident, an approved scale, the lag drained.

    Exit codes: 0 it showed everything, 1 something did not happen (one line says what; logs are kept),
    4 bad usage, 130 interrupted. `--check-only` runs `lagbot check` on an embedded lagging group instead.
    `--web` serves the channel as a page on 127.0.0.1 where you approve (or deny) the remediation yourself.
    """

    if check_only and (web or port):
        raise ConfigError(wording.demo_web_not_with_check_only())
    if port and not web:
        raise ConfigError(wording.demo_option_needs_web("--port"))
    if check_only:
        from lagbot.devkit.demo import run_demo

        raise typer.Exit(run_demo(every=seconds or 4.0, samples=samples or 4, as_json=as_json))
    for option, given in (("--every", seconds is not None), ("--samples", samples is not None), ("--json", as_json)):
        if given:
            raise ConfigError(wording.demo_option_needs_check_only(option))
    if web:
        from lagbot.devkit.demo_web import run_web_demo

        raise typer.Exit(run_web_demo(timeout=timeout or 900.0, port=port))
    from lagbot.devkit.demo_bot import run_bot_demo

    raise typer.Exit(run_bot_demo(timeout=timeout or 170.0))


def _add_policy_commands() -> None:
    from lagbot.policies.cli import app as policy_app

    app.add_typer(policy_app, name="policy")


_add_policy_commands()

app.add_typer(fleet_app)
app.add_typer(audit_app)

EXIT_DRAIN_FAILED = 1


@app.command()
def drain(
    group: Annotated[str, typer.Option("--group", "-g", help="The consumer group to drain (its exact name).")],
    sink: Annotated[
        str | None, typer.Option("--sink", help="Parquet path or Hadoop URL, or kafka:TOPIC to replay.")
    ] = None,
    cluster: Annotated[str | None, typer.Option("--cluster", help="The cluster of the group (by name).")] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="YAML configuration file.")] = None,
    bootstrap: Annotated[
        str | None, typer.Option("--bootstrap", "-b", help="HOST:PORT of a broker (one cluster, no config).")
    ] = None,
    chunk: Annotated[
        int | None, typer.Option("--chunk", min=1, max=100_000_000, help="Offsets per range (one Spark task each).")
    ] = None,
    topic: Annotated[list[str] | None, typer.Option("--topic", "-t", help="Only this topic (repeatable).")] = None,
    master: Annotated[str | None, typer.Option("--master", help="Spark master (default: drain.master).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan; read, write and commit nothing.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log what happens (JSON lines).")] = False,
) -> None:
    """Drain a group's backlog with Spark into a sink, then advance its offsets past it.

    Exit codes: 0 drained (or dry run, or nothing to drain), 1 the drain failed (nothing committed),
    3 the cluster or group could not be read, 4 bad configuration or usage, 70 internal error.
    """
    from lagbot.cli.drain import run_drain
    from lagbot.cli.settings import load_for_cli
    from lagbot.core.logs import configure_logging

    configure_logging(verbose=verbose)
    settings = load_for_cli(config, bootstrap, re.escape(group))
    raise typer.Exit(
        run_drain(
            settings,
            group=group,
            cluster=cluster,
            sink=sink,
            overrides={"chunk": chunk, "master": master, "topics": tuple(topic) if topic else None},
            dry_run=dry_run,
        )
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning every usage or config error into one message and exit code 4.

    `argv` None: this is the `lagbot` process (the console script, `python -m lagbot.cli.main`).
    """
    global _leave_at_once
    _leave_at_once = argv is None
    if argv is None:
        _pause_collector()
    try:
        result = app(args=argv, prog_name="lagbot", standalone_mode=False)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except NoArgsIsHelpError as asked:  # `lagbot` (or `lagbot policy`) alone: the help is the answer
        print(asked.format_message())
        sys.exit(EXIT_OK)
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
        print(wording.cli_internal_error(exc), file=sys.stderr)
        sys.exit(EXIT_INTERNAL)
    sys.exit(result if isinstance(result, int) else EXIT_OK)


if __name__ == "__main__":
    main()
