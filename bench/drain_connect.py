"""Benchmark: the drain through a Spark Connect server, beside the classic in-process local[2] drain.

A backlog of N messages (default 200,000) of 200 bytes on 3 partitions, 90% on partition 0, is produced once
on Apache Kafka (the test rig's KRaft broker, 127.0.0.1). Then, per repetition, side by side, the drain
remediation as the bot runs it (Parquet written by the tasks, manifest, offsets committed), the group reset to 0
and the sink emptied before:

(l) `master: local[2]`: the classic path, PySpark in this process (its JVM a child of this process, a session
    made and stopped per drain, as the bot does);
(c) `master: sc://127.0.0.1:PORT`: a Spark Connect server (pyspark's spark-submit running SparkConnectServer,
    master local[2], started once, as in production) runs the driver and the tasks; this process is its client.

Both use the same 2 task slots. Prints, per run and as medians: the whole drain (plan excluded), the part before
its first progress report, messages/s, and the CPU seconds and memory (RSS) of the bot's side: this process and
every process it started (the classic path's JVM and its Python workers) against the Connect server's. The
memory of a Connect run leaves out processes that were there before it (the classic runs' JVM, which PySpark
keeps for the life of the process); its CPU does not.
Results are recorded in bench/README.md.

    .venv/bin/python bench/drain_connect.py [--messages 200000] [--chunk 25000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from confluent_kafka.admin import AdminClient, NewTopic
from drain_standalone import SHARE, TOPIC, drain_once, produce

from lagbot.devkit.apache_kafka import ApacheKafka
from tests.support.spark_cluster import loopback_env
from tests.support.spark_connect import ConnectServer

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def family(root: int) -> list[int]:
    """`root` and every live process below it (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def cpu_and_rss(
    root: int, exclude: set[int], *, rss_skips: frozenset[int] | set[int] = frozenset()
) -> tuple[float, int]:
    """CPU seconds (user + system) and resident bytes of `root` and its descendants, but not `exclude`'s trees;
    `rss_skips` are left out of the memory only (processes a run found already there)."""
    skip = {pid for other in exclude for pid in family(other)}
    cpu, rss = 0.0, 0
    for pid in family(root):
        if pid in skip:
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / TICK
            if pid not in rss_skips:
                rss += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue
    return cpu, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--chunk", type=int, default=25_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.update(loopback_env())
    work = Path(tempfile.mkdtemp(prefix="lagbot-bench-connect-"))
    rows: dict[str, list[tuple[float, float, float, float, int]]] = {"local[2]": [], "connect": []}
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    try:
        with ApacheKafka().start() as kafka, ConnectServer(work / "connect", "local[2]") as server:
            assert server.process is not None
            admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
            admin.create_topics([NewTopic(TOPIC, len(SHARE), 1)])[TOPIC].result(30)
            produce(kafka.bootstrap, args.messages)
            others = {server.process.pid, *([kafka.pid] if kafka.pid is not None else [])}
            for _ in range(args.repeat):
                for label, master in (("local[2]", "local[2]"), ("connect", server.url)):
                    bot_before, _ = cpu_and_rss(os.getpid(), others)
                    # The classic path's JVM outlives its session: a Connect run is charged only what it starts.
                    found = set(family(os.getpid())) - {os.getpid()} if label == "connect" else set()
                    server_before, _ = cpu_and_rss(server.process.pid, set())
                    seconds, startup, drained = drain_once(kafka.bootstrap, admin, master, work / "sink", args.chunk)
                    bot_after, bot_rss = cpu_and_rss(os.getpid(), others, rss_skips=found)
                    server_after, _ = cpu_and_rss(server.process.pid, set())
                    assert drained == args.messages, f"{label} drained {drained}"
                    bot_cpu, server_cpu = bot_after - bot_before, server_after - server_before
                    rows[label].append((seconds, startup, bot_cpu, server_cpu, bot_rss))
                    print(f"  {label:<9} {seconds:6.1f} s whole, {startup:5.1f} s to the first report, "
                          f"{drained / seconds:9,.0f} msg/s whole; bot side {bot_cpu:5.1f} CPU s, "
                          f"{bot_rss / 2**20:6.0f} MiB; Connect server {server_cpu:5.1f} CPU s; "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{args.messages:,} messages, chunk {args.chunk:,}, {args.repeat} repetition(s), medians:")
    for label, values in rows.items():
        whole, startup, bot_cpu, server_cpu, rss = (statistics.median(column) for column in zip(*values, strict=True))
        print(f"  {label:<9} whole {whole:6.1f} s (min {min(v[0] for v in values):.1f}, max "
              f"{max(v[0] for v in values):.1f}), first report {startup:5.1f} s, {args.messages / whole:9,.0f} msg/s; "
              f"bot side {bot_cpu:5.1f} CPU s, {rss / 2**20:.0f} MiB; server {server_cpu:5.1f} CPU s")  # fmt: skip
    ratio = statistics.median(v[0] for v in rows["connect"]) / statistics.median(v[0] for v in rows["local[2]"])
    print(f"  connect / local[2] whole time: {ratio:.2f}; load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
