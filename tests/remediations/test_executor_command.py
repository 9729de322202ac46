"""The command executor running real programs: a small kubectl-like script written by each test.

The script records the argv it received (one JSON line per run) and keeps a replica count in a file,
so the tests check exactly what was run, that nothing ran when a value was refused, the timeout
(the whole process group is killed), and the trimming of the output.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from lagbot.core.model import Member
from lagbot.remediations.executors.base import ExecutorError, Workload
from lagbot.remediations.executors.command import CommandExecutor, trim
from lagbot.remediations.executors.config import CommandConfig, ExecutorsConfig, build_executor

pytestmark = pytest.mark.integration

FAKE_KUBECTL = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "runs.jsonl"), "a") as runs:
        runs.write(json.dumps(sys.argv[1:]) + "\\n")
    state = os.path.join(here, "replicas")
    verb = sys.argv[1]
    if verb == "get":
        print("reading replicas")
        print(open(state).read() if os.path.exists(state) else "2")
    elif verb == "scale":
        open(state, "w").write(sys.argv[3].split("=", 1)[1])
        print(f"{sys.argv[2]} scaled")
    elif verb == "fail":
        print("Error from server (NotFound): deployments.apps \\"orders\\" not found", file=sys.stderr)
        sys.exit(1)
    elif verb == "chatty":
        for i in range(100):
            print(f"line {i}")
    elif verb == "hang":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open(os.path.join(here, "child.pid"), "w").write(str(child.pid))
        print("waiting", flush=True)
        time.sleep(60)
    else:
        print(" ".join(sys.argv[1:]))
    """
)


@pytest.fixture
def kubectl(tmp_path: Path) -> Path:
    script = tmp_path / "kubectl.py"
    script.write_text(FAKE_KUBECTL)
    return script


def runs(kubectl: Path) -> list[list[str]]:
    path = kubectl.parent / "runs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def executor(kubectl: Path, **templates: object) -> CommandExecutor:
    prog = [sys.executable, str(kubectl)]
    defaults: dict[str, object] = {
        "scale": [*prog, "scale", "{kind}/{workload}", "--replicas={replicas}", "-n", "{namespace}"],
        "replicas": [*prog, "get", "{kind}/{workload}", "-n", "{namespace}", "-o", "jsonpath={{.spec.replicas}}"],
        "restart": [*prog, "rollout", "restart", "{kind}/{workload}", "-n", "{namespace}"],
        "restart_member": [*prog, "delete", "pod", "{client_id}", "-n", "{namespace}", "--host={host}"],
    }
    return CommandExecutor(CommandConfig.model_validate({**defaults, **templates}))


ORDERS = Workload(executor="command", name="orders", namespace="shop")


def test_scale_reads_the_count_then_runs_the_template(kubectl: Path) -> None:
    outcome = executor(kubectl).scale(ORDERS, 4)
    assert outcome.ok, outcome.detail
    assert runs(kubectl) == [
        ["get", "deployment/orders", "-n", "shop", "-o", "jsonpath={.spec.replicas}"],
        ["scale", "deployment/orders", "--replicas=4", "-n", "shop"],
    ]
    assert outcome.data["before"] == 2 and outcome.data["after"] == 4 and outcome.data["exit_code"] == 0
    assert outcome.detail.splitlines()[0] == "scaled orders from 2 to 4 replicas"
    assert outcome.detail.splitlines()[-1] == "deployment/orders scaled"
    assert executor(kubectl).replicas(ORDERS) == 4


def test_scale_without_a_replicas_template_reports_before_unknown(kubectl: Path) -> None:
    outcome = executor(kubectl, replicas=None).scale(ORDERS, 0)
    assert outcome.ok and outcome.data["before"] is None and outcome.data["after"] == 0
    assert runs(kubectl) == [["scale", "deployment/orders", "--replicas=0", "-n", "shop"]]


def test_restart_and_restart_member_fill_each_element(kubectl: Path) -> None:
    ex = executor(kubectl)
    assert ex.restart(ORDERS.model_copy(update={"kind": "statefulset"})).ok
    member = Member(member_id="consumer-1-4f2a", client_id="orders-7d9f8-x2lqp", host="/10.1.2.3")
    outcome = ex.restart_member(ORDERS, member)
    assert outcome.ok
    assert runs(kubectl) == [
        ["rollout", "restart", "statefulset/orders", "-n", "shop"],
        ["delete", "pod", "orders-7d9f8-x2lqp", "-n", "shop", "--host=10.1.2.3"],
    ]
    assert outcome.detail.endswith("delete pod orders-7d9f8-x2lqp -n shop --host=10.1.2.3")


@pytest.mark.parametrize(
    "client_id",
    ["--all", "-n", "a b", "x;rm -rf /", "$(reboot)", "pod\nother", "`id`", "", "a" * 300],
)
def test_a_bad_value_is_refused_and_nothing_runs(kubectl: Path, client_id: str) -> None:
    outcome = executor(kubectl).restart_member(ORDERS, Member(member_id="m", client_id=client_id, host="h"))
    assert not outcome.ok
    assert outcome.detail.startswith(f"refused {{client_id}} = {client_id!r}: it must match")
    assert runs(kubectl) == []


def test_a_nonzero_exit_is_not_ok_with_the_output(kubectl: Path) -> None:
    outcome = executor(kubectl, restart=[sys.executable, str(kubectl), "fail", "{workload}"]).restart(ORDERS)
    assert not outcome.ok
    assert outcome.data["exit_code"] == 1
    assert outcome.detail.startswith("could not run the restart command for orders: `")
    assert "failed with exit code 1" in outcome.detail
    assert outcome.detail.endswith('Error from server (NotFound): deployments.apps "orders" not found')


def test_the_output_is_trimmed_to_its_last_lines(kubectl: Path) -> None:
    outcome = executor(kubectl, restart=[sys.executable, str(kubectl), "chatty"]).restart(ORDERS)
    lines = outcome.detail.splitlines()
    assert lines[1:] == ["…line 80", *[f"line {i}" for i in range(81, 100)]]
    small = CommandExecutor(CommandConfig(restart=[sys.executable, str(kubectl), "chatty"], output_chars=100))
    detail = small.restart(ORDERS).detail
    assert detail.endswith("line 98\nline 99") and len(detail.split("\n", 1)[1]) == 100


def test_trim_rules() -> None:
    assert trim("a\nb\n", lines=5, chars=100) == "a\nb"
    assert trim("a\nb\nc", lines=2, chars=100) == "…b\nc"
    assert trim("abcdef", lines=5, chars=4) == "…def"


def test_a_hung_command_is_killed_with_its_children_at_the_timeout(kubectl: Path) -> None:
    ex = CommandExecutor(CommandConfig(restart=[sys.executable, str(kubectl), "hang"], timeout=2))
    outcome = ex.restart(ORDERS)
    assert not outcome.ok
    assert "timed out after 2 s and was killed" in outcome.detail
    assert outcome.detail.endswith("waiting")
    child = int((kubectl.parent / "child.pid").read_text())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the command's child outlived the timeout"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_missing_program_is_an_outcome(kubectl: Path) -> None:
    outcome = CommandExecutor(CommandConfig(restart=["/nonexistent/kubectl", "{workload}"])).restart(ORDERS)
    assert not outcome.ok
    assert outcome.detail == "could not run the restart command for orders: program '/nonexistent/kubectl' not found"


def test_replicas_needs_a_count_on_the_last_line(kubectl: Path) -> None:
    ex = executor(kubectl, replicas=[sys.executable, str(kubectl), "say", "not", "a", "number"])
    with pytest.raises(ExecutorError, match="expected a replica count as the last line of the output, got 'say not"):
        ex.replicas(ORDERS)
    failing = executor(kubectl, replicas=[sys.executable, str(kubectl), "fail"])
    with pytest.raises(ExecutorError, match="could not run the replicas command for orders"):
        failing.replicas(ORDERS)
    assert not failing.scale(ORDERS, 3).ok
    assert ["scale", "deployment/orders", "--replicas=3", "-n", "shop"] not in runs(kubectl)


def test_unconfigured_operation_and_foreign_workload(kubectl: Path) -> None:
    ex = CommandExecutor(CommandConfig(restart=[sys.executable, str(kubectl), "x"]))
    with pytest.raises(ExecutorError, match="has no `scale` template"):
        ex.scale(ORDERS, 2)
    outcome = ex.restart(Workload(executor="local", name="orders"))
    assert not outcome.ok and "is for the local executor, not command" in outcome.detail
    assert runs(kubectl) == []


@pytest.mark.parametrize(
    ("templates", "problem"),
    [
        ({}, "give an argv template for at least one of scale, restart, restart_member, replicas"),
        ({"scale": []}, "scale: the argv template needs a program"),
        ({"restart": ["{workload}", "x"]}, "restart: the program '{workload}' must be fixed"),
        ({"restart": ["kubectl", "{replicas}"]}, "restart: unknown placeholder {replicas}"),
        ({"scale": ["kubectl", "{replicas!r}"]}, "use plain {name} placeholders"),
        ({"scale": ["kubectl", "{replicas"]}, "is not a valid template"),
        ({"restart": ["kubectl"], "shell": "sh -c"}, "Extra inputs are not permitted"),
    ],
)
def test_bad_templates_are_refused_at_parse(templates: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        CommandConfig.model_validate(templates)
    assert problem in str(caught.value)


def test_build_executor_and_a_missing_section() -> None:
    config = ExecutorsConfig(command=CommandConfig(restart=["true"]))
    assert isinstance(build_executor("command", config), CommandExecutor)
    with pytest.raises(ExecutorError, match="the local executor is not configured"):
        build_executor("local", config)
    with pytest.raises(ExecutorError, match="no executor called 'ssh'"):
        build_executor("ssh", config)


def test_the_shell_is_never_involved(kubectl: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    ex = executor(kubectl, restart=[sys.executable, str(kubectl), "echo", f"; touch {marker}", "{workload}"])
    outcome = ex.restart(ORDERS)
    assert outcome.ok
    assert runs(kubectl)[-1] == ["echo", f"; touch {marker}", "orders"]
    assert not marker.exists()
    assert os.path.exists(kubectl)
