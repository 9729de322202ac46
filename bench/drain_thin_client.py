"""Benchmark and proof: a whole drain from an install that has only the Spark Connect client (`lagbot[drain-connect]`).

A fresh virtual environment in a temporary folder gets `pip install '<checkout>[drain-connect]'` (not editable: what
a pip user or the Docker image gets; pip's cache as it is). It must hold `pyspark-client` and no `pyspark` (the full
package) and no `pyspark/jars` folder. Apache Kafka (the test rig's KRaft broker) and a Spark Connect server
(master local[2], started from this checkout's environment: the server side is not what is measured) run on
127.0.0.1. A backlog of N messages on 3 partitions is produced and the group committed at 0; then that venv's own
`lagbot drain --master sc://127.0.0.1:PORT` runs as a process with no Java (an empty JAVA_HOME, nothing on PATH)
and no PYTHONPATH, so it imports only what the thin install has.

Read back and printed: the group's committed offsets against the log end offsets (equal), the Parquet rows
(every offset of the backlog, exactly once, read with pyarrow), the venv's size in MB, the install's and the
drain's wall time. Exits non-zero on any mismatch. Results are recorded in bench/README.md.

    .venv/bin/python bench/drain_thin_client.py [--messages 60000] [--chunk 10000] [--venv DIR]

`--venv DIR` reuses a venv this script (or anyone) installed before, checked the same way, instead of a new one.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
from importlib.metadata import Distribution, PathDistribution, distribution
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import yaml
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic
from extras import make_venv, site_packages, size_mb

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import committed_offsets
from lagbot.engine.collector import ClusterAdmin
from tests.support.drain_rig import exactly_once, fill, parquet_rows
from tests.support.group_commits import commit_to_empty_group
from tests.support.spark_cluster import loopback_env
from tests.support.spark_connect import ConnectServer, no_java_env
from tests.support.thin_client import module_of, uncovered

ROOT = Path(__file__).resolve().parents[1]
TOPIC = "thin-client-events"
GROUP = "bench-thin-client"
SHARE = {0: 0.80, 1: 0.15, 2: 0.05}
LEAKS = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
"""What would let the thin venv's Python see another environment's packages."""


def install(venv: Path) -> float:
    """A new venv at `venv` with `lagbot[drain-connect]` from this checkout, not editable; the seconds it took."""
    make_venv(venv)
    began = time.monotonic()
    pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", f"{ROOT}[drain-connect]"]
    subprocess.run(pip, check=True)
    return time.monotonic() - began


def distributions(venv: Path) -> dict[str, str]:
    """Installed distribution name (normalised) -> version, read from the venv's *.dist-info folders."""
    found = {}
    for info in site_packages(venv).glob("*.dist-info"):
        name, _, version = info.name.removesuffix(".dist-info").partition("-")
        found[name.lower().replace("_", "-")] = version
    return found


def thin_problems(venv: Path, installed: dict[str, str]) -> list[str]:
    """What makes the venv not a thin Spark Connect install (empty when it is one)."""
    problems = []
    if "pyspark-client" not in installed:
        problems.append("pyspark-client is not installed")
    if "pyspark" in installed:
        problems.append(f"the full pyspark {installed['pyspark']} is installed")
    if (site_packages(venv) / "pyspark" / "jars").exists():
        problems.append("the venv has a pyspark/jars folder")
    if "lagbot" not in installed:
        problems.append("lagbot is not installed")
    return problems


def pyspark_modules(dist: Distribution) -> set[str]:
    """The pyspark modules a distribution's RECORD lists."""
    found = {module_of(str(f)) for f in dist.files or ()}
    return {m for m in found if m is not None and m.split(".")[0] == "pyspark"}


def unnamed_gaps(venv: Path) -> tuple[int, list[str]]:
    """How many modules of this environment's full pyspark the venv's pyspark-client lacks, and those of them that
    tests/support/thin_client.py does not name (its fast test would not see them missing)."""
    [info] = site_packages(venv).glob("pyspark_client-*.dist-info")
    full, client = pyspark_modules(distribution("pyspark")), pyspark_modules(PathDistribution(info))
    return len(full - client), uncovered(full, client)


def log_end(bootstrap: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{GROUP}-watermarks"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=15)[1] for p in range(partitions)}
    finally:
        consumer.close()


def drain_env(work: Path) -> dict[str, str]:
    """No Java, nothing on PATH, no variable that would point Python at another environment."""
    env = no_java_env(work)
    for name in LEAKS:
        env.pop(name, None)
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=60_000)
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--venv", type=Path, help="an existing lagbot[drain-connect] venv, instead of a new one")
    args = parser.parse_args()
    os.environ.update(loopback_env())
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="lagbot-bench-thin-"))
    problems: list[str] = []
    try:
        venv = args.venv.resolve() if args.venv else work / "thin"
        make_venv(work / "empty")
        seconds = float("nan") if args.venv else install(venv)
        megabytes = size_mb(venv) - size_mb(work / "empty")
        installed = distributions(venv)
        print(f"lagbot[drain-connect] at {venv}, installed in {seconds:.0f} s: {megabytes:.0f} MB (less an empty "
              "venv); "
              + ", ".join(f"{n} {installed.get(n, '-')}" for n in ("pyspark-client", "pyarrow", "pandas", "grpcio",
                                                                   "protobuf", "numpy")), flush=True)  # fmt: skip
        problems += thin_problems(venv, installed)
        problems += local_refused(venv, work)
        if not problems:
            lacking, unnamed = unnamed_gaps(venv)
            print(f"pyspark {distribution('pyspark').version} modules pyspark-client lacks: {lacking}, "
                  f"not named in tests/support/thin_client.py: {unnamed or 'none'}", flush=True)  # fmt: skip
            if unnamed:
                problems.append(f"tests/support/thin_client.py's NOT_IN_CLIENT misses {', '.join(unnamed)}")
        env = drain_env(work)
        if shutil.which("java", path=env["PATH"]) is not None:
            problems.append("java is on the drain's PATH")
        if problems:
            return report(problems)

        counts = {p: round(args.messages * share) for p, share in SHARE.items()}
        counts[0] += args.messages - sum(counts.values())
        with ApacheKafka().start() as kafka, ConnectServer(work / "connect", "local[2]") as server:
            admin = ClusterAdmin({"bootstrap.servers": kafka.bootstrap})
            try:
                for future in admin.create_topics([NewTopic(TOPIC, len(counts), 1)]).values():
                    future.result(30)
                fill(kafka.bootstrap, TOPIC, counts)
                commit_to_empty_group(admin, GROUP, {(TOPIC, p): 0 for p in counts})
                problems += drain(venv, work, env, kafka.bootstrap, server.url, args.chunk, counts)
                end = log_end(kafka.bootstrap, len(counts))
                offsets = dict(enumerate(committed_offsets(admin, GROUP, TOPIC, len(counts))))
            finally:
                admin.offsets.close()
                del admin  # its librdkafka handle goes while the broker still runs
                gc.collect()
        print(f"log end offsets:   {end}\ncommitted offsets: {offsets}", flush=True)
        if offsets != end or end != counts:
            problems.append(f"committed {offsets}, log end {end}, produced {counts}")
        rows = parquet_rows(work / "sink")
        print(f"Parquet rows: {len(rows):,} (backlog {args.messages:,})", flush=True)
        try:
            exactly_once(rows, {p: range(n) for p, n in counts.items()})
        except AssertionError as exc:
            problems.append(f"the Parquet rows are not the backlog exactly once: {exc or 'offsets differ'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()}")
    return report(problems)


def drain(venv: Path, work: Path, env: dict[str, str], bootstrap: str, url: str, chunk: int,
          counts: dict[int, int]) -> list[str]:  # fmt: skip
    """Run the thin venv's `lagbot drain` through the Connect server at `url`; what went wrong (empty: nothing)."""
    config = work / "lagbot.yaml"
    config.write_text(yaml.safe_dump({
        "clusters": [{"name": "local", "bootstrap_servers": bootstrap}],
        "drain": {"parallelism": 2},
    }))  # fmt: skip
    argv = [str(venv / "bin" / "lagbot"), "drain", "-c", str(config), "-g", GROUP, "--sink", str(work / "sink"),
            "--chunk", str(chunk), "--master", url]  # fmt: skip
    print("$ " + " ".join(argv), flush=True)
    began = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, env=env, cwd=work)
    wall = time.monotonic() - began
    print(result.stdout.rstrip(), flush=True)
    if result.stderr.strip():
        print(result.stderr.rstrip(), file=sys.stderr, flush=True)
    total = sum(counts.values())
    print(f"the drain took {wall:.1f} s wall ({total / wall:,.0f} msg/s), exit {result.returncode}", flush=True)
    problems = []
    if result.returncode != 0:
        problems.append(f"lagbot drain exited {result.returncode}")
    ranges = sum(-(-n // chunk) for n in counts.values())
    if f"drained {total:,} messages of {GROUP} in {ranges} ranges" not in result.stdout:
        problems.append(f"lagbot drain did not say it drained {total:,} messages in {ranges} ranges")
    return problems


def local_refused(venv: Path, work: Path) -> list[str]:
    """The venv's `lagbot drain --master local[2]` (Java on PATH as it is) says by name that it needs the drain extra,
    before it reads the group (no broker listens on 127.0.0.1:1)."""
    argv = [str(venv / "bin" / "lagbot"), "drain", "-b", "127.0.0.1:1", "-g", GROUP, "--sink", str(work / "local"),
            "--master", "local[2]"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in LEAKS}
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, env=env, cwd=work)
    said = " ".join(result.stderr.split())
    print(f"$ lagbot drain --master local[2] ...: exit {result.returncode}, {said}", flush=True)
    if result.returncode != 1 or "has only the Spark Connect client" not in said or "Traceback" in said:
        return [f"a local[2] drain was not refused by name (exit {result.returncode})"]
    return []


def report(problems: list[str]) -> int:
    for problem in problems:
        print(f"MISMATCH: {problem}", file=sys.stderr)
    print("thin client drain: " + ("FAILED" if problems else "OK, exactly once, offsets at the log end"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
