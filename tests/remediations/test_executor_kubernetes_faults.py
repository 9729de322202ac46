"""The executor facing what a real API server cannot be made to do on demand (tests/support/k8s_faults.py):
a 500, and a request read but never answered. Everything else is tested on the real server
(test_executor_kubernetes.py)."""

from __future__ import annotations

import pytest

from lagbot.remediations.executors.base import ExecutorError, Workload
from lagbot.remediations.executors.config import KubernetesConfig
from lagbot.remediations.executors.kubernetes import KubernetesExecutor
from tests.support.k8s_faults import FaultyApiServer

pytestmark = pytest.mark.integration

ORDERS = Workload(executor="kubernetes", name="orders", namespace="shop")


def test_a_500_is_an_outcome_naming_workload_and_action_and_nothing_is_patched() -> None:
    with FaultyApiServer(status=500, message="etcdserver: request timed out").start() as server:
        executor = KubernetesExecutor(KubernetesConfig(api_url=server.url, token="t", timeout=5))
        outcome = executor.scale(ORDERS, 3)
        with pytest.raises(ExecutorError, match="500 Internal Server Error: etcdserver: request timed out"):
            executor.replicas(ORDERS)
    assert not outcome.ok
    assert outcome.detail == (
        "could not read the replicas of deployment shop/orders: "
        "500 Internal Server Error: etcdserver: request timed out"
    )
    assert [method for method, _ in server.requests] == ["GET", "GET"]


def test_an_answer_that_never_comes_is_cut_off_by_the_timeout() -> None:
    with FaultyApiServer(hang=True).start() as server:
        executor = KubernetesExecutor(KubernetesConfig(api_url=server.url, timeout=1))
        outcome = executor.restart(ORDERS)
    assert not outcome.ok
    assert outcome.detail.startswith("could not restart deployment shop/orders: ")
    assert "timed out" in outcome.detail  # the client's own timeout: the server would have closed without a word
    assert server.requests == [("PATCH", "/apis/apps/v1/namespaces/shop/deployments/orders")]
