"""Every configuration we ship or document is valid: the example file, the documented bot block, the
Kubernetes ConfigMap, and the shipped and example policies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from lagbot.core.config import build_settings, load_settings
from lagbot.policies.loader import default_policy_path, load_policy
from tests.support.tree import package_folder

ROOT = Path(__file__).resolve().parents[2]


def test_the_example_configuration_is_valid_and_says_what_it_shows() -> None:
    settings = load_settings(ROOT / "examples" / "lagbot.yaml")
    assert [c.name for c in settings.clusters] == ["prod", "staging"]
    assert settings.slack.channel_for("prod", "payments-settlement") == "C0PAYMENTS"
    assert settings.slack.channel_for("prod", "orders") == "C0123ALERTS"
    assert settings.digest.channels[0].timezone == "Europe/Paris"


def test_the_documented_bot_configuration_block_is_valid() -> None:
    reference = (ROOT / "docs" / "configuration.md").read_text()
    block = re.search(r"## Configuration of the bot.*?```yaml\n(.*?)```", reference, re.S)
    assert block is not None
    data = yaml.safe_load(block.group(1))
    settings = build_settings({"clusters": [{"name": "prod", "bootstrap_servers": "k:9092"}], **data}, source="docs")
    assert settings.executors.kubernetes is not None and settings.executors.kubernetes.in_cluster
    assert settings.incidents.resolve_after == 600


def test_the_kubernetes_configmap_holds_a_valid_configuration() -> None:
    base = ROOT / "deploy" / "kubernetes" / "base"
    documents = [d for name in ("config.yaml", "bot.yaml") for d in yaml.safe_load_all((base / name).read_text())]
    [configmap] = [d for d in documents if d["kind"] == "ConfigMap"]
    settings = build_settings(yaml.safe_load(configmap["data"]["lagbot.yaml"]), source="configmap")
    assert settings.http.host == "0.0.0.0" and settings.http.port == 3000
    [deployment] = [d for d in documents if d["kind"] == "Deployment" and d["metadata"]["name"] == "lagbot"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["run", "--config", "/etc/lagbot/lagbot.yaml"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"


@pytest.mark.parametrize(
    "path",
    [default_policy_path(), *sorted((package_folder("lagbot.policies") / "examples").glob("*.yaml"))],
    ids=lambda p: p.name,
)
def test_shipped_policies_are_valid(path: Path) -> None:
    assert load_policy(path).default is not None
