"""SASL on Apache Kafka: `lagbot check` and `lagbot run` through the broker's SASL_PLAINTEXT/PLAIN listener.

The credentials are librdkafka properties of the cluster; the password comes from an environment variable
named in `kafka_env`, so it is in neither the file nor the logs. A wrong password is exit 3 with a message
that names the cluster and says authentication failed (librdkafka itself only times the request out).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from tests.conftest import Kafka, Names
from tests.support.bot_process import BotProcess, wait_for

pytestmark = pytest.mark.integration
PASSWORD_ENV = "LAGBOT_TEST_KAFKA_PASSWORD"
TOKEN = "xoxb-sasl"
CHANNEL = "C0SASL"


def cluster(broker: ApacheKafka, group: str) -> dict[str, Any]:
    return {
        "name": "secure",
        "bootstrap_servers": broker.sasl_bootstrap,
        "kafka": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": broker.sasl_user},
        "kafka_env": {"sasl.password": PASSWORD_ENV},
        "groups": {"include": [group]},
        "request_timeout": "5s",
    }


def lagging_group(kafka: Kafka, names: Names) -> tuple[str, str]:
    """A group 300 messages behind on partition 1 of a 2-partition topic (set up over PLAINTEXT)."""
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 20)
    kafka.produce(topic, 1, 320)
    kafka.commit(group, {(topic, 0): 20, (topic, 1): 20})
    return topic, group


def check(tmp_path: Path, clusters: list[dict[str, Any]], password: str | None) -> subprocess.CompletedProcess[str]:
    """`lagbot check --json --samples 1 --verbose` as a user runs it, the password (if any) in its environment."""
    config = tmp_path / "lagbot.yaml"
    config.write_text(yaml.safe_dump({"clusters": clusters}))
    env = {k: v for k, v in os.environ.items() if k != PASSWORD_ENV and not k.startswith("LAGBOT_")}
    if password is not None:
        env[PASSWORD_ENV] = password
    argv = [sys.executable, "-m", "lagbot.cli.main", "check", "--config", str(config), "--samples", "1", "--json", "-v"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)


def test_check_through_the_sasl_listener(kafka: Kafka, names: Names, broker: ApacheKafka, tmp_path: Path) -> None:
    topic, group = lagging_group(kafka, names)
    done = check(tmp_path, [cluster(broker, group)], broker.sasl_password)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    [verdict] = report["groups"]
    assert report["clusters"] == [{"cluster": "secure", "ok": True, "error": None}]
    assert (verdict["cluster"], verdict["group"], verdict["total_lag"]) == ("secure", group, 300)
    assert [(p["topic"], p["partition"], p["committed"], p["log_end"], p["lag"]) for p in verdict["partitions"]] == [
        (topic, 0, 20, 20, 0),
        (topic, 1, 20, 320, 300),
    ]
    assert broker.sasl_password not in done.stdout + done.stderr  # the verbose log does not carry the secret


def test_a_wrong_password_is_exit_3_naming_the_cluster(
    kafka: Kafka, names: Names, broker: ApacheKafka, tmp_path: Path
) -> None:
    _, group = lagging_group(kafka, names)
    done = check(tmp_path, [cluster(broker, group)], "not-the-password")
    assert done.returncode == 3, done.stderr
    report = json.loads(done.stdout)
    assert report["clusters"] == [
        {
            "cluster": "secure",
            "ok": False,
            "error": (
                "cluster 'secure': authentication failed (check its SASL credentials): "
                f"sasl_plaintext://{broker.sasl_bootstrap}/bootstrap: SASL authentication error: "
                "Authentication failed: Invalid username or password"
            ),
        }
    ]
    assert report["groups"] == []
    assert "not-the-password" not in done.stdout + done.stderr


def test_an_unset_password_variable_is_exit_4_naming_it(broker: ApacheKafka, tmp_path: Path) -> None:
    done = check(tmp_path, [cluster(broker, "any")], None)
    assert done.returncode == 4
    assert done.stdout == ""
    assert done.stderr == (
        f"lagbot: {tmp_path / 'lagbot.yaml'}: clusters.0.kafka_env: cluster 'secure': "
        f"the environment variable {PASSWORD_ENV} (for sasl.password) is not set\n"
    )


def test_the_bot_watches_a_cluster_through_the_sasl_listener(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic, group = lagging_group(kafka, names)
    config = {
        "clusters": [{**cluster(broker, group), "check_interval": "1s"}],
        "thresholds": {"warn": {"messages": 100}, "critical": {"messages": 100_000}, "page": {"messages": 1_000_000}},
        "evaluation": {"min_samples": 2, "min_span": "1s"},
        "redis_url": redis_server.url,
        "slack": {"api_url": slack.api_url, "default_channel": CHANNEL},
    }
    monkeypatch.setenv(PASSWORD_ENV, broker.sasl_password)
    bot = BotProcess(tmp_path, config, token=TOKEN)
    try:
        [root] = wait_for("the incident's root message", lambda: slack.channel(CHANNEL))
        assert root.text.startswith("WARN") and group in root.text
        [reply] = wait_for("the thread reply", lambda: slack.thread(CHANNEL, root.ts))
        [table] = [b for b in reply.blocks if b["type"] == "table"]
        rows = [[cell["text"] for cell in row] for row in table["rows"]]
        assert [r[:4] for r in rows[1:]] == [[f"{topic}/1", "20", "320", "300"], [f"{topic}/0", "20", "20", "0"]]
        assert redis_client.get(f"lagbot:incident:secure:{group}") is not None
        assert bot.stop() == 0
        log = bot.log()
        assert broker.sasl_password not in log and "Traceback" not in log
    finally:
        bot.stop()
