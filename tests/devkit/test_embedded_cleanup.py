"""The services lagbot starts for the demo and the tests leave nothing in the temp directory once stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

from lagbot.devkit.embedded import EmbeddedRedis

pytestmark = pytest.mark.integration


def test_a_stopped_redis_removes_its_log_and_its_directory() -> None:
    redis = EmbeddedRedis().start()
    log, directory = redis._log_path, redis._dir
    assert log is not None and log.is_file() and directory is not None and Path(directory).is_dir()
    assert redis.log_tail() != ""  # the log is there while it runs (failures quote it)
    redis.stop()
    assert not log.exists() and not Path(directory).exists()
    redis.stop()  # stopping twice is harmless
