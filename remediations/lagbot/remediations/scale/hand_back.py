"""What a scale on KEDA leaves to undo: the ScaledObject's paused-replicas as it was before the run paused it.

`Scale.execute` holds one (`interrupted`) right before it pauses KEDA, so that a run that dies is handed back when it
is reaped; `Scale.hand_back` leaves one for after the hold. The restore queue keeps it through lagbot.core.codec:

- version 1: `{"interrupted":true,"keda_previous":"7","v":1}`;
- version 0, before it had a type: the held run's `{"interrupted":true,"keda_previous":"7"}`, or the hold's bare
  paused count (`3`, or `null`: not paused before).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lagbot.core import codec

HAND_BACK_VERSION = 1


@dataclass(frozen=True)
class KedaHandBack:
    """The ScaledObject's paused-replicas to put back, and whether an interrupted run held it."""

    keda_previous: int | str | None = None
    """As it was before the run paused it (None: not paused): the count the pause reported (after the hold), or the
    annotation as the run read it before pausing (an interrupted run's); put back as it was."""
    interrupted: bool = False
    """Held by `execute` before the pause, for a run that dies; False: handed back after the hold."""


def _bare(previous: Any) -> dict[str, Any]:
    """Version 0 as the hold kept it: the paused count alone."""
    return {"keda_previous": previous}


HAND_BACK_CODEC = codec.register(
    codec.Codec(
        "scale's KEDA hand-back", KedaHandBack, HAND_BACK_VERSION, {codec.UNVERSIONED: lambda d: d}, plain=_bare
    )
)
"""Version 0: the same fields (an interrupted run's), or the bare count (`plain`), kept before they had a version."""
