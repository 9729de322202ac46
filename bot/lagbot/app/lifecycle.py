"""The long-lived parts of a running bot, started in dependency order and stopped in reverse.

Each part has a `start` and a `stop` (as Burrow's modules do). `Lifecycle.start` starts them in the order given;
when one fails to start, the parts already started are stopped (newest first) and the failure is raised, so nothing
is left running. `Lifecycle.stop` stops the started parts newest first; a part whose stop fails is logged and the
others still stop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Part:
    """One long-lived part: its name (for logs) and how it starts and stops."""

    name: str
    start: Callable[[], object]
    stop: Callable[[], object]


@dataclass
class Lifecycle:
    """Parts in dependency order: each may use those before it, none uses those after it."""

    parts: Sequence[Part]
    started: list[Part] = field(default_factory=list)
    """The parts started, in order (what `stop` stops)."""

    def start(self) -> None:
        """Start every part in order. Raises what a part's start raised, once the parts started before it stopped."""
        for part in self.parts:
            try:
                part.start()
            except BaseException:
                log.error("part failed to start: stopping the others", extra={"part": part.name})
                self.stop()
                raise
            self.started.append(part)

    def stop(self) -> None:
        """Stop the started parts, newest first; one that fails to stop is logged, the others still stop."""
        while self.started:
            part = self.started.pop()
            try:
                part.stop()
            except Exception:
                log.exception("part failed to stop", extra={"part": part.name})
