"""What approvers approve for a drain besides its ranges: `DrainParams`, built from the `drain:` settings plus the
choices of one drain (its sink, its topics, its chunk and master)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lagbot.remediations.drain.plan import Uncommitted
from lagbot.remediations.drain.settings import (
    DEFAULT_TASK_RATE,
    DrainSettings,
    ParquetWriter,
    check_connect_writer,
    check_master,
)
from lagbot.remediations.drain.sinks import SinkError, parse_sink
from lagbot.remediations.executors.base import Workload


class DrainParams(BaseModel):
    """What approvers approve besides the ranges. Built from `DrainSettings` plus per-drain choices."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sink: str
    """A Parquet dataset path or Hadoop filesystem URL, or kafka:TOPIC to replay."""
    writer: ParquetWriter = "auto"
    """Who writes a Parquet sink (see DrainSettings.writer)."""
    topics: tuple[str, ...] = ()
    """Only these topics of the group (empty: all of them)."""
    chunk: int = Field(default=50_000, ge=1, le=100_000_000)
    master: str = "local[*]"
    slots: int = Field(default=2, ge=1, le=100_000)
    """Task slots of the master (for the ETA)."""
    task_rate: float = Field(default=DEFAULT_TASK_RATE, gt=0)
    startup_seconds: float = Field(default=20.0, ge=0)
    uncommitted: Uncommitted = "log_start"
    """Partitions with nothing committed: drain from the log start, or skip them."""
    pause_consumers: bool = True
    """When the group has live consumers: scale them to 0 through the executor, then restore them."""
    workload: Workload | None = None
    manifest_dir: str = "lagbot-drains"
    empty_timeout: float = Field(default=120.0, gt=0, le=3600)
    idle_timeout: float = Field(default=30.0, gt=0, le=3600)
    """A range with no progress for this long fails (e.g. its messages were deleted meanwhile)."""
    job_timeout: float = Field(default=6 * 3600.0, gt=0)
    progress_every: float = Field(default=10.0, ge=0)
    """Seconds between progress lines in the incident thread."""
    fail_after: int | None = Field(default=None, ge=1)
    """Fault injection, for tests only: every task fails after reading this many messages of its range."""

    @field_validator("sink")
    @classmethod
    def _sink_parses(cls, sink: str) -> str:
        try:
            return parse_sink(sink).url
        except SinkError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("master")
    @classmethod
    def _master_known(cls, master: str) -> str:
        return check_master(master)

    @model_validator(mode="after")
    def _writer_fits_master(self) -> DrainParams:
        check_connect_writer(self.master, self.writer)
        return self

    @classmethod
    def from_settings(cls, settings: DrainSettings, *, sink: str | None, **overrides: Any) -> DrainParams:
        """Params from the `drain:` settings, with per-drain overrides (None values ignored).

        Raises:
            pydantic.ValidationError: a bad value; `sink` missing when the settings have no default.
        """
        chosen = {k: v for k, v in overrides.items() if v is not None}
        master = chosen.get("master", settings.master)
        slots = settings.model_copy(update={"master": master}).slots()
        return cls.model_validate(
            {
                "sink": sink if sink is not None else settings.sink,
                "chunk": settings.chunk,
                "writer": settings.writer,
                "master": master,
                "slots": slots,
                "task_rate": settings.task_rate,
                "startup_seconds": settings.startup_seconds,
                "manifest_dir": settings.manifest_dir,
                "empty_timeout": settings.empty_timeout,
                **chosen,
            }
        )


# ---------------------------------------------------------------------------------------------------
# Planning (pure)
# ---------------------------------------------------------------------------------------------------
