"""What the drain may use beyond every remediation's ExecutionContext: the drain's own, typed.

The service gives every remediation an ExecutionContext (lagbot's settings among it: the drain reads its `drain:`
section from there). Callers that run the drain themselves in this process (`lagbot drain`, the tests, the
benchmarks) give a DrainContext: a SparkSession to run the job in, a receiver of every progress report (the CLI's
progress bar), and `drain:` settings of their own when they have no lagbot settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lagbot.remediations.base import ExecutionContext
from lagbot.remediations.drain.settings import DrainSettings

if TYPE_CHECKING:
    from lagbot.remediations.drain.job import JobProgress


@dataclass
class DrainContext(ExecutionContext):
    spark: Any = None
    """A SparkSession to run the job in (a local master); None: one is made, and stopped afterwards."""
    on_progress: Callable[[JobProgress], None] | None = None
    """Receives every progress report of the job, e.g. for a progress bar."""
    drain_settings: DrainSettings | None = None
    """The `drain:` section to use when `settings` (lagbot's) are not given."""


def drain_settings(context: ExecutionContext) -> DrainSettings:
    """The `drain:` settings for a run: the DrainContext's own, else lagbot's settings', else the defaults."""
    if isinstance(context, DrainContext) and context.drain_settings is not None:
        return context.drain_settings
    return context.settings.drain if context.settings is not None else DrainSettings()


def spark_of(context: ExecutionContext) -> Any:
    return context.spark if isinstance(context, DrainContext) else None


def progress_receiver(context: ExecutionContext) -> Callable[[JobProgress], None] | None:
    return context.on_progress if isinstance(context, DrainContext) else None
