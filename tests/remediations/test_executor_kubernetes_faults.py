"""The executor facing what a real API server cannot be made to do on demand (tests/support/k8s_faults.py):
a 500, and a request read but never answered. Everything else is tested on the real server
(test_executor_kubernetes.py)."""

from __future__ import annotations

import socket
import time

import pytest

from lagbot.core.model import Member
from lagbot.remediations.executors.base import CutShort, Deadline, ExecutorError, NoAnswer, Workload
from lagbot.remediations.executors.config import KubernetesConfig
from lagbot.remediations.executors.k8s_client import earliest, request_timeout
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


def test_without_a_budget_a_read_that_never_comes_is_retried_once_each_within_the_timeout() -> None:
    """The bot's executor (no budget): each request waits its own timeout, and a read (a GET) is asked once more."""
    with FaultyApiServer(hang=True).start() as server:
        executor = KubernetesExecutor(KubernetesConfig(api_url=server.url, timeout=1))
        with pytest.raises(ExecutorError, match=r"^could not read the replicas of deployment shop/orders: .*timed out"):
            executor.replicas(ORDERS)
    assert server.requests == [("GET", "/apis/apps/v1/namespaces/shop/deployments/orders/scale")] * 2


def test_a_budget_bounds_the_requests_all_together_from_the_first() -> None:
    """With a budget of 2 s (lagbot check's pod reads) and its own timeout of 10 s: the pod read that never gets its
    answer ends at the deadline, cut short, asked once; the next call, past the deadline, sends nothing."""
    member = Member(member_id="m-1", client_id="orders-a1", host="/10.1.2.3")
    workload = ORDERS.model_copy(update={"member_pod": "{client_id}"})
    with FaultyApiServer(hang=True).start() as server:
        executor = KubernetesExecutor(KubernetesConfig(api_url=server.url, timeout=10), budget=2)
        assert executor.api_client is not None  # the client loaded and built: the budget counts from the request
        started = time.monotonic()
        with pytest.raises(ExecutorError) as read:
            executor.owner_pod_evidence(workload, member)
        took = time.monotonic() - started
        with pytest.raises(ExecutorError) as after:
            executor.replicas(ORDERS)
    assert str(read.value) == (
        "could not read pod shop/orders-a1 of deployment shop/orders: cut short: no answer within the 2 s deadline"
    )
    assert str(after.value) == (
        "could not read the replicas of deployment shop/orders: cut short: no answer within the 2 s deadline"
    )
    assert server.requests == [("GET", "/api/v1/namespaces/shop/pods/orders-a1")]
    # It waited for the answer until the deadline, not less; the 2 s of margin above is a loaded machine's thread
    # waking late (its own timeout, 10 s, and a retry would be 20 s).
    assert 2 <= took <= 2 + 2


@pytest.mark.parametrize(
    ("deadline", "now", "seconds"),
    [
        (None, 100.0, 10.0),  # no budget: the executor's timeout
        (Deadline(at=105.0, seconds=5.0), 100.0, 5.0),  # what is left, under the timeout
        (Deadline(at=130.0, seconds=30.0), 100.0, 10.0),  # the timeout, under what is left
        (Deadline(at=105.0, seconds=5.0), 104.5, 0.5),
        (Deadline(at=105.0, seconds=5.0), 105.0, 0.0),  # passed: send nothing
        (Deadline(at=105.0, seconds=5.0), 107.0, 0.0),
    ],
)
def test_a_request_waits_its_timeout_or_what_is_left_of_the_deadline(
    deadline: Deadline | None, now: float, seconds: float
) -> None:
    assert request_timeout(10.0, deadline, now) == seconds


def test_a_caller_s_deadline_bounds_that_call_alone_and_the_others_keep_their_timeout_and_retry() -> None:
    """The bot's executor (no budget), shared by the check's thread and the clicks': a check cycle's read with its
    deadline (2 s) is asked once and cut short at it; a click's read on the same executor, after it, still waits its
    own timeout (3 s) and is asked again once. Nothing of the executor was changed by the deadline."""
    member = Member(member_id="m-1", client_id="orders-a1", host="/10.1.2.3")
    workload = ORDERS.model_copy(update={"member_pod": "{client_id}"})
    pod = ("GET", "/api/v1/namespaces/shop/pods/orders-a1")
    with FaultyApiServer(hang=True).start() as server:
        executor = KubernetesExecutor(KubernetesConfig(api_url=server.url, timeout=3))
        assert executor.api_client is not None and executor.single_try is not None  # loaded: time is the server's
        started = time.monotonic()
        with pytest.raises(CutShort) as cut:
            executor.owner_pod_evidence(workload, member, deadline=Deadline(started + 2, 2))
        took = time.monotonic() - started
        asked_once = list(server.requests)
        with pytest.raises(CutShort):  # past its deadline: nothing sent
            executor.owner_pod_evidence(workload, member, deadline=Deadline(started + 2, 2))
        assert server.requests == asked_once
        started = time.monotonic()
        with pytest.raises(NoAnswer) as click:
            executor.owner_pod_evidence(workload, member)
        took_click = time.monotonic() - started
    assert str(cut.value) == (
        "could not read pod shop/orders-a1 of deployment shop/orders: cut short: no answer within the 2 s deadline"
    )
    assert asked_once == [pod]
    assert not isinstance(click.value, CutShort) and "timed out" in str(click.value)
    assert server.requests == [pod] * 3  # the check's once, the click's twice
    assert executor.deadline is None and executor.budget is None
    # Each waited its bound, not less; the margin is a loaded machine's thread waking late from its socket's timeout
    # (the check's read with a retry would be 4 s; the click's without one, 3 s).
    assert 2 <= took <= 2 + 1.5
    assert 2 * 3 <= took_click <= 2 * 3 + 1.5


def test_a_server_that_refuses_the_connection_gave_no_answer() -> None:
    """A connection refused (nothing listens on the port) is NoAnswer: the server, not what was asked, failed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    executor = KubernetesExecutor(KubernetesConfig(api_url=f"http://127.0.0.1:{port}", timeout=1))
    with pytest.raises(NoAnswer, match=r"^could not read the replicas of deployment shop/orders: "):
        executor.replicas(ORDERS)


def test_the_first_deadline_bounds_a_request() -> None:
    soon, later = Deadline(at=105.0, seconds=5.0), Deadline(at=130.0, seconds=30.0)
    assert earliest(soon, later) is soon and earliest(later, soon) is soon
    assert earliest(None, later) is later and earliest(soon, None) is soon and earliest(None, None) is None
