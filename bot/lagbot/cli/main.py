"""The `lagbot` command line (exit codes of `lagbot check` in lagbot.cli.exits): its commands, its command tree
(`command_line`: argparse, through lagbot.cli.parsing) and `main`, which runs a command and reports what went wrong.

No traceback reaches the user: bad input is reported in one message naming what is wrong.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from lagbot.cli import wording
from lagbot.cli.exits import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE
from lagbot.cli.parsing import Commands, Number, Parser, UsageError, command, command_group, help_of, sub_commands
from lagbot.core.errors import ConfigError

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

    from lagbot.cli.early import Taken
    from lagbot.core.config import ClusterConfig, Settings
    from lagbot.core.model import ClusterSnapshot
    from lagbot.engine.check import Checker, CheckReport

# Only what every command needs is imported above: each command imports its own modules when it runs, so
# that `lagbot check --help` (and every usage error) answers without loading pydantic, Kafka or Spark.

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
    SystemExit with the code, as `main` does after every other command.
    """
    if _leave_at_once:
        with contextlib.suppress(BrokenPipeError):  # the reader went away (`| head`): nothing left to tell it
            sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    raise SystemExit(code)


def check(
    *,
    config: Path | None,
    bootstrap: str | None,
    group: str | None,
    samples: int,
    every: float,
    timeout: float | None,
    as_json: bool,
    verbose: bool,
) -> NoReturn:
    """Check consumer lag now: per-partition table, status, lag in seconds and likely causes.

    The groups in trouble come first; the tables fit the terminal (owner columns are left out when narrow, long
    names cut in the middle; --json has everything). The last line sums the groups up.

    Exit codes: 0 every group ok, 1 the worst is warn, 2 the worst is critical or page, 3 a cluster or a group could
    not be read (its lag is unknown), 4 bad configuration or usage, 70 internal error.
    """
    from functools import partial

    from lagbot.cli.early import EarlyRead, flag_cluster
    from lagbot.core.logs import configure_logging

    configure_logging(verbose=verbose)
    # The cluster --bootstrap names is read from here on while the settings load (lagbot.cli.early): the read is taken
    # if the validated settings name that very cluster.
    target = flag_cluster(config, bootstrap, group, timeout)
    early = None if target is None else EarlyRead(target)

    from lagbot.cli.settings import load_for_cli

    settings = load_for_cli(config, bootstrap, group, timeout=timeout)
    checker, first = _checker(settings, samples, None if early is None else early.take(settings))
    shown = _Progress(samples, every, quiet=as_json)
    # The check runs from here on while this thread loads what prints its report: most of the check is waiting on
    # the brokers, which does not hold the interpreter.
    checking = _Started(partial(checker.run, samples, every, progress=shown, first=first))

    import json

    from lagbot.cli.exits import exit_code
    from lagbot.cli.plain import plain_output, print_plain, table_width
    from lagbot.cli.pods import with_pods
    from lagbot.cli.reasons import with_reasons

    plain = not as_json and plain_output(sys.stdout, os.environ)
    width = table_width(sys.stdout, os.environ)
    if not plain and not as_json:  # rich may print colours: its console (printed to a pipe or file, none needed)
        from rich.console import Console

        from lagbot.cli.terminal import print_report

    _resume_collector()  # everything is loaded: what is made from here on is the check's own
    report, pods = with_pods(with_reasons(checking.result(), settings), settings)
    if as_json:
        from lagbot.cli.reasons import check_json

        print(json.dumps(check_json(report, pods), indent=2))
    elif plain:
        print_plain(report, sys.stdout, width, group, pods.error)
    else:
        print_report(report, Console(), width, group, pods.error)
    _finish_one_shot(exit_code(report))


def _checker(settings: Settings, samples: int, taken: Taken | None) -> tuple[Checker, dict[str, ClusterSnapshot]]:
    """`lagbot check`'s Checker, and the snapshots it takes as their first sample: with the early read `taken`, its
    snapshot is one, its client reads again (the next samples) and its time index is the one already asked."""
    from functools import partial

    from lagbot.engine.check import Checker
    from lagbot.engine.collector import make_admin
    from lagbot.engine.window import MemoryWindowStore

    store = MemoryWindowStore(samples=max(samples, 2), ttl=settings.window.ttl, arrays=False)
    # A one-shot command reads the groups in its own process: a crash of the Kafka client on a coordinator error
    # is then this command failing with a nonzero exit, and no second interpreter is started (the bot isolates them).
    admin_factory = partial(make_admin, isolate_group_reads=False)
    if taken is None:
        return Checker(settings, store, admin_factory=admin_factory), {}
    cluster = taken.snapshot.cluster
    index = {} if taken.index is None else {cluster: taken.index}
    admin_factory = partial(_reused, taken.admin, cluster, admin_factory)
    return Checker(settings, store, admin_factory=admin_factory, index=index), {cluster: taken.snapshot}


def _reused(
    admin: AdminClient, name: str, make: Callable[[ClusterConfig], AdminClient], cluster: ClusterConfig
) -> AdminClient:
    """`admin` for the cluster `name` (the client of the read taken early); a new client made by `make` for others."""
    return admin if cluster.name == name else make(cluster)


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


def run(*, config: Path | None, verbose: bool) -> int:
    """Run the Slack bot: scheduled checks, incident threads, slash commands, /healthz and /metrics.

    Environment: SLACK_BOT_TOKEN (xoxb-..., always); SLACK_APP_TOKEN (xapp-..., Socket Mode, no public URL) or
    SLACK_SIGNING_SECRET (HTTP mode: Slack posts to /slack/events); without --config, LAGBOT_CLUSTERS (JSON) and
    LAGBOT_REDIS_URL. The configuration may rename the Slack variables (slack.*_env).

    Exit codes: 0 stopped (SIGTERM or Ctrl-C), 3 Slack could not be reached, 4 bad configuration, a missing or
    refused token, an unreachable Redis, 70 internal error.
    """
    from lagbot.app.assembly import SlackUnreachable
    from lagbot.app.runner import run_bot
    from lagbot.cli.exits import EXIT_UNREACHABLE
    from lagbot.cli.settings import load_for_cli
    from lagbot.core.logs import configure_logging

    configure_logging(verbose=verbose)
    settings = load_for_cli(config, None, None, takes_bootstrap=False)
    if settings.executors.local is not None:  # a policy may name the dev kit's fleet (the demo, the tests)
        from lagbot.devkit.fleet import register_local_executor

        register_local_executor()
    try:
        return run_bot(settings)
    except SlackUnreachable as exc:
        print(f"lagbot: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE


def demo(
    *,
    check_only: bool,
    web: bool,
    port: int,
    timeout: float | None,
    seconds: float | None,
    samples: int | None,
    as_json: bool,
) -> int:
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

        return run_demo(every=seconds or 4.0, samples=samples or 4, as_json=as_json)
    for option, given in (("--every", seconds is not None), ("--samples", samples is not None), ("--json", as_json)):
        if given:
            raise ConfigError(wording.demo_option_needs_check_only(option))
    if web:
        from lagbot.devkit.demo_web import run_web_demo

        return run_web_demo(timeout=timeout or 900.0, port=port)
    from lagbot.devkit.demo_bot import run_bot_demo

    return run_bot_demo(timeout=timeout or 170.0)


def drain(
    *,
    group: str,
    sink: str | None,
    cluster: str | None,
    config: Path | None,
    bootstrap: str | None,
    chunk: int | None,
    topic: list[str] | None,
    master: str | None,
    dry_run: bool,
    verbose: bool,
) -> int:
    """Drain a group's backlog with Spark into a sink, then advance its offsets past it.

    Exit codes: 0 drained (or dry run, or nothing to drain), 1 the drain failed (nothing committed),
    3 the cluster or group could not be read, 4 bad configuration or usage, 70 internal error.
    """
    from lagbot.cli.drain import run_drain
    from lagbot.cli.settings import load_for_cli
    from lagbot.core.logs import configure_logging

    configure_logging(verbose=verbose)
    settings = load_for_cli(config, bootstrap, re.escape(group))
    return run_drain(
        settings,
        group=group,
        cluster=cluster,
        sink=sink,
        overrides={"chunk": chunk, "master": master, "topics": tuple(topic) if topic else None},
        dry_run=dry_run,
    )


# The command tree: every command, option and argument of `lagbot`, declared once, here. A command's function is
# called with its options as keyword arguments (their `dest`) and returns the exit code; what `--help` shows of
# defaults and ranges is read off these declarations (lagbot.cli.parsing.HelpLayout). A command's options, and a
# group's commands, are declared when that command is used: `lagbot check` builds no other command's parser.


def command_line() -> Parser:
    """The `lagbot` command line: its own options and its commands."""
    parser = Parser(
        prog="lagbot", description="Watch Kafka consumer lag, explain it, and fix it with a human's approval."
    )
    parser.add_argument("--version", action=_PrintVersion, help=wording.cli_version_option())
    parser.set_defaults(_run=help_of(parser))  # `lagbot` alone: its help
    commands = sub_commands(parser)
    command(commands, "check", check, _check_options)
    command(commands, "run", run, _run_options)
    command(commands, "demo", demo, _demo_options)
    command(commands, "drain", drain, _drain_options)
    command_group(commands, "policy", "Check and explain remediation policies.", _policy_commands)
    command_group(
        commands,
        "fleet",
        "A local consumer fleet for the demo: start, scale, restart, make stuck, stop.",
        _fleet_commands,
    )
    command_group(commands, "audit", "The audit trail of proposals, approvals and remediations.", _audit_commands)
    from lagbot.cli import history  # `history` and `thresholds` (stdlib only at import)

    history.register(commands)
    return parser


class _PrintVersion(argparse.Action):
    """`--version`: print `lagbot <version>` and exit 0, whatever follows it."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import version as package_version

        print(wording.cli_version(package_version("lagbot")))
        parser.exit(EXIT_OK)


def _add_config(parser: Parser) -> None:
    parser.add_argument("-c", "--config", type=Path, help="YAML configuration file.")


def _add_bootstrap(parser: Parser) -> None:
    parser.add_argument("-b", "--bootstrap", help="HOST:PORT of a broker (one cluster, no config).")


def _add_verbose(parser: Parser) -> None:
    parser.add_argument("-v", "--verbose", action="store_true", help="Log what happens (JSON lines).")


def _check_options(parser: Parser) -> None:
    _add_config(parser)
    _add_bootstrap(parser)
    parser.add_argument(
        "-g", "--group", help="Only groups whose whole name matches this regex (a prefix: -g 'events.*')."
    )
    parser.add_argument(
        "-n", "--samples", type=Number(int, (1, 1000)), default=4, help="Snapshots to take (1: lag only)."
    )
    parser.add_argument("--every", type=Number(float, (0.1, 3600)), default=5.0, help="Seconds between snapshots.")
    parser.add_argument(
        "--timeout",
        type=Number(float, (0.5, 300)),
        help="Seconds to wait for each request to the cluster, and for the owners' pods' requests all together "
        "(default: request_timeout, 10).",
    )
    parser.add_argument("--json", dest="as_json", action="store_true", help="Print one JSON object instead of tables.")
    _add_verbose(parser)


def _run_options(parser: Parser) -> None:
    _add_config(parser)
    _add_verbose(parser)


def _demo_options(parser: Parser) -> None:
    parser.add_argument(
        "--check-only", action="store_true", help="Only `lagbot check` on an embedded lagging group (no bot)."
    )
    parser.add_argument(
        "--web", action="store_true", help="Serve the demo's Slack channel as a page on 127.0.0.1; you click Approve."
    )
    parser.add_argument(
        "--port", type=Number(int, (0, 65535)), default=0, help="--web: the page's port (0: a free one)."
    )
    parser.add_argument(
        "--timeout", type=Number(float, (60, 900)), help="Seconds the bot demo may take at most (170; --web: 900)."
    )
    parser.add_argument(
        "--every", dest="seconds", type=Number(float, (0.5, 60)), help="--check-only: seconds between snapshots."
    )
    parser.add_argument("-n", "--samples", type=Number(int, (2, 50)), help="--check-only: snapshots to take.")
    parser.add_argument(
        "--json", dest="as_json", action="store_true", help="--check-only: one JSON object instead of tables."
    )


def _drain_options(parser: Parser) -> None:
    parser.add_argument("-g", "--group", required=True, help="The consumer group to drain (its exact name).")
    parser.add_argument("--sink", help="Parquet path or Hadoop URL, or kafka:TOPIC to replay.")
    parser.add_argument("--cluster", help="The cluster of the group (by name).")
    _add_config(parser)
    _add_bootstrap(parser)
    parser.add_argument("--chunk", type=Number(int, (1, 100_000_000)), help="Offsets per range (one Spark task each).")
    parser.add_argument("-t", "--topic", action="append", help="Only this topic (repeatable).")
    parser.add_argument("--master", help="Spark master (default: drain.master).")
    parser.add_argument("--dry-run", action="store_true", help="Print the plan; read, write and commit nothing.")
    _add_verbose(parser)


def _policy_commands(policies: Commands[Parser]) -> None:
    from lagbot.policies import cli as policy

    validate = command(policies, "validate", policy.validate)
    validate.add_argument("files", metavar="FILE", nargs="+", type=Path, help="Policy YAML files (one or more).")
    explain = command(policies, "explain", policy.explain)
    explain.add_argument("cluster", metavar="CLUSTER", help="The cluster's name, as in lagbot's configuration.")
    explain.add_argument("group", metavar="GROUP", help="The consumer group.")
    explain.add_argument("-p", "--policy", type=Path, help="Policy file (default: the shipped policies/default.yaml).")


def _fleet_commands(fleets: Commands[Parser]) -> None:
    from lagbot.devkit import fleet_cli as fleet

    start = command(fleets, "start", fleet.start)
    start.add_argument("name", help="The fleet's name (client ids are <name>-<index>).")
    start.add_argument("-b", "--bootstrap", required=True, help="HOST:PORT of a broker.")
    start.add_argument("-g", "--group", required=True, help="The consumer group.")
    start.add_argument("-t", "--topic", action="append", required=True, help="A topic to consume (repeat for more).")
    start.add_argument("-n", "--replicas", type=Number(int), default=1, help="Members to start.")
    start.add_argument("--delay-ms", type=Number(float), default=0.0, help="Processing time per message.")
    start.add_argument("--commit-every", type=Number(int), default=100, help="Commit after this many messages.")
    start.add_argument("--stuck-after", type=Number(int), default=0, help="Get stuck after N messages (0: never).")
    start.add_argument("--max-seconds", type=Number(float), default=3600, help="Members exit by themselves after.")
    scale = command(fleets, "scale", fleet.scale)
    scale.add_argument("name", help="The fleet.")
    scale.add_argument("replicas", type=Number(int, (0, 64)), help="Members wanted.")
    restart = command(fleets, "restart", fleet.restart)
    restart.add_argument("name", help="The fleet.")
    restart.add_argument("-m", "--member", help="Only the member with this client id.")
    stuck = command(fleets, "stuck", fleet.stuck)
    stuck.add_argument("name", help="The fleet.")
    stuck.add_argument("member", help="The client id of the member to make stuck.")
    stop = command(fleets, "stop", fleet.stop)
    stop.add_argument("name", help="The fleet.")
    status = command(fleets, "status", fleet.status)
    status.add_argument("name", help="The fleet.")
    status.add_argument("--json", dest="as_json", action="store_true", help="One JSON object.")
    for each in (start, scale, restart, stuck, stop, status):
        each.add_argument(
            "--state-dir",
            type=Path,
            default=fleet.DEFAULT_STATE_DIR,
            help="Directory of the fleets ($LAGBOT_FLEET_DIR).",
        )


def _audit_commands(audits: Commands[Parser]) -> None:
    from lagbot.cli import audit

    export = command(audits, "export", audit.export)
    _add_config(export)
    export.add_argument("--since", help="Only the last DURATION (e.g. 24h, 7d).")
    export.add_argument("-g", "--group", help="Only this group (exact name).")


def main(argv: list[str] | None = None) -> None:
    """Entry point: run a command, turning every usage or config error into one message and exit code 4.

    `argv` None: this is the `lagbot` process (the console script, `python -m lagbot.cli.main`).
    """
    global _leave_at_once
    _leave_at_once = argv is None
    args = sys.argv[1:] if argv is None else argv
    if argv is None:
        _pause_collector()
    if next((word for word in args if not word.startswith("-")), None) != "check":
        _resume_collector()  # `check` resumes it once it has loaded (see there); `lagbot` takes no option values
    try:
        options = vars(command_line().parse_args(args))
        result = options.pop("_run")(**options)
    except UsageError as exc:  # an unknown option, a bad value, a missing argument: named, then the usage
        print(f"lagbot: {exc}", file=sys.stderr)
        print(exc.usage, end="", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except ConfigError as exc:
        print(f"lagbot: {exc}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:  # Ctrl-C: the shell's code for an interrupted command
        sys.exit(130)
    except BrokenPipeError:  # the reader went away (`| head`): nothing left to tell it
        if _leave_at_once:  # nor at exit, when the interpreter flushes stdout again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except Exception as exc:  # a bug or an environment failure: one line, details in the (verbose) log
        logging.getLogger(__name__).info("internal error", exc_info=True)
        print(wording.cli_internal_error(exc), file=sys.stderr)
        sys.exit(EXIT_INTERNAL)
    sys.exit(result)


if __name__ == "__main__":
    main()
