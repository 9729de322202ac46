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


def listening_sockets(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket process `pid` listens on, read from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        match = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(fd)) if fd.is_symlink() else None
        if match:
            inodes.add(match.group(1))
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                address, port = local.split(":")
                found.add((_address(address), int(port, 16)))
    return found


def _address(hex_address: str) -> str:
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return ".".join(str(b) for b in reversed(raw))
    words = [raw[i : i + 4][::-1] for i in range(0, 16, 4)]  # /proc prints IPv6 as four little-endian words
    joined = b"".join(words)
    if joined[:12] == b"\x00" * 10 + b"\xff\xff":
        return ".".join(str(b) for b in joined[12:])
    return joined.hex()


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
