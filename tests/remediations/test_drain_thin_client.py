"""The drain with only what the `drain-connect` extra installs: `pyspark-client`, no JVM side of PySpark, no py4j.

Each test runs a child Python of this environment in which the modules pyspark-client does not ship cannot be
imported (tests/support/thin_client.py), as in such an install; PySpark then takes itself for the Connect client
alone. The whole drain from a real pyspark-client install, through a real Spark Connect server, is
bench/drain_thin_client.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from lagbot.remediations.drain.connect import RECEIPT_FIELDS
from lagbot.remediations.drain.preflight import connect_client_only, spark_problem
from tests.support.thin_client import NOT_IN_CLIENT, module_of, thin_argv, uncovered

DRAIN_CLIENT = """
import lagbot.cli.main, lagbot.cli.drain
from lagbot.remediations.drain import connect, job, preflight, remediation, run, sinks
from pyspark.sql import SparkSession
from pyspark.util import is_remote_only
assert is_remote_only(), "the child still sees the full PySpark"
assert preflight.connect_client_only()
assert callable(SparkSession.builder.remote)
print(len(connect.receipt_schema().fields), connect._receipt_batch(connect._not_written(
    job.OffsetRange("t", 0, 0, 5))).num_rows)
"""


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=cwd)


def test_every_module_of_the_connect_drain_imports_with_only_the_connect_client(tmp_path: Path) -> None:
    result = run(thin_argv(DRAIN_CLIENT), tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(len(RECEIPT_FIELDS)), "1"]  # the receipt's Spark schema, a row in Arrow


def test_a_local_master_is_refused_by_name_when_only_the_connect_client_is_installed(tmp_path: Path) -> None:
    """No broker is asked: the refusal comes before the group is read (nothing listens on 127.0.0.1:1)."""
    main = "import sys; from lagbot.cli.main import main; sys.argv[0] = 'lagbot'; main()"
    argv = thin_argv(main, "drain", "-b", "127.0.0.1:1", "-g", "orders", "--sink", str(tmp_path / "out"),
                     "--master", "local[2]")  # fmt: skip

    result = run(argv, tmp_path)

    assert result.returncode == 1, result.stderr
    said = " ".join(result.stderr.split())
    assert "master local[2] runs Spark in this process, and this install has only the Spark Connect client" in said
    assert "pip install 'lagbot[drain]' (PySpark with its jars; Java 17+)" in said  # shown as it is, not as markup
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_with_the_full_pyspark_nothing_is_refused() -> None:
    assert not connect_client_only()
    assert spark_problem("local[2]") is None and spark_problem("sc://connect:15002") is None


def test_the_modules_the_client_lacks_are_found_from_wheel_records() -> None:
    shared = ("pyspark/__init__.py", "pyspark/sql/session.py")
    jvm_side = ("pyspark/core/rdd.py", "pyspark/sql/classic/window.py", "pyspark/new_jvm_side.py", "pyspark/jars/x.jar")
    full = {module_of(f) for f in shared + jvm_side}
    client = {module_of(f) for f in shared}

    assert uncovered({m for m in full if m}, {m for m in client if m}) == ["pyspark.new_jvm_side"]
    assert "py4j" in NOT_IN_CLIENT
