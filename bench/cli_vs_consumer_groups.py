"""Benchmark: `lagbot check --samples 1` against Apache Kafka's own ConsumerGroupCommand, as whole processes.

On one Apache Kafka 4.1 broker (lagbot.devkit.apache_kafka) with G groups x P partitions (bench/estate.py: groups
sharing topics, a known lag on every partition), alternately, R times each after one warm-up run of each:
- `lagbot check --samples 1 --bootstrap B` as a user runs it (the installed `lagbot` script, its bytecode
  compiled once and cached, as a pip install leaves it); and the same with bytecode caching off
  (PYTHONDONTWRITEBYTECODE=1, as some environments set it: every module of lagbot compiled at each start);
- `ConsumerGroupCommand --bootstrap-server B --describe --all-groups` (what `kafka-consumer-groups.sh` runs),
  from the same jars the broker runs.
Wall-clock seconds of each process (medians), the CPU seconds each used, and the ratio. Then it checks that
every figure agrees: the CURRENT-OFFSET, LOG-END-OFFSET and LAG of every group-partition printed by each
tool, against each other and against what the benchmark wrote. Prints the machine's load average before and
after (the machine is shared). Results are recorded in bench/README.md.

    .venv/bin/python bench/cli_vs_consumer_groups.py [--groups 200] [--partitions 10] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from estate import Estate, GroupPartition, build_estate

from lagbot.devkit.apache_kafka import GROUP_COMMAND, ApacheKafka, java_binary, pinned_version, require_fetched

Figures = dict[GroupPartition, tuple[int, int, int]]
"""(group, topic, partition) -> (current offset, log-end offset, lag)"""

TIMEOUT = 120.0


@dataclass
class Runs:
    """Timed runs of one command."""

    label: str
    argv: list[str]
    env: dict[str, str]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    output: str = ""

    def run(self, timed: bool = True) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        completed = subprocess.run(
            self.argv, capture_output=True, text=True, env=self.env, timeout=TIMEOUT, stdin=subprocess.DEVNULL
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if completed.returncode not in (0, 1, 2):  # lagbot: 0/1/2 are severities; ConsumerGroupCommand: 0
            raise SystemExit(f"{self.label} exited {completed.returncode}:\n{completed.stderr[-2000:]}")
        self.output = completed.stdout
        if timed:
            self.wall.append(wall)
            self.cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)

    @property
    def median(self) -> float:
        return statistics.median(self.wall)


def parse_table(output: str) -> Figures:
    """The rows under every `GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...` header, either tool."""
    figures: Figures = {}
    in_table = False
    for line in output.splitlines():
        words = line.split()
        if words[:6] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]:
            in_table = True
            continue
        if not in_table or len(words) < 6 or not all(w.isdigit() for w in words[2:6]):
            in_table = False  # a blank line, or the causes lagbot prints under a table
            continue
        group, topic, partition, current, log_end, lag = words[:6]
        key = (group, topic, int(partition))
        if key in figures:
            raise SystemExit(f"{key} printed twice")
        figures[key] = (int(current), int(log_end), int(lag))
    return figures


def expected(estate: Estate) -> Figures:
    return {
        (g, t, p): (offset, estate.log_end[(t, p)], estate.log_end[(t, p)] - offset)
        for (g, t, p), offset in estate.committed.items()
    }


def lagbot_env(bytecode: bool, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    if bytecode:
        env["PYTHONPYCACHEPREFIX"] = str(cache)  # compiled once (the warm-up run), outside the checkout
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PYTHONPYCACHEPREFIX"] = str(cache / "never-written")
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--groups-per-topic", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--also",
        metavar="DIR",
        help="also time lagbot from another source tree (e.g. `git archive` of an earlier commit), bytecode cached",
    )
    args = parser.parse_args()

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
    lagbot = Path(sys.executable).with_name("lagbot")
    with ApacheKafka().start() as broker, tempfile.TemporaryDirectory(prefix="lagbot-bench-pyc-") as cache:
        print(
            f"Apache Kafka {pinned_version()} on {broker.bootstrap}; setting up {args.groups} groups x "
            f"{args.partitions} partitions ...",
            flush=True,
        )
        started = time.perf_counter()
        estate = build_estate(broker.bootstrap, "cli", args.groups, args.partitions, args.groups_per_topic)
        print(f"setup took {time.perf_counter() - started:.1f} s ({estate.group_partitions} group-partitions)")
        check = [str(lagbot), "check", "--samples", "1", "--bootstrap", broker.bootstrap]
        tools = [
            Runs("lagbot check --samples 1", check, lagbot_env(True, Path(cache))),
            Runs("lagbot check, bytecode not cached", check, lagbot_env(False, Path(cache))),
            Runs(
                "ConsumerGroupCommand --describe --all-groups",
                [
                    java_binary(),
                    "-cp",
                    f"{require_fetched()}/*",
                    GROUP_COMMAND,
                    "--bootstrap-server",
                    broker.bootstrap,
                    "--describe",
                    "--all-groups",
                ],
                dict(os.environ),
            ),
        ]
        if args.also:
            runner = str(Path(__file__).resolve().parent / "tree_runner.py")
            argv = [sys.executable, runner, str(Path(args.also).resolve()), *check[1:]]
            tools.insert(1, Runs(f"lagbot check, code of {Path(args.also).name}", argv, lagbot_env(True, Path(cache))))
        for tool in tools:
            tool.run(timed=False)  # warm-up: page cache, lagbot's bytecode
        for _ in range(args.runs):
            for tool in tools:
                tool.run()
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    want = expected(estate)
    for tool in tools:
        got = parse_table(tool.output)
        if got != want:
            wrong = sorted(k for k in want.keys() | got.keys() if got.get(k) != want.get(k))
            raise SystemExit(
                f"{tool.label}: {len(wrong)} group-partitions differ, e.g. {wrong[:3]}: "
                f"printed {[got.get(k) for k in wrong[:3]]}, written {[want.get(k) for k in wrong[:3]]}"
            )
    print(
        f"figures agree: {len(want)} group-partitions, the same offsets and lag from both tools and as written "
        f"(total lag {sum(v[2] for v in want.values())})"
    )
    print()
    print(f"{'process':48} {'median s':>9} {'min s':>7} {'max s':>7} {'CPU s (median)':>15}")
    for tool in tools:
        print(
            f"{tool.label:48} {tool.median:9.3f} {min(tool.wall):7.3f} {max(tool.wall):7.3f} "
            f"{statistics.median(tool.cpu):15.3f}"
        )
    reference = tools[-1]
    print()
    for tool in tools[:-1]:
        print(
            f"ConsumerGroupCommand / {tool.label}: {reference.median / tool.median:.2f}x wall, "
            f"{statistics.median(reference.cpu) / statistics.median(tool.cpu):.2f}x CPU"
        )
    print(
        f"runs: {args.runs} of each, alternating; wall times {[round(w, 2) for w in tools[0].wall]} (lagbot), "
        f"{[round(w, 2) for w in reference.wall]} (ConsumerGroupCommand)"
    )


if __name__ == "__main__":
    main()
