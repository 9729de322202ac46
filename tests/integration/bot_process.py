"""`lagbot run` as a real process for end-to-end tests: config on disk, secrets in its environment.

The bot talks to the embedded broker, a real redis-server and the Slack emulator, exactly as it would
talk to production services; tests observe it only from outside (the emulator, Redis, the broker,
its HTTP port).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from bot.embedded import free_port

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


class BotProcess:
    """One `lagbot run` replica."""

    def __init__(
        self, tmp: Path, config: dict[str, Any], *, token: str, name: str = "bot", app_token: str | None = None
    ) -> None:
        self.port = free_port()
        config = {**config, "http": {"host": "127.0.0.1", "port": self.port}}
        self.config_path = tmp / f"{name}.yaml"
        self.config_path.write_text(yaml.safe_dump(config))
        self.log_path = tmp / f"{name}.log"
        env = {**os.environ, "SLACK_BOT_TOKEN": token, "SLACK_SIGNING_SECRET": SIGNING_SECRET}
        env.pop("SLACK_APP_TOKEN", None)
        if app_token is not None:
            env["SLACK_APP_TOKEN"] = app_token
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "run", "--config", str(self.config_path), "--verbose"],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def events_url(self) -> str:
        return f"{self.url}/slack/events"

    def health(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                return dict(json.loads(response.read()))
        except OSError:
            return None

    def wait_ready(self, timeout: float = 60.0) -> dict[str, Any]:
        def ready() -> dict[str, Any] | None:
            if self.process.poll() is not None:
                raise AssertionError(f"lagbot run exited with {self.process.returncode}:\n{self.log()}")
            return self.health()

        return wait_for("the bot's /healthz", ready, timeout)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if sys.exc_info()[0] is not None and not self._log.closed:  # a failing test: show what the bot said
            print(f"--- the last lines of {self.log_path.name} ---\n" + "\n".join(self.log().splitlines()[-40:]))
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self._log.close()
        return self.process.returncode
