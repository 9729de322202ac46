"""`lagbot check` run in a fresh interpreter that reports what it imported and the processes it started: what
tests/cli/test_cli_imports.py and tests/cli/test_check_pods.py hold a check to (it loads only what it needs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

NOT_FOR_A_CHECK = (
    "pyspark",
    "pyarrow",
    "pandas",
    "kubernetes",
    "redis",
    "numpy",
    "slack_bolt",
    "slack_sdk",
    "matplotlib",
    "apscheduler",
    "prometheus_client",
    "lagbot.policies.model",
    "lagbot.remediations.drain.job",
    "lagbot.remediations.registry",
    "yaml",  # no configuration file given: nothing to parse
    "typer",  # the command line is parsed with the standard library's argparse
    "rich.console",  # the report goes to a pipe: laid out without rich's console (lagbot.cli.plain)
)

PROGRAM = """
import json, subprocess, sys
started = []
class Counted(subprocess.Popen):
    def __init__(self, args, *rest, **options):
        started.append(args)
        super().__init__(args, *rest, **options)
subprocess.Popen = Counted
from lagbot.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    code = done.code
loaded = sorted(m for m in json.loads(sys.stdin.read()) if m in sys.modules)
print(json.dumps({"exit": code, "loaded": loaded, "processes": len(started)}), file=sys.stderr)
"""


def run_check(*args: str, unwanted: tuple[str, ...] = NOT_FOR_A_CHECK) -> tuple[str, dict[str, object]]:
    # FORCE_COLOR and TTY_COMPATIBLE would make rich print colours to the pipe; COLUMNS and LINES would fit the
    # table to a terminal's width (a pipe has none) and cut the group's name.
    forced = ("FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS", "LINES")
    completed = subprocess.run(
        [sys.executable, "-c", PROGRAM, *args],
        env={name: value for name, value in os.environ.items() if name not in forced},
        input=json.dumps(unwanted),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return completed.stdout, json.loads(completed.stderr.strip().splitlines()[-1])
