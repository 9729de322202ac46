"""`lagbot check`'s settings from file, environment and flags, and its exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from lagbot.cli.exits import exit_code
from lagbot.cli.settings import load_for_cli
from lagbot.core.config import ConfigError
from lagbot.core.model import GroupState, GroupVerdict, Severity, Status
from lagbot.engine.check import CheckReport
from lagbot.engine.evaluate import error_verdict


def verdict(severity: Severity, status: Status = Status.OK) -> GroupVerdict:
    from dataclasses import replace

    base = error_verdict("c", "g", GroupState.STABLE, "x")
    return replace(base, severity=severity, status=status, error=None)


@pytest.mark.parametrize(
    ("verdicts", "errors", "code"),
    [
        ([], {}, 0),
        ([verdict(Severity.OK)], {}, 0),
        ([verdict(Severity.OK), verdict(Severity.WARN)], {}, 1),
        ([verdict(Severity.WARN), verdict(Severity.CRITICAL)], {}, 2),
        ([verdict(Severity.PAGE)], {}, 2),
        ([verdict(Severity.PAGE)], {"other": "down"}, 3),  # unknown lag outranks what is known
        ([verdict(Severity.OK, Status.ERR)], {}, 3),  # one group unreadable: its lag is unknown too
    ],
    ids=["nothing", "ok", "warn", "critical", "page", "cluster-down", "group-unreadable"],
)
def test_exit_codes(verdicts: list[GroupVerdict], errors: dict[str, str], code: int) -> None:
    assert exit_code(CheckReport(taken_at=0.0, verdicts=verdicts, cluster_errors=errors)) == code


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "lagbot.yaml"
    path.write_text(text)
    return path


def test_flags_win_over_the_file(tmp_path: Path) -> None:
    config = write(tmp_path, "clusters:\n  - name: prod\n    bootstrap_servers: a:1\n    groups: {exclude: ['^_']}\n")
    settings = load_for_cli(config, "b:2", "orders-.*")
    [cluster] = settings.clusters
    assert (cluster.name, cluster.bootstrap_servers) == ("prod", "b:2")
    assert (cluster.groups.include, cluster.groups.exclude) == (["orders-.*"], ["^_"])


def test_flags_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "LAGBOT_CLUSTERS", '[{"name": "envc", "bootstrap_servers": "e:1"}, {"name": "x", "bootstrap_servers": "e:2"}]'
    )
    monkeypatch.setenv("LAGBOT_WINDOW__SAMPLES", "7")
    settings = load_for_cli(None, "b:2", None)
    assert [(c.name, c.bootstrap_servers) for c in settings.clusters] == [("default", "b:2")]
    assert settings.window.samples == 7  # what no flag sets still comes from the environment


def test_environment_alone_gives_the_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAGBOT_CLUSTERS", '[{"name": "envc", "bootstrap_servers": "e:1"}]')
    assert [c.name for c in load_for_cli(None, None, None).clusters] == ["envc"]


@pytest.mark.parametrize(
    ("config_text", "bootstrap", "group", "message"),
    [
        (None, None, None, "no cluster to check"),
        ("clusters:\n  - {name: a, bootstrap_servers: 'x:1'}\n  - {name: b, bootstrap_servers: 'y:1'}\n", "z:1", None,
         "--bootstrap: can only replace the bootstrap servers of a configuration with exactly one cluster"),
        (None, "b:1", "(", "--group: '(' is not a valid regular expression"),
        (None, "", None, "--bootstrap: String should have at least 1 character"),
        ("clusters:\n  - {name: a, bootstrap_servers: 'x:1', kafka: {no.such.prop: 1}}\n", None, None,
         "clusters.0.kafka: No such configuration property: \"no.such.prop\""),
        ("clusters:\n  - {name: a, bootstrap_servers: 'x:1', kafka: {security.protocol: bogus}}\n", None, None,
         "clusters.0.kafka: Invalid value \"bogus\" for configuration property \"security.protocol\""),
    ],
    ids=["no-cluster", "bootstrap-two-clusters", "bad-group-regex", "empty-bootstrap", "unknown-kafka-prop",
         "bad-kafka-value"],
)  # fmt: skip
def test_bad_input_is_a_config_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config_text: str | None, bootstrap: str | None,
    group: str | None, message: str,
) -> None:  # fmt: skip
    monkeypatch.delenv("LAGBOT_CLUSTERS", raising=False)
    config = write(tmp_path, config_text) if config_text else None
    with pytest.raises(ConfigError) as caught:
        load_for_cli(config, bootstrap, group)
    assert message in str(caught.value)
    if config is not None and "kafka" in message:
        assert str(caught.value).startswith(f"{config}: ")
