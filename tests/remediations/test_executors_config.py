"""Executor settings: each bad combination is refused at parse with a message naming the field."""

from __future__ import annotations

import pytest

from lagbot.core.config import ConfigError, build_settings
from lagbot.remediations.executors.config import ExecutorsConfig, KubernetesConfig

CLUSTERS = [{"name": "prod", "bootstrap_servers": "kafka:9092"}]


def test_no_executors_by_default() -> None:
    assert build_settings({"clusters": CLUSTERS}, source="t").executors == ExecutorsConfig()


@pytest.mark.parametrize(
    ("kubernetes", "problem"),
    [
        ({}, "executors.kubernetes: set exactly one of api_url, kubeconfig, in_cluster (given: none)"),
        (
            {"api_url": "https://k8s:6443", "in_cluster": True},
            "set exactly one of api_url, kubeconfig, in_cluster (given: api_url, in_cluster)",
        ),
        ({"in_cluster": True, "token": "t"}, "token and token_file can only be set together with api_url"),
        ({"api_url": "https://k8s:6443", "token": "t", "token_file": "/t"}, "token and token_file cannot be set"),
        ({"in_cluster": True, "context": "prod"}, "context can only be set together with kubeconfig"),
        ({"api_url": "k8s:6443"}, "executors.kubernetes.api_url: String should match pattern"),
        ({"in_cluster": True, "timeout": 0}, "executors.kubernetes.timeout: Input should be greater than 0"),
        ({"in_cluster": True, "verify": False}, "executors.kubernetes.verify: Extra inputs are not permitted"),
    ],
)
def test_bad_kubernetes_settings_are_named(kubernetes: dict[str, object], problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_settings({"clusters": CLUSTERS, "executors": {"kubernetes": kubernetes}}, source="lagbot.yaml")
    assert problem in str(caught.value)
    assert str(caught.value).startswith("lagbot.yaml: executors.kubernetes")


def test_good_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAGBOT_EXECUTORS__KUBERNETES", '{"kubeconfig": "~/.kube/config", "context": "prod"}')
    monkeypatch.setenv("LAGBOT_EXECUTORS__LOCAL__STATE_DIR", "/var/tmp/fleets")
    settings = build_settings({"clusters": CLUSTERS}, source="t")
    assert settings.executors.kubernetes == KubernetesConfig(kubeconfig="~/.kube/config", context="prod")
    assert settings.executors.local is not None and str(settings.executors.local.state_dir) == "/var/tmp/fleets"
    assert settings.executors.command is None


def test_the_token_is_never_shown() -> None:
    config = KubernetesConfig(api_url="https://k8s:6443", token="s3cret")
    assert "s3cret" not in repr(config) and "s3cret" not in str(config.model_dump())
