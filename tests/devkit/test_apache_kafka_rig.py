"""The Apache Kafka rig itself: `make kafka-up / kafka-groups / kafka-down` and the errors without Java or Maven.

Run through `python -m lagbot.devkit.apache_kafka`, which is exactly what the Makefile's targets call, with the run
folder moved to a temporary one (LAGBOT_KAFKA_RUN) so a developer's own `make kafka-up` broker is left alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lagbot.devkit.apache_kafka import fetched
from tests.support.listening import listening_sockets

pytestmark = pytest.mark.integration


def rig(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lagbot.devkit.apache_kafka", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_without_java_one_line_says_what_to_install(tmp_path: Path) -> None:
    env = {"PATH": str(tmp_path), "LAGBOT_KAFKA_CACHE": str(tmp_path / "cache"), "HOME": str(tmp_path)}

    result = rig("fetch", env=env)

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "lagbot: Apache Kafka needs Java 17 or newer and there is none: install a JDK "
        "(Debian: apt install openjdk-17-jdk-headless) or set JAVA_HOME"
    ]
    assert not (tmp_path / "cache").exists()


def test_without_maven_one_line_says_what_to_install(tmp_path: Path) -> None:
    java = subprocess.run(["sh", "-c", "command -v java"], capture_output=True, text=True, check=True).stdout.strip()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").symlink_to(os.path.realpath(java))
    env = {"PATH": str(tmp_path / "bin"), "LAGBOT_KAFKA_CACHE": str(tmp_path / "cache"), "HOME": str(tmp_path)}

    result = rig("fetch", env=env)

    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "lagbot: fetching Apache Kafka needs Maven and there is none: install it (apt install maven)"
    ]


def test_up_groups_down_on_loopback_only(tmp_path: Path) -> None:
    assert fetched(), "make kafka-fetch runs before the tests (make test depends on it)"
    env = {**os.environ, "LAGBOT_KAFKA_RUN": str(tmp_path / "run")}
    up = rig("up", env=env)
    assert up.returncode == 0, up.stderr
    state = json.loads((tmp_path / "run" / "state.json").read_text())
    try:
        last = up.stdout.splitlines()[-1]
        assert last == f"bootstrap={state['bootstrap']}"
        assert re.fullmatch(r"bootstrap=127\.0\.0\.1:\d+", last)
        ports = {int(state["bootstrap"].rsplit(":", 1)[1]), int(state["sasl_bootstrap"].rsplit(":", 1)[1])}
        sockets = listening_sockets(int(state["pid"]))
        # The two client listeners and the controller's: all on 127.0.0.1, no JMX or other port.
        assert len(sockets) == 3 and {address for address, _ in sockets} == {"127.0.0.1"}
        assert ports < {port for _, port in sockets}

        admin = AdminClient({"bootstrap.servers": state["bootstrap"]})
        for future in admin.create_topics([NewTopic("rig", 2, 1)]).values():
            future.result(15)
        request = ConsumerGroupTopicPartitions("rig-group", [TopicPartition("rig", 0, 0), TopicPartition("rig", 1, 0)])
        for future in admin.alter_consumer_group_offsets([request]).values():
            future.result(15)
        again = rig("up", env=env)
        assert again.returncode == 0 and again.stdout.splitlines()[-1] == last

        groups = rig("groups", "--describe", "--group", "rig-group", "--state", env=env)
        assert groups.returncode == 0, groups.stderr
        [header, row] = [line.split() for line in groups.stdout.strip().splitlines()]
        assert header[:2] == ["GROUP", "COORDINATOR"] and row[0] == "rig-group" and row[-2:] == ["Empty", "0"]
    finally:
        down = rig("down", env=env)
    assert down.returncode == 0 and down.stdout.strip() == f"Apache Kafka on {state['bootstrap']} stopped"
    assert not Path(f"/proc/{state['pid']}").exists()
    assert rig("groups", "--list", env=env).stderr.splitlines() == [
        "lagbot: no Apache Kafka is running: `make kafka-up` starts one"
    ]
