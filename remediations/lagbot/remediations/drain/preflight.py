"""What the drain needs from this machine, checked before anything is planned on screen or run.

- Java 17 or newer: PySpark 4 starts a JVM (in-process for local masters, spark-submit's driver otherwise);
  without it PySpark fails with a Java gateway error deep in its start-up. Not through Spark Connect (sc://):
  the driver is the server's, this process is only its client.
- A Parquet sink on the local filesystem, when the job runs on this machine (a local master), must be
  writable by this user: else Hadoop fails with a bare "error occurred while calling oNN.create".

Each check returns the problem as one line (lagbot.remediations.drain.wording), or None.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from lagbot.remediations.drain import wording as drain_wording
from lagbot.remediations.drain.settings import is_connect, is_local
from lagbot.remediations.drain.sinks import ParquetSink, parse_sink

MIN_JAVA = 17


def find_java() -> str | None:
    """`$JAVA_HOME/bin/java` when it exists, else `java` on PATH (as PySpark's launcher looks for it)."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def java_major(java: str) -> int | None:
    """The major version `java -version` reports (1.8 -> 8), or None when it does not run or say."""
    try:
        completed = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', completed.stderr + completed.stdout)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def java_problem(master: str | None = None) -> str | None:
    """None when Java 17+ is there (or not needed: a Spark Connect `master` runs the driver), else what to install."""
    if master is not None and is_connect(master):
        return None
    java = find_java()
    if java is None:
        return drain_wording.drain_needs_java(MIN_JAVA, None, None)
    major = java_major(java)
    if major is None or major < MIN_JAVA:
        return drain_wording.drain_needs_java(MIN_JAVA, java, major)
    return None


def connect_client_only() -> bool:
    """Whether the PySpark installed is the Spark Connect client alone (`pyspark-client`, the drain-connect extra).

    PySpark's own test (`pyspark.util.is_remote_only`: its JVM-side modules, pyspark.core, are absent); False when
    PySpark is missing or too old to have one (3.5: the full package only).
    """
    try:
        from pyspark.util import is_remote_only
    except ImportError:
        return False
    return bool(is_remote_only())


def spark_problem(master: str) -> str | None:
    """None when this install can run a drain on `master`, else what to install.

    With the Spark Connect client alone, PySpark cannot make a session in this process (no SparkContext, no
    jars): a local[N] master is refused before anything is read. spark-submit masters run the job in the
    submitted driver, with that Spark's own PySpark, and sc:// needs nothing more.
    """
    if is_local(master) and connect_client_only():
        return drain_wording.drain_needs_classic_spark(master)
    return None


def sink_problem(sink: str, master: str) -> str | None:
    """None when the sink can be written as far as this machine can tell, else what and where.

    Only a local-filesystem Parquet sink of a job that runs here is checked: elsewhere the path is the
    cluster's to resolve (HDFS, a volume the workers mount ...).
    """
    parsed = parse_sink(sink)
    if not isinstance(parsed, ParquetSink) or not is_local(master) or "://" in parsed.url.replace("file://", "", 1):
        return None
    target = Path(parsed.url.removeprefix("file://").removeprefix("file:"))
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return drain_wording.drain_sink_not_a_directory(parsed.url, str(existing))
    if not os.access(existing, os.W_OK | os.X_OK):
        return drain_wording.drain_sink_not_writable(parsed.url, str(existing))
    return None
