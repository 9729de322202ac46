"""Which policy files make `lagbot check` read the owners' pods (lagbot.cli.pods: pure; the reading itself, on the
real API server and Apache Kafka, is in test_check_pods.py)."""

from __future__ import annotations

from typing import Any

import pytest

from lagbot.cli.pods import names_workload, pods_budget
from lagbot.core.config import build_settings

WORKLOAD = {"executor": "kubernetes", "name": "orders"}


@pytest.mark.parametrize(
    ("policy", "names"),
    [
        ({"default": {"workload": WORKLOAD}}, True),
        ({"default": {}, "rules": [{"name": "a"}, {"name": "b", "workload": WORKLOAD}]}, True),
        ({"default": {"approvers": {"users": []}}, "rules": [{"name": "a"}]}, False),
        ({"default": {"workload": None}}, False),
        ({"rules": "not a list", "default": "not a mapping"}, False),
        ({}, False),
    ],
    ids=["default", "a-rule", "none", "null", "malformed", "empty"],
)
def test_only_a_policy_that_names_a_workload_is_read(policy: dict[str, Any], names: bool) -> None:
    assert names_workload(policy) is names


def test_the_pods_are_read_within_the_check_s_timeout() -> None:
    """--timeout is every cluster's request_timeout; without it, the longest of theirs."""
    clusters = [
        {"name": "a", "bootstrap_servers": "127.0.0.1:9092", "request_timeout": 5},
        {"name": "b", "bootstrap_servers": "127.0.0.1:9093", "request_timeout": 8},
    ]
    assert pods_budget(build_settings({"clusters": clusters}, source="test")) == 8.0
    flagged = [{**c, "request_timeout": 3} for c in clusters]
    assert pods_budget(build_settings({"clusters": flagged}, source="test")) == 3.0
