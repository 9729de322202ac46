"""Benchmark: how long `lagbot check --help` takes as a process, next to the interpreter starting alone.

Alternately, R times each after one warm-up run of each (bytecode compiled once and cached, as a pip install
leaves it): `python -c pass` (the floor: the interpreter and site-packages), `lagbot check --help`,
`lagbot --version`, and with `--also TREE` the same help from another source tree (e.g. `git archive` of an
earlier commit, run by bench/tree_runner.py). Prints the median wall-clock and CPU seconds of each, the ratio
to the floor, the modules `lagbot check --help` loads that a check does not need before it runs (pydantic,
confluent_kafka, pyspark, numpy, redis, kubernetes, matplotlib, rich), and the machine's load average before and
after. Results are recorded in bench/README.md.

    .venv/bin/python bench/cli_startup.py [--runs 9] [--also TREE]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HEAVY = ("pydantic", "confluent_kafka", "pyspark", "numpy", "redis", "kubernetes", "matplotlib", "rich", "yaml")


@dataclass
class Runs:
    label: str
    argv: list[str]
    env: dict[str, str]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def run(self, timed: bool = True) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(self.argv, env=self.env, check=True, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if timed:
            self.wall.append(wall)
            self.cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def loaded_modules(env: dict[str, str]) -> list[str]:
    """Top-level packages from HEAVY that `lagbot check --help` imports (run in-process, once)."""
    probe = (
        "import sys\n"
        "from lagbot.cli.main import main\n"
        "try:\n    main(['check', '--help'])\nexcept SystemExit:\n    pass\n"
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.split("\n")[-2].split() if out.stdout.strip() else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--also", help="also time the help of lagbot from another source tree")
    args = parser.parse_args()
    lagbot = shutil.which("lagbot", path=str(Path(sys.executable).parent))
    assert lagbot is not None, "lagbot is not installed next to this interpreter"
    with tempfile.TemporaryDirectory(prefix="lagbot-bench-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache  # bytecode cached here, as an installed package has it
        tools = [
            Runs("python -c pass", [sys.executable, "-c", "pass"], env),
            Runs("lagbot check --help", [lagbot, "check", "--help"], env),
            Runs("lagbot --version", [lagbot, "--version"], env),
        ]
        if args.also:
            runner = str(Path(__file__).resolve().parent / "tree_runner.py")
            also = [sys.executable, runner, str(Path(args.also).resolve()), "check", "--help"]
            tools.append(Runs(f"lagbot check --help, code of {Path(args.also).name}", also, env))
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for tool in tools:
            tool.run(timed=False)
        for _ in range(args.runs):
            for tool in tools:
                tool.run()
        print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        floor = statistics.median(tools[0].wall)
        print(f"{'command':48} {'wall s (median)':>16} {'cpu s (median)':>15} {'x floor':>8}")
        for tool in tools:
            wall, cpu = statistics.median(tool.wall), statistics.median(tool.cpu)
            print(f"{tool.label:48} {wall:16.3f} {cpu:15.3f} {wall / floor:8.1f}")
        print(f"heavy packages `lagbot check --help` loads: {' '.join(loaded_modules(env)) or 'none'}")


if __name__ == "__main__":
    main()
