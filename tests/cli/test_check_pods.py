"""`lagbot check` shows the owners' pods on the causes: in the table's cause lines and as each cause's `pods` in
--json; a pod read that hangs does not fail the check, which says once that the pods could not be read; a policy file
that names no workload loads nothing of the remediations.

On real parts: a stalled group on Apache Kafka whose members are named as the pods of a Deployment on the real API
server (tests/support/pod_lines_rig.py), read by the KubernetesExecutor as lagbot's ServiceAccount under the shipped
evidence Role, the pod status patched as a kubelet writes it. The hang is the one fault the real server cannot be made
to produce (tests/support/k8s_faults.py). `lagbot check` runs in this process through its entry point (`main`), and
in a fresh interpreter where what it imports is counted.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from lagbot.cli.main import main
from tests.conftest import Kafka, Names
from tests.support.cli_imports import NOT_FOR_A_CHECK, run_check
from tests.support.k8s_faults import FaultyApiServer
from tests.support.k8s_fixtures import Cluster
from tests.support.k8s_rbac import BOT_ACCOUNT, BOT_NAMESPACE
from tests.support.pod_evidence_rig import orders, orders_policy, orders_workload
from tests.support.pod_lines_rig import HOST, ago, explanation, settings, stalled_on_pods, topic_with_backlog
from tests.support.pod_status import HOSTILE_CUT, LIMITS, hostile, oom_findings, oom_looping

pytestmark = pytest.mark.integration

__all__ = ["orders"]  # a fixture, from tests.support.pod_evidence_rig


def config(tmp_path: Path, kafka: Kafka, group: str, rules: dict[str, Any] | None, k8s: dict[str, Any]) -> Path:
    """lagbot's configuration for the group, with a policy file (`rules`: its content; None: no policy file)."""
    configured = {**settings(kafka, group), "executors": {"kubernetes": k8s}}
    if rules is not None:
        (tmp_path / "policy.yaml").write_text(yaml.safe_dump(rules), encoding="utf-8")
        configured["policy_file"] = str(tmp_path / "policy.yaml")
    path = tmp_path / "lagbot.yaml"
    path.write_text(yaml.safe_dump(configured), encoding="utf-8")
    return path


def as_bot(k8s: Cluster) -> dict[str, Any]:
    """The kubernetes executor's settings as lagbot's ServiceAccount (a TokenRequest token, the cluster's CA)."""
    token = k8s.service_account_token(BOT_NAMESPACE, BOT_ACCOUNT)
    return {"api_url": k8s.url, "token": token, "ca_file": str(k8s.plane.ca_file), "timeout": 10}


def check(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> tuple[int, str]:
    """`lagbot check -c path -n 3 --every 1 ...` through its entry point: its exit code and what it printed."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(["check", "-c", str(path), "-n", "3", "--every", "1", *args])
    out = capsys.readouterr().out
    assert isinstance(done.value.code, int)
    return done.value.code, out


def stuck_cause(document: dict[str, Any]) -> dict[str, Any]:
    [group] = document["groups"]
    [cause] = [c for c in group["causes"] if c["kind"] == "stuck_consumer"]
    return dict(cause)


def cause_line(plain: str) -> str:
    [line] = [line for line in plain.splitlines() if line.startswith("  1. [stuck_consumer] ")]
    return line


def test_check_shows_an_oom_looping_owner_s_pod_in_the_table_and_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, orders: Cluster, kafka: Kafka, names: Names
) -> None:
    topic, group = topic_with_backlog(kafka, names)
    pods = [p.metadata.name for p in orders.wait_pods("orders", 2)]
    path = config(tmp_path, kafka, group, orders_policy(orders, by_client_id=True), as_bot(orders))
    with stalled_on_pods(kafka.bootstrap, topic, group, pods) as stalled:
        finished = float(int(time.time()) - 250)  # a kubelet's times are whole seconds
        oom_looping(orders, stalled.stuck, "10.1.2.3", finished=finished, restarts=4)
        code, printed = check(capsys, path, "--json")
        before = time.time()
        _, plain = check(capsys, path)
        after = time.time()

    document = json.loads(printed)
    pod = stalled.stuck
    found = oom_findings(pod, ago(document["taken_at"], finished))
    cause = stuck_cause(document)
    owner = {"member_id": stalled.stuck_member, "client_id": pod, "host": HOST}
    assert cause["pods"] == [{"pod": pod, **owner, "findings": found}]
    assert cause["explanation"] == f"{explanation(stalled)}; owner pods: {'; '.join(found)}"
    assert (cause["remediation"], document["pods_error"], document["exit_code"]) == ("restart", None, code)
    # A cause that blames the same member (its partition, hot) shows the same pod; one that blames none shows none.
    blamed = {"stuck_consumer": [cause["pods"][0]], "hot_partition": [cause["pods"][0]]}
    assert all(c["pods"] == blamed.get(c["kind"], []) for c in document["groups"][0]["causes"])

    # The table's cause line, as the thread's: the pod lines after the broker's explanation (as of its own check).
    shown = {
        f"  1. [stuck_consumer] {explanation(stalled)}; owner pods: {'; '.join(oom_findings(pod, ago(at, finished)))}"
        " -> restart"
        for at in (before, after)
    }
    assert cause_line(plain) in shown
    assert "could not be read" not in plain


def test_check_shows_a_hostile_pod_status_cut_escaped_in_json_and_inert_in_the_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, orders: Cluster, kafka: Kafka, names: Names
) -> None:
    topic, group = topic_with_backlog(kafka, names)
    pods = [p.metadata.name for p in orders.wait_pods("orders", 2)]
    path = config(tmp_path, kafka, group, orders_policy(orders, by_client_id=True), as_bot(orders))
    with stalled_on_pods(kafka.bootstrap, topic, group, pods) as stalled:
        finished = float(int(time.time()) - 250)
        hostile(orders, stalled.stuck, "10.1.2.3", finished, is_ready=True)
        _, printed = check(capsys, path, "--json")
        _, plain = check(capsys, path)

    assert "\x1b" not in printed and "\x1b" not in plain  # JSON escapes it; the table writes it out
    document = json.loads(printed)
    pod = stalled.stuck
    restarted = f"pod {pod}: container consumer restarted 2 times, last ended {HOSTILE_CUT} (exit code 1)"
    [read] = stuck_cause(document)["pods"]
    assert read["findings"] == [
        f"{restarted} {ago(document['taken_at'], finished)}",
        f"pod {pod}: container consumer is waiting in {HOSTILE_CUT}",
        LIMITS,
    ]
    visible = "<!channel> `x`\\x1b[2J" + "y" * 81 + "…"
    shown = cause_line(plain)
    assert f"last ended {visible} (exit code 1) " in shown
    assert shown.endswith(
        f"; pod {pod}: container consumer is waiting in {visible}; container consumer limits: cpu 500m, memory 256Mi"
        " -> restart"
    )


def test_a_pod_read_that_hangs_leaves_the_check_as_the_broker_sees_it_and_is_said_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kafka: Kafka, names: Names
) -> None:
    """Two groups, each with a stuck owner: the first pod read hangs; no other pod is asked for in that check."""
    topic, first = topic_with_backlog(kafka, names)
    second = names("second")
    rules = {"version": 1, "default": {"workload": orders_workload(by_client_id=True)}}
    with FaultyApiServer(hang=True).start() as server:
        path = config(tmp_path, kafka, f"{first}|{second}", rules, {"api_url": server.url, "token": "x", "timeout": 1})
        with (
            stalled_on_pods(kafka.bootstrap, topic, first, ["orders-a1", "orders-a2"]) as a,
            stalled_on_pods(kafka.bootstrap, topic, second, ["orders-b1", "orders-b2"]) as b,
        ):
            code, printed = check(capsys, path, "--json")
            _, plain = check(capsys, path)
        asked = sorted({path for _, path in server.requests})

    document = json.loads(printed)
    assert [p.rsplit("/", 1)[-1] for p in asked] in ([a.stuck], [b.stuck])  # one owner's pod, the same in each check
    stuck = asked[0].rsplit("/", 1)[-1]
    problem = document["pods_error"]
    assert problem.startswith(f"the owners' pods could not be read: could not read pod default/{stuck} of ")
    causes = [c for g in document["groups"] for c in g["causes"] if c["kind"] == "stuck_consumer"]
    assert len(causes) == 2 and all(c["pods"] == [] and "owner pods" not in c["explanation"] for c in causes)
    assert code == document["exit_code"]
    said = [line for line in plain.splitlines() if "could not be read" in line]
    assert len(said) == 1 and said[0].startswith(
        f"the owners' pods could not be read: could not read pod default/{stuck}"
    )
    assert "owner pods" not in plain


def test_a_policy_that_names_no_workload_loads_no_remediation(tmp_path: Path, kafka: Kafka, names: Names) -> None:
    topic, group = topic_with_backlog(kafka, names)
    rules = {"version": 1, "default": {"approvers": {"users": ["U0ONCALL1"]}}}
    path = config(tmp_path, kafka, group, rules, {"api_url": "https://127.0.0.1:9", "token": "unused"})
    pods = (
        "lagbot.service.pod_causes",
        "lagbot.remediations.executors.pod_evidence",
        "lagbot.remediations.restart.remediation",
    )
    unwanted = (*(m for m in NOT_FOR_A_CHECK if m != "yaml"), *pods)  # a configuration file is read
    with stalled_on_pods(kafka.bootstrap, topic, group, ["orders-a", "orders-b"]):
        printed, outcome = run_check("check", "-c", str(path), "-n", "3", "--every", "1", "--json", unwanted=unwanted)

    document = json.loads(printed)
    assert outcome == {"exit": document["exit_code"], "loaded": [], "processes": 0}
    assert (stuck_cause(document)["pods"], document["pods_error"]) == ([], None)
