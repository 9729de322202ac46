"""`clusters[].kafka_env`: librdkafka properties whose values (secrets) come from environment variables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lagbot.core.config import ConfigError, load_settings
from lagbot.engine.collector import check_clients

SECURE = """\
clusters:
  - name: secure
    bootstrap_servers: kafka-1:9093
    kafka:
      security.protocol: SASL_SSL
      sasl.mechanism: SCRAM-SHA-512
      sasl.username: lagbot
    kafka_env:
"""


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("LAGBOT_"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("KAFKA_PASSWORD", raising=False)


def write(tmp_path: Path, kafka_env: str) -> Path:
    path = tmp_path / "lagbot.yaml"
    path.write_text(SECURE + kafka_env, encoding="utf-8")
    return path


def load_error(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    return str(caught.value)


def test_the_secret_is_read_from_the_environment_when_a_client_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings(write(tmp_path, "      sasl.password: KAFKA_PASSWORD\n"))
    [cluster] = settings.clusters
    assert cluster.kafka_env == {"sasl.password": "KAFKA_PASSWORD"}
    monkeypatch.setenv("KAFKA_PASSWORD", "s3cret")
    assert cluster.client_config() == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "lagbot",
        "sasl.password": "s3cret",
        "bootstrap.servers": "kafka-1:9093",
    }
    assert "s3cret" not in repr(settings) and "s3cret" not in settings.model_dump_json()


def test_an_unset_variable_is_named_at_startup(tmp_path: Path) -> None:
    path = write(tmp_path, "      sasl.password: KAFKA_PASSWORD\n")
    settings = load_settings(path)  # the file is valid: the variable is only read when a client is made
    with pytest.raises(ConfigError) as caught:
        check_clients(settings, source=str(path))
    assert str(caught.value) == (
        f"{path}: clusters.0.kafka_env: cluster 'secure': "
        "the environment variable KAFKA_PASSWORD (for sasl.password) is not set"
    )


def test_an_empty_variable_counts_as_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [cluster] = load_settings(write(tmp_path, "      sasl.password: KAFKA_PASSWORD\n")).clusters
    monkeypatch.setenv("KAFKA_PASSWORD", "")
    with pytest.raises(ConfigError) as caught:
        cluster.client_config()
    assert str(caught.value) == (
        "cluster 'secure': the environment variable KAFKA_PASSWORD (for sasl.password) is not set"
    )


@pytest.mark.parametrize(
    ("kafka_env", "problem"),
    [
        (
            "      sasl.password: kafka-password\n",
            "clusters.0.kafka_env: sasl.password: 'kafka-password' is not an environment variable name "
            "(letters, digits and _, not first a digit)",
        ),
        (
            "      sasl.password: 1PASSWORD\n",
            "clusters.0.kafka_env: sasl.password: '1PASSWORD' is not an environment variable name "
            "(letters, digits and _, not first a digit)",
        ),
        (
            "      bootstrap.servers: KAFKA_BOOTSTRAP\n",
            "clusters.0.kafka_env: 'bootstrap.servers' cannot be set here: use the field 'bootstrap_servers'",
        ),
        (
            "      sasl.username: KAFKA_USER\n",
            "clusters.0: set in both 'kafka' and 'kafka_env': sasl.username (give each property once)",
        ),
        (
            "      sasl.password: 12\n",
            "clusters.0.kafka_env.sasl.password: Input should be a valid string (got 12)",
        ),
    ],
)
def test_bad_kafka_env_is_named(tmp_path: Path, kafka_env: str, problem: str) -> None:
    path = write(tmp_path, kafka_env)
    assert load_error(path) == f"{path}: {problem}"
