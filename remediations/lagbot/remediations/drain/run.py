"""Running the drain's Spark job: in this process for local masters, or through spark-submit (its progress and
manifest read from its output)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lagbot.remediations.base import (
    ExecutionContext,
)
from lagbot.remediations.drain import wording as drain_wording
from lagbot.remediations.drain.context import spark_of
from lagbot.remediations.drain.job import PROGRESS_PREFIX, RESULT_PREFIX, JobConfig, JobProgress, spark_submit_argv
from lagbot.remediations.drain.offsets import (
    DrainError,
)
from lagbot.remediations.drain.plan import (
    Manifest,
)
from lagbot.remediations.drain.settings import (
    DrainSettings,
)

if TYPE_CHECKING:
    from lagbot.remediations.drain.params import DrainParams


def run_local(config: JobConfig, params: DrainParams, context: ExecutionContext, on_progress: Any) -> Manifest:
    """The job inside this process (PySpark local mode); a session made here is stopped afterwards."""
    from lagbot.remediations.drain.job import run_job, spark_session

    given = spark_of(context)
    owned = given is None
    spark = spark_session(params.master, app_name=f"lagbot-drain-{config.group}") if given is None else given
    try:
        return run_job(spark, config, on_progress=on_progress)
    finally:
        if owned:
            spark.stop()


def spark_submit_executable(configured: str) -> str:
    """`configured` if found on PATH (or a path), else the spark-submit shipped inside the pyspark wheel."""
    found = shutil.which(configured)
    if found:
        return found
    import pyspark

    bundled = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    if configured == "spark-submit" and bundled.exists():
        return str(bundled)
    raise DrainError(drain_wording.drain_no_spark_submit(configured))


def submit(
    config: JobConfig,
    settings: DrainSettings,
    *,
    on_progress: Callable[[JobProgress], None] | None,
    timeout: float,
) -> Manifest:
    """Run the job with spark-submit (client mode), following its progress lines; its manifest.

    The job's configuration (with the cluster's credentials) goes into a file readable only by this user,
    removed afterwards.

    Raises:
        DrainError: spark-submit could not start, timed out, or ended without a result line.
    """
    executable = spark_submit_executable(settings.spark_submit)
    settings = settings.model_copy(update={"spark_submit": executable})
    handle, path = tempfile.mkstemp(prefix="lagbot-drain-", suffix=".json")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(config.to_json())
        argv = spark_submit_argv(settings, config_file=path, app_name=f"lagbot-drain-{config.group}")
        return _follow(argv, on_progress=on_progress, timeout=timeout)
    finally:
        Path(path).unlink(missing_ok=True)


def _follow(argv: list[str], *, on_progress: Callable[[JobProgress], None] | None, timeout: float) -> Manifest:
    env = {**os.environ, "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(  # argv from settings, no shell
            argv, stdout=subprocess.PIPE, stderr=errors, stdin=subprocess.DEVNULL, text=True, env=env
        )
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        result: Manifest | None = None
        try:
            assert process.stdout is not None
            for line in process.stdout:
                if line.startswith(PROGRESS_PREFIX) and on_progress is not None:
                    on_progress(JobProgress.from_json(line.removeprefix(PROGRESS_PREFIX)))
                elif line.startswith(RESULT_PREFIX):
                    result = Manifest.from_json(line.removeprefix(RESULT_PREFIX))
            code = process.wait()
        finally:
            timer.cancel()
        if result is not None:
            return result
        errors.seek(0)
        tail = errors.read().decode(errors="replace").strip().splitlines()[-3:]
        raise DrainError(drain_wording.drain_submit_failed(code, " | ".join(tail)))
