"""The tests' one way to wait: poll a condition until it holds, within a deadline (never a bare sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    what: str,
    probe: Callable[[], T | None],
    timeout: float = 60.0,
    every: float = 0.2,
    error: type[Exception] = AssertionError,
) -> T:
    """Poll `probe` until it returns something truthy and return that; `error` naming `what` after `timeout` s.

    The probe is asked once more at the deadline, so a condition that holds by then is never reported as late.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise error(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)
