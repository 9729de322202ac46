"""`lagbot drain` where a newcomer hits it: no Java, a sink it cannot write, running consumers, a Java error.

Each refusal is one line on stderr, before any plan or progress bar, and changes nothing on the broker; output
to a pipe (not a terminal) is never cut at 80 columns, and no JVM or librdkafka line leaks into it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lagbot.remediations.drain.job import spark_session, write_text
from lagbot.remediations.drain.sinks import first_line
from tests.conftest import Kafka, Names
from tests.support.drain_rig import fill, parquet_rows
from tests.support.group_commits import committed

pytestmark = pytest.mark.integration

NOISE = ("WARNING: Using incubator modules", "%3|", "%4|", "%5|", "%6|", "%7|", "SLF4J", "log4j", "Traceback")


def lagbot(*args: str, env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lagbot.cli.main", *args],
        capture_output=True, text=True, timeout=timeout, check=False, env=env,
    )  # fmt: skip


def without_java(tmp_path: Path) -> dict[str, str]:
    """The environment of a machine with no Java: no JAVA_HOME, a PATH without a java."""
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    return {**env, "PATH": str(empty)}


def test_no_java_is_one_line_before_anything_else(tmp_path: Path) -> None:
    result = lagbot("drain", "-b", "127.0.0.1:9", "-g", "orders", "--sink", str(tmp_path / "d"),
                    env=without_java(tmp_path))  # fmt: skip
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "lagbot: the drain runs Spark, which needs Java 17 or newer, and there is none: install a Java runtime "
        "(Debian: apt install openjdk-17-jre-headless) or set JAVA_HOME\n"
    )


def test_an_old_java_is_named_with_its_version(tmp_path: Path) -> None:
    home = tmp_path / "jdk8"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text("#!/bin/sh\necho 'openjdk version \"1.8.0_392\"' >&2\n")
    java.chmod(0o755)
    env = {**without_java(tmp_path), "JAVA_HOME": str(home)}
    result = lagbot("drain", "-b", "127.0.0.1:9", "-g", "orders", "--sink", str(tmp_path / "d"), env=env)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        f"lagbot: the drain runs Spark, which needs Java 17 or newer; {java} is Java 8: install a Java runtime "
        "(Debian: apt install openjdk-17-jre-headless) or set JAVA_HOME"
    ]


def test_a_sink_under_a_file_says_what_and_where(kafka: Kafka, names: Names, tmp_path: Path) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    fill(kafka.bootstrap, topic, {0: 100})
    kafka.commit(group, {(topic, 0): 0})
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    sink = blocker / "drained"
    result = lagbot("drain", "-b", kafka.bootstrap, "-g", group, "--sink", str(sink), "--master", "local[1]")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        f"lagbot: sink {sink}: cannot write there: {blocker} is a file, not a directory; nothing was done"
    ]
    assert committed(kafka, group, topic, 1) == {0: 0}


def test_running_consumers_are_refused_before_the_plan_and_the_bar(kafka: Kafka, names: Names, tmp_path: Path) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    fill(kafka.bootstrap, topic, {0: 500})
    kafka.commit(group, {(topic, 0): 100})
    consumer = kafka.consumer(group)
    try:
        consumer.subscribe([topic])
        kafka.wait_assigned(consumer)
        result = lagbot("drain", "-b", kafka.bootstrap, "-g", group, "--sink", str(tmp_path / "d"),
                        "--master", "local[1]")  # fmt: skip
    finally:
        consumer.close()
    assert (result.returncode, result.stdout) == (1, "")
    # One line, longer than 80 columns, not wrapped although stderr is a pipe.
    assert result.stderr.splitlines() == [
        f"lagbot: group {group!r} has 1 running consumer(s) (state Stable): stop them first, or drain it from "
        "Slack, where the policy names the workload to pause; nothing was done"
    ]
    assert not (tmp_path / "d").exists()


def test_a_drain_prints_no_jvm_or_librdkafka_lines(kafka: Kafka, names: Names, tmp_path: Path) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    fill(kafka.bootstrap, topic, {0: 1_000})
    kafka.commit(group, {(topic, 0): 0})
    sink = tmp_path / "d"
    result = lagbot("drain", "-b", kafka.bootstrap, "-g", group, "--sink", str(sink), "--chunk", "500",
                    "--master", "local[1]")  # fmt: skip
    assert result.returncode == 0, result.stderr
    leaked = [line for line in (result.stdout + result.stderr).splitlines() if any(n in line for n in NOISE)]
    assert leaked == []
    assert len(parquet_rows(sink)) == 1_000 and committed(kafka, group, topic, 1) == {0: 1_000}


def test_a_java_error_is_reported_by_what_it_says_not_by_the_call(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    spark: Any = spark_session("local[1]", app_name="lagbot-drain-edges")
    try:
        with pytest.raises(Exception) as caught:
            write_text(spark, f"file://{blocker}/manifests/drain.json", "{}")
    finally:
        spark.stop()
    assert str(caught.value).startswith("An error occurred while calling o")  # what Py4J says first
    assert first_line(caught.value) == (
        f"org.apache.hadoop.fs.ParentNotDirectoryException: Parent path is not a directory: file:{blocker}"
    )
