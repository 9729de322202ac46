"""The services lagbot starts for the demo and the tests leave nothing in the temp directory once stopped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lagbot.devkit.embedded import EmbeddedRedis
from tests.support.bot_process import wait_for

pytestmark = pytest.mark.integration


def test_a_stopped_redis_removes_its_log_and_its_directory() -> None:
    redis = EmbeddedRedis().start()
    log, directory = redis._log_path, redis._dir
    assert log is not None and log.is_file() and directory is not None and Path(directory).is_dir()
    assert redis.log_tail() != ""  # the log is there while it runs (failures quote it)
    redis.stop()
    assert not log.exists() and not Path(directory).exists()
    redis.stop()  # stopping twice is harmless


def test_a_service_dies_with_the_process_that_started_it_when_that_is_killed() -> None:
    """A test run killed without its teardown (SIGKILL) leaves no redis-server (or broker) running."""
    starter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from lagbot.devkit.embedded import EmbeddedRedis\n"
            "redis = EmbeddedRedis().start()\n"
            "print(redis._process.pid, flush=True)\n"
            "sys.stdin.read()\n",  # holds it until it is killed (its stdin stays open)
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert starter.stdout is not None
    pid = int(starter.stdout.readline())
    os.kill(pid, 0)  # the redis-server runs
    starter.kill()
    starter.wait(10)
    wait_for("the redis-server to die with its starter", lambda: not _alive(pid) or None, timeout=10, every=0.05)


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, already dead but not reaped by its new parent, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"
