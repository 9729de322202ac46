"""The `lagbot` command line itself: every command's options, short flags and defaults, the ranges of its numbers,
and how a command line it refuses is answered (exit 4: one `lagbot:` line naming the option, then the usage).

Options are parsed by the command tree (`command_line`) without running a command; refusals go through `main`.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from lagbot.cli import audit
from lagbot.cli import main as cli_main
from lagbot.cli.main import command_line, main
from lagbot.devkit import fleet_cli as fleet
from lagbot.policies import cli as policy


def parsed(*argv: str) -> dict[str, Any]:
    return vars(command_line().parse_args(list(argv)))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


STATE_DIR = fleet.DEFAULT_STATE_DIR

DEFAULTS = [
    (["check"], cli_main.check,
     {"config": None, "bootstrap": None, "group": None, "samples": 4, "every": 5.0, "timeout": None,
      "as_json": False, "verbose": False}),
    (["run"], cli_main.run, {"config": None, "verbose": False}),
    (["demo"], cli_main.demo,
     {"check_only": False, "web": False, "port": 0, "timeout": None, "seconds": None, "samples": None,
      "as_json": False}),
    (["drain", "--group", "g"], cli_main.drain,
     {"group": "g", "sink": None, "cluster": None, "config": None, "bootstrap": None, "chunk": None, "topic": None,
      "master": None, "dry_run": False, "verbose": False}),
    (["policy", "validate", "a.yaml"], policy.validate, {"files": [Path("a.yaml")]}),
    (["policy", "explain", "prod", "orders"], policy.explain, {"cluster": "prod", "group": "orders", "policy": None}),
    (["fleet", "start", "f", "--bootstrap", "h:1", "--group", "g", "--topic", "t"], fleet.start,
     {"name": "f", "bootstrap": "h:1", "group": "g", "topic": ["t"], "replicas": 1, "delay_ms": 0.0,
      "commit_every": 100, "stuck_after": 0, "max_seconds": 3600, "state_dir": STATE_DIR}),
    (["fleet", "scale", "f", "3"], fleet.scale, {"name": "f", "replicas": 3, "state_dir": STATE_DIR}),
    (["fleet", "restart", "f"], fleet.restart, {"name": "f", "member": None, "state_dir": STATE_DIR}),
    (["fleet", "stuck", "f", "f-1"], fleet.stuck, {"name": "f", "member": "f-1", "state_dir": STATE_DIR}),
    (["fleet", "stop", "f"], fleet.stop, {"name": "f", "state_dir": STATE_DIR}),
    (["fleet", "status", "f"], fleet.status, {"name": "f", "as_json": False, "state_dir": STATE_DIR}),
    (["audit", "export"], audit.export, {"config": None, "since": None, "group": None}),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "command", "options"), DEFAULTS, ids=[" ".join(case[0][:2]) for case in DEFAULTS])
def test_every_command_takes_its_options_with_their_defaults(
    argv: list[str], command: object, options: dict[str, Any]
) -> None:
    assert parsed(*argv) == {"_run": command, **options}


FLAGS = [
    (["check", "-c", "l.yaml", "-b", "h:1", "-g", "o.*", "-n", "2", "--every", "0.5", "--timeout", "2", "--json",
      "-v"],
     {"config": Path("l.yaml"), "bootstrap": "h:1", "group": "o.*", "samples": 2, "every": 0.5, "timeout": 2.0,
      "as_json": True, "verbose": True}),
    (["run", "-c", "l.yaml", "-v"], {"config": Path("l.yaml"), "verbose": True}),
    (["demo", "--check-only", "--every", "1", "-n", "3", "--json"],
     {"check_only": True, "web": False, "port": 0, "timeout": None, "seconds": 1.0, "samples": 3, "as_json": True}),
    (["demo", "--web", "--port", "8080", "--timeout", "300"],
     {"check_only": False, "web": True, "port": 8080, "timeout": 300.0, "seconds": None, "samples": None,
      "as_json": False}),
    (["drain", "-g", "g", "--sink", "kafka:t", "--cluster", "c", "-c", "l.yaml", "-b", "h:1", "--chunk", "10",
      "-t", "a", "--topic", "b", "--master", "local[1]", "--dry-run", "-v"],
     {"group": "g", "sink": "kafka:t", "cluster": "c", "config": Path("l.yaml"), "bootstrap": "h:1", "chunk": 10,
      "topic": ["a", "b"], "master": "local[1]", "dry_run": True, "verbose": True}),
    (["policy", "validate", "a.yaml", "b.yaml"], {"files": [Path("a.yaml"), Path("b.yaml")]}),
    (["policy", "explain", "prod", "orders", "-p", "p.yaml"],
     {"cluster": "prod", "group": "orders", "policy": Path("p.yaml")}),
    (["fleet", "start", "f", "-b", "h:1", "-g", "g", "-t", "a", "-t", "b", "-n", "2", "--delay-ms", "1.5",
      "--commit-every", "10", "--stuck-after", "5", "--max-seconds", "60", "--state-dir", "/tmp/f"],
     {"name": "f", "bootstrap": "h:1", "group": "g", "topic": ["a", "b"], "replicas": 2, "delay_ms": 1.5,
      "commit_every": 10, "stuck_after": 5, "max_seconds": 60.0, "state_dir": Path("/tmp/f")}),
    (["fleet", "restart", "f", "-m", "f-0"], {"name": "f", "member": "f-0", "state_dir": STATE_DIR}),
    (["fleet", "status", "f", "--json"], {"name": "f", "as_json": True, "state_dir": STATE_DIR}),
    (["audit", "export", "-c", "l.yaml", "--since", "24h", "-g", "orders"],
     {"config": Path("l.yaml"), "since": "24h", "group": "orders"}),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "options"), FLAGS, ids=[" ".join(case[0][:2]) for case in FLAGS])
def test_short_flags_and_repeated_options(argv: list[str], options: dict[str, Any]) -> None:
    found = parsed(*argv)
    del found["_run"]
    assert found == options


RANGES = [
    # command line before the value, the option as argparse names it, lowest and highest value taken
    (["check", "--samples"], "-n/--samples", "1", "1000"),
    (["check", "--every"], "--every", "0.1", "3600"),
    (["demo", "--port"], "--port", "0", "65535"),
    (["demo", "--timeout"], "--timeout", "60", "900"),
    (["demo", "--every"], "--every", "0.5", "60"),
    (["demo", "-n"], "-n/--samples", "2", "50"),
    (["drain", "-g", "g", "--chunk"], "--chunk", "1", "100000000"),
    (["fleet", "scale", "f"], "replicas", "0", "64"),
]


@pytest.mark.parametrize(("argv", "option", "low", "high"), RANGES, ids=[case[1] + " " + case[0][0] for case in RANGES])
def test_numbers_are_taken_within_their_range_and_refused_outside(
    capsys: pytest.CaptureFixture[str], argv: list[str], option: str, low: str, high: str
) -> None:
    kind = float if "." in low + high or option in ("--every", "--timeout") else int
    dest = {"-n/--samples": "samples", "replicas": "replicas", "--every": "every" if argv[0] == "check" else "seconds"}
    key = dest.get(option, option.lstrip("-"))
    assert parsed(*argv, low)[key] == kind(low) and parsed(*argv, high)[key] == kind(high)
    below, above = (
        (kind(low) - 1, kind(high) + 1) if kind is int else (f"{float(low) - 0.01:.2f}", f"{float(high) + 0.01:.2f}")
    )
    for outside in (str(below), str(above)):
        code, out, err = run(capsys, *argv, outside)
        assert (code, out) == (4, "")
        message, usage = err.split("\n", 1)
        assert message == f"lagbot: argument {option}: {outside} is not in the range {low} to {high}"
        assert usage.startswith(f"Usage: lagbot {' '.join(argv[:2] if argv[0] == 'fleet' else argv[:1])} [--help]")


REFUSED = [
    (["check", "-n", "x"], "lagbot: argument -n/--samples: 'x' is not a whole number"),
    (["check", "-n", "2.5"], "lagbot: argument -n/--samples: '2.5' is not a whole number"),
    (["check", "--every", "soon"], "lagbot: argument --every: 'soon' is not a number"),
    (["check", "--every", "nan"], "lagbot: argument --every: nan is not in the range 0.1 to 3600"),
    (["check", "--nope"], "lagbot: unrecognized arguments: --nope"),
    (["check", "--samp", "2"], "lagbot: unrecognized arguments: --samp 2"),  # no abbreviations
    (["check", "extra"], "lagbot: unrecognized arguments: extra"),
    (["check", "-n"], "lagbot: argument -n/--samples: expected one argument"),
    (["drain"], "lagbot: the following arguments are required: -g/--group"),
    (["fleet", "start", "f", "-b", "h:1"], "lagbot: the following arguments are required: -g/--group, -t/--topic"),
    (["fleet", "start", "f", "-b", "h:1", "-g", "g", "-t", "t", "-n", "many"],
     "lagbot: argument -n/--replicas: 'many' is not a whole number"),
    (["policy", "validate"], "lagbot: the following arguments are required: FILE"),
    (["fleet", "scale", "f", "-3"], "lagbot: argument replicas: -3 is not in the range 0 to 64"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "message"), REFUSED, ids=[" ".join(case[0]) for case in REFUSED])
def test_a_refused_command_line_is_one_named_line_then_the_command_s_usage(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (4, "")
    first, usage = err.split("\n", 1)
    assert first == message
    command = " ".join(argv[:2] if argv[0] in ("fleet", "policy") else argv[:1])
    assert usage.startswith(f"Usage: lagbot {command} [--help]") and "Traceback" not in err


def test_an_unknown_command_is_named_with_the_commands_there_are(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "chekc")
    assert (code, out) == (4, "")
    assert err.splitlines() == [
        "lagbot: argument COMMAND: invalid choice: 'chekc' (choose from 'check', 'run', 'demo', 'drain', 'policy', "
        "'fleet', 'audit', 'history', 'thresholds')",
        "Usage: lagbot [--help] [--version] COMMAND ...",
    ]


@pytest.mark.parametrize(
    ("group", "commands"),
    [
        ("policy", ["validate", "explain"]),
        ("fleet", ["start", "scale", "restart", "stuck", "stop", "status"]),
        ("audit", ["export"]),
    ],
)
def test_a_command_group_alone_prints_its_help(
    capsys: pytest.CaptureFixture[str], group: str, commands: list[str]
) -> None:
    code, out, err = run(capsys, group)
    assert (code, err) == (0, "")
    assert out.startswith(f"Usage: lagbot {group} [--help] COMMAND ...\n")
    listed = out.split("\nCommands:\n", 1)[1]
    assert [line.split()[0] for line in listed.splitlines() if line.startswith("  ") and line[2] != " "] == commands
    assert run(capsys, group, "--help") == (0, out, "")


HELP = [
    (["check"], ["-c, --config <path>", "-b, --bootstrap <str>", "-g, --group <str>", "-n, --samples <int range>",
                 "[default: 4; 1<=x<=1000]", "--every <float range>", "[default: 5.0; 0.1<=x<=3600]", "--json",
                 "-v, --verbose", "whole name", "-g 'events.*'", "--timeout <float range>", "[0.5<=x<=300]",
                 "Exit codes: 0 every group ok, 1 the worst is warn, 2 the worst is critical or page, 3 a cluster",
                 "4 bad configuration or usage, 70 internal error"]),
    (["run"], ["-c, --config <path>", "-v, --verbose", "/healthz and /metrics", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN",
               "SLACK_SIGNING_SECRET", "LAGBOT_CLUSTERS", "LAGBOT_REDIS_URL",
               "Exit codes: 0 stopped (SIGTERM or Ctrl-C), 3 Slack could not be reached, 4 bad configuration"]),
    (["demo"], ["--check-only", "--web", "[default: 0; 0<=x<=65535]", "[60<=x<=900]", "[0.5<=x<=60]",
                "-n, --samples <int range>", "[2<=x<=50]", "--json", "Exit codes: 0 it showed everything"]),
    (["drain"], ["-g, --group <str>", "[required]", "--sink <str>", "--cluster <str>", "-c, --config <path>",
                 "-b, --bootstrap <str>", "[1<=x<=100000000]", "-t, --topic <str>", "(repeatable)", "--master <str>",
                 "--dry-run", "-v, --verbose", "Exit codes: 0 drained"]),
    (["policy", "validate"], ["FILE [FILE ...]", "Policy YAML files (one or more)."]),
    (["policy", "explain"], ["CLUSTER GROUP", "-p, --policy <path>"]),
    (["fleet", "start"], ["name", "-b, --bootstrap <str>", "-t, --topic <str>", "-n, --replicas <int>",
                          "[default: 100]", "[default: 3600]", f"[default: {STATE_DIR}]"]),
    (["fleet", "scale"], ["name replicas", "[0<=x<=64; required]", "--state-dir <path>"]),
    (["audit", "export"], ["-c, --config <path>", "--since <str>", "-g, --group <str>"]),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "shown"), HELP, ids=[" ".join(case[0]) for case in HELP])
def test_help_names_every_option_with_its_default_and_range(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str], shown: list[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line per option: what is asserted is not cut by the wrapping
    code, out, err = run(capsys, *argv, "--help")
    assert (code, err) == (0, "")
    assert out.startswith(f"Usage: lagbot {' '.join(argv)} [--help]")
    assert [text for text in shown if text not in out] == []


@pytest.mark.parametrize("argv", [[], ["check"], ["run"], ["drain"], ["fleet", "start"]])
def test_dash_h_is_help(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, err = run(capsys, *argv, "-h")
    assert (code, err) == (0, "")
    assert out == run(capsys, *argv, "--help")[1]
    assert out.startswith(f"Usage: lagbot {' '.join(argv)}".rstrip() + " [--help]") and "--help, -h" in out


def test_version_whatever_follows(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--version", "check", "--nope") == (0, f"lagbot {version('lagbot')}\n", "")


def test_an_internal_error_is_one_line_exit_70(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(**_: object) -> int:
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(policy, "explain", broken)
    code, out, err = run(capsys, "policy", "explain", "prod", "orders")
    assert (code, out) == (70, "")
    assert err == "lagbot: internal error: RuntimeError: the disk went away (run with --verbose for the details)\n"
