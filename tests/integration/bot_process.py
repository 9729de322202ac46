"""`lagbot run` as a real process for end-to-end tests (lagbot.devkit.embedded.BotProcess), with the tests' secret.

The bot talks to Apache Kafka, a real redis-server and the Slack emulator, exactly as it would
talk to production services; tests observe it only from outside (the emulator, Redis, the broker,
its HTTP port).
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from lagbot.devkit import embedded

T = TypeVar("T")
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60.0, every: float = 0.2) -> T:
    """Poll `probe` until it returns something truthy; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


class BotProcess(embedded.BotProcess):
    """One `lagbot run` replica signed with SIGNING_SECRET; a failing test shows the end of its log."""

    def __init__(
        self, tmp: Path, config: dict[str, Any], *, token: str, name: str = "bot", app_token: str | None = None
    ) -> None:
        super().__init__(tmp, config, token=token, signing_secret=SIGNING_SECRET, name=name, app_token=app_token)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if sys.exc_info()[0] is not None and not self._log.closed:  # a failing test: show what the bot said
            print(f"--- the last lines of {self.log_path.name} ---\n" + self.log_tail(40))
        return super().stop(sig, timeout)
