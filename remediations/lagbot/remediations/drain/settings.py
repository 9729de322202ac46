"""Settings of the emergency drain job: `drain:` in the configuration file (`LAGBOT_DRAIN__*` in the environment).

Imported by `lagbot.core.config` (one field of `Settings`), so this module imports pydantic and nothing of lagbot.
"""

from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MASTER = re.compile(r"^(local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?|spark://\S+|yarn|k8s://\S+)$")
"""The Spark masters lagbot submits to: local[...] runs in-process; the others go through spark-submit."""
CONNECT = re.compile(r"^sc://[A-Za-z0-9.-]+(:[1-9]\d{0,4})?(/;\S*)?$")
"""A Spark Connect server (sc://HOST[:PORT][/;param=value...]): lagbot is only its client, the driver runs there."""

ParquetWriter = Literal["auto", "arrow", "spark"]
"""Who writes a Parquet sink: the tasks with pyarrow ("arrow"), Spark's own writer ("spark"), or "auto":
arrow when the sink is on the local filesystem as Hadoop resolves it (file://, or a path where fs.defaultFS
is local), Spark for every other filesystem (a path on an HDFS cluster, s3a://, ...: Hadoop's connectors)."""

DEFAULT_TASK_RATE = 100_000.0
"""Messages per second one drain task reads and writes, for the ETA: rounded down from bench/drain.py on
local[2] with the broker on the same 2 cores, 129,000-148,000 per task with Spark's writer and about
270,000 with the tasks writing (bench/README.md). The slower one, so that an ETA is not optimistic."""


def check_master(master: str) -> str:
    """`master` if it is one lagbot can use, else ValueError naming the accepted forms."""
    if not MASTER.match(master) and not CONNECT.match(master):
        raise ValueError(
            f"{master!r} is not a Spark master lagbot can use: local, local[N], local[*], local[N,F], "
            "spark://HOST:PORT, yarn, k8s://https://HOST:PORT, or a Spark Connect server sc://HOST:PORT"
        )
    return master


def is_connect(master: str) -> bool:
    """True when the drain runs through a Spark Connect server: this process starts no JVM."""
    return master.startswith("sc://")


def check_connect_writer(master: str, writer: ParquetWriter) -> None:
    """ValueError when `writer` cannot be used with `master`: through Spark Connect the tasks write Parquet.

    Spark's writer needs the driver to list and delete through Hadoop's filesystem API (older cuts of a
    range) and to count what was written (accumulators): neither is reachable from a Spark Connect client.
    """
    if is_connect(master) and writer == "spark":
        raise ValueError(
            f"drain.writer spark cannot be used with the Spark Connect master {master}: the tasks write Parquet "
            "there (writer arrow or auto, on a path the executors mount or s3://, gs://, abfs://, hdfs://); "
            "use a spark-submit master (spark://, k8s://, yarn) for Spark's writer"
        )


def is_local(master: str) -> bool:
    """True when the job runs inside this process (PySpark local mode), not through spark-submit."""
    return master.startswith("local")


def local_slots(master: str, cpus: int | None = None) -> int | None:
    """Task slots of a local master: local -> 1, local[N] -> N, local[*] -> the CPUs; None if not local."""
    if not is_local(master):
        return None
    match = re.match(r"^local\[(\*|\d+)", master)
    if match is None:
        return 1
    if match.group(1) == "*":
        return max(1, cpus if cpus is not None else (os.cpu_count() or 1))
    return int(match.group(1))


class DrainSettings(BaseModel):
    """Where and how the drain job runs. Every field has a default: `local[*]` in-process needs nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    master: str = "local[*]"
    """local[*] (the default: in-process), local[N], spark://HOST:PORT, yarn, k8s://https://HOST:PORT (spark-submit),
    or sc://HOST:PORT: a Spark Connect server runs the driver, lagbot only sends it the job (no JVM here)."""
    chunk: int = Field(default=50_000, ge=1, le=100_000_000)
    """Offsets per range: one Spark task reads one range, so a hot partition is read by many tasks."""
    sink: str | None = None
    """The default sink: a Parquet dataset path or Hadoop filesystem URL, or kafka:TOPIC to replay."""
    writer: ParquetWriter = "auto"
    """Who writes Parquet: "arrow" (the tasks, with pyarrow: about half the CPU a message), "spark"
    (Spark's writer: any Hadoop filesystem), "auto" (arrow for the local filesystem, else spark)."""
    parallelism: int | None = Field(default=None, ge=1, le=100_000)
    """Task slots of the master, for the ETA; None: taken from a local master, else 2 (set it for a cluster)."""
    task_rate: float = Field(default=DEFAULT_TASK_RATE, gt=0)
    """Messages per second one task drains, for the ETA (measure yours with bench/drain.py)."""
    startup_seconds: float = Field(default=20.0, ge=0)
    """Seconds to start Spark and the job, added to the ETA."""
    spark_submit: str = "spark-submit"
    """The spark-submit executable (non-local masters)."""
    spark_conf: dict[str, str] = Field(default_factory=dict)
    """Extra `--conf key=value` for spark-submit (executor memory, k8s image, queue ...)."""
    python_archive: str | None = None
    """A packed virtualenv with lagbot installed (venv-pack), shipped with --archives ARCHIVE#environment."""
    manifest_dir: str = "lagbot-drains"
    """Where manifests of replay drains go (Parquet drains keep theirs in the dataset, under _lagbot/)."""
    empty_timeout: float = Field(default=120.0, gt=0, le=3600)
    """Seconds to wait for the group to become Empty after its consumers are scaled to 0."""

    @field_validator("master")
    @classmethod
    def _known_master(cls, master: str) -> str:
        return check_master(master)

    @model_validator(mode="after")
    def _writer_fits_master(self) -> DrainSettings:
        check_connect_writer(self.master, self.writer)
        return self

    def slots(self, cpus: int | None = None) -> int:
        """Task slots the ETA assumes: configured, else those of a local master, else 2."""
        if self.parallelism is not None:
            return self.parallelism
        return local_slots(self.master, cpus) or 2
