"""`lagbot demo` as a user runs it: a subprocess, no stdin, CI=true; the bot end to end on embedded services.

Asserted from its output: one incident opened in the emulated channel (root + thread with the table and the
cause), the scale button clicked by the approver and answered, the scale done, the incident resolved; the
summary's figures (the audit from Redis; committed == log end on every partition, the total equal to what the
producer wrote); and, after it exits, nothing it started still runs or listens.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from lagbot.cli import wording as cli_wording
from lagbot.core import messages
from lagbot.devkit import wording as devkit_wording

pytestmark = pytest.mark.integration


def run_demo(*args: str, timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": "true", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "lagbot.cli.main", "demo", *args],
        capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def processes_mentioning(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{proc.name}: {cmdline}")
    return found


def test_the_demo_runs_the_bot_end_to_end_and_leaves_nothing_behind() -> None:
    result = run_demo(timeout=200)
    out = result.stdout

    assert result.returncode == 0, result.stderr + out[-3000:]
    assert "Traceback" not in result.stderr + out
    # One incident: one root message, then its thread with the per-partition table and the cause.
    assert out.count("] new message") == 1
    root = out.split("] new message\n", 1)[1].splitlines()[0]
    words = "|".join(map(re.escape, messages.STATUS_WORDS.values()))  # what the consumers do, not "status OK"
    assert re.search(rf"WARN orders-consumer on embedded: ({words}), lag [\d,]+", root), root
    assert re.search(r"^ +partition +committed +log-end +lag +lag s +owner +status$", out, re.MULTILINE)
    assert len(re.findall(r"^ +orders/[0-3] +\d+ +\d+ +\d+ ", out, re.MULTILINE)) >= 4
    assert "throughput_deficit" in out
    # The approver's click, signed as Slack signs it, and what it started.
    click = re.search(r"U0ONCALL clicks \[ (Scale orders-workers 1 -> ([234])) \]", out)
    assert click is not None, out[-3000:]
    scale = click.group(1)
    # The proposal names the local fleet as what it is, not as a Deployment in namespace default.
    assert f"scale local fleet orders-workers from 1 to {click.group(2)} replicas" in out
    assert "deployment default/" not in out
    assert "the app answered HTTP 200" in out
    assert f"Approved by @U0ONCALL: running {scale}" in out
    assert f"✔ {scale} done: scaled fleet orders-workers from 1 to {click.group(2)} replicas" in out
    # Resolved: the root turned green and the thread says so.
    assert re.search(r"^ +● RESOLVED orders-consumer on embedded: resolved after .*; lag 0 when resolved$", out,
                     re.MULTILINE)  # fmt: skip
    assert re.search(r"^ +● Resolved after .*; lag now 0\.$", out, re.MULTILINE)
    # The summary: the audit from Redis, the offsets from the broker.
    assert re.search(rf"^ +\S+ proposed scale by lagbot {re.escape(scale)}$", out, re.MULTILINE)
    assert re.search(r"^ +\S+ approved scale by @U0ONCALL$", out, re.MULTILINE)
    assert re.search(r"^ +\S+ succeeded scale by lagbot scaled fleet orders-workers", out, re.MULTILINE)
    rows = re.findall(r"^  orders/(\d) +([\d,]+) +([\d,]+) +(\d+)$", out, re.MULTILINE)
    assert [r[0] for r in rows] == ["0", "1", "2", "3"]
    assert all(committed == end and lag == "0" for _, committed, end, lag in rows)
    written = re.search(r"\[producer\] stopped after ([\d,]+) messages", out)
    assert written is not None
    total = sum(int(r[1].replace(",", "")) for r in rows)
    assert f"{total:,}" == written.group(1)
    assert devkit_wording.demo_broker_total(total, total) in out
    assert re.search(r'kafka_consumergroup_group_sum_lag\{cluster_name="embedded",group="orders-consumer"\} 0\.0', out)
    assert re.search(r"bot HTTP +http://127\.0\.0\.1:\d+/healthz +http://127\.0\.0\.1:\d+/metrics", out)
    assert out.rstrip().splitlines()[-1].startswith("demo done in ")

    # Everything it started is gone: the broker, redis, the emulator and the bot no longer listen; no
    # process (bot, fleet members) refers to its working directory, which was removed.
    ports = [int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", out)]
    assert len(set(ports)) >= 4
    assert [p for p in set(ports) if listening(p)] == []
    workdir = re.search(r"(/\S*lagbot-demo-[^/\s]+)/", out)
    assert workdir is not None
    assert processes_mentioning(workdir.group(1)) == []
    assert not Path(workdir.group(1)).exists()


def test_on_the_embedded_broker_the_deficit_says_what_is_known_of_members_beside_the_sized_button(
    tmp_path: Path,
) -> None:
    """The first `make demo` anyone runs (no Apache Kafka fetched) is on the embedded broker, which reports no members
    for a group: the cause says so and says what the scale button beside it counts (the workload's replicas), never
    that the replicas "cannot be sized" beside a button that sized them."""
    result = run_demo("--timeout", "400", timeout=460, env={"LAGBOT_KAFKA_CACHE": str(tmp_path / "no-kafka")})
    out = result.stdout

    assert "Traceback" not in result.stderr + out
    assert "Apache Kafka" not in out.split("--- channel", 1)[0]  # the embedded broker, as a pip user gets
    said = re.search(r"1\. throughput_deficit \(75%\): consumers commit .*$", out, re.MULTILINE)
    assert said is not None, out[-3000:]
    assert said.group(0).endswith(
        "; the broker reports no members for the group (some brokers never do), so its consumers are not counted "
        "here: a scale proposal counts the workload's current replicas as its consumers → scale"
    ), said.group(0)
    assert "cannot be sized" not in out
    assert re.search(r"\[ Scale orders-workers 1 -> [234] \]", out), out[-3000:]
    assert result.returncode == 0, result.stderr + out[-3000:]


def test_check_only_options_without_check_only_are_bad_usage_and_start_nothing() -> None:
    result = run_demo("--json", timeout=60)

    assert result.returncode == 4
    assert result.stderr.strip() == "lagbot: " + cli_wording.demo_option_needs_check_only("--json")
    assert result.stdout == ""
