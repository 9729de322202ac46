"""A Python process of this environment that sees PySpark as an install of `pyspark-client` alone sees it.

The `drain-connect` extra installs `pyspark-client`: PySpark's Python modules without the JVM side. What it lacks
beside the full `pyspark` (which the test environment has) is `NOT_IN_CLIENT`, read from pyspark-client 4.2.0's
wheel (its RECORD) against pyspark 4.3.0's modules, and py4j, which pyspark-client does not depend on.
bench/drain_thin_client.py installs the real client and fails when it lacks a module this list does not name.

`thin_argv` runs Python code in a child process where importing any of those raises ModuleNotFoundError, as it
does there; PySpark itself then takes the process for a Connect-only install (`pyspark.util.is_remote_only`, which
tries `pyspark.core`).
"""

from __future__ import annotations

import sys

NOT_IN_CLIENT = (
    "py4j",
    "pyspark.core",
    "pyspark.sql.classic",
    "pyspark.sql.connect.context",
    "pyspark.sql.connect.local_server",
    "pyspark.sql.transpile",
    "pyspark.messages",
    "pyspark.worker_message",
    "pyspark.python",
)
"""Modules (and their submodules) of the full PySpark and its dependencies that pyspark-client does not ship."""

_BLOCKER = """
import importlib.abc, sys
class _NotInClient(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == m or name.startswith(m + ".") for m in {missing!r}):
            raise ModuleNotFoundError(f"No module named {{name!r}} (not in pyspark-client)", name=name)
        return None
sys.meta_path.insert(0, _NotInClient())
"""


def thin_argv(code: str, *args: str) -> list[str]:
    """argv of this interpreter running `code` (then `args` as sys.argv[1:]) without what pyspark-client lacks."""
    return [sys.executable, "-c", _BLOCKER.format(missing=NOT_IN_CLIENT) + code, *args]


def module_of(relative: str) -> str | None:
    """The module name of a file listed in a pyspark wheel's RECORD (pyspark/sql/x.py -> pyspark.sql.x), or None."""
    if not relative.endswith(".py"):
        return None
    parts = relative.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def uncovered(full: set[str], client: set[str]) -> list[str]:
    """Modules of the full PySpark (`full`) that the client lacks and `NOT_IN_CLIENT` does not name (examples apart)."""
    missing = full - client
    named = [m for m in missing if any(m == n or m.startswith(n + ".") for n in NOT_IN_CLIENT)]
    return sorted(m for m in missing - set(named) if not m.startswith("pyspark.examples"))
