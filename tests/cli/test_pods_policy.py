"""Which policy files make `lagbot check` read the owners' pods (lagbot.cli.pods: pure; the reading itself, on the
real API server and Apache Kafka, is in test_check_pods.py)."""

from __future__ import annotations

from typing import Any

import pytest

from lagbot.cli.pods import names_workload

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
