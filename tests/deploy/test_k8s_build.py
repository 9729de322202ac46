"""The control plane's build beside the tests (tools/k8s/fetch.sh --background, tests/support/k8s_build.py): it
returns at once, holds its lock while it runs, records how it ended, and a failure is told with the log's lines;
the files that need the control plane are collected last."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.k8s_build import build_problem, build_running
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
FETCH = ROOT / "tools" / "k8s" / "fetch.sh"


def without_go(tmp_path: Path, folder: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LAGBOT_K8S_DIR": str(folder)}


def start_in_background(tmp_path: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    """`fetch.sh --background` with no Go on PATH, building into `folder`."""
    return subprocess.run(
        ["bash", str(FETCH), "--background"],
        capture_output=True,
        text=True,
        env=without_go(tmp_path, folder),
        check=False,
        timeout=60,
    )


def test_a_background_build_without_go_returns_at_once_and_records_its_failure(tmp_path: Path) -> None:
    folder = tmp_path / "k8s"
    started = start_in_background(tmp_path, folder)
    assert (started.returncode, started.stderr) == (0, "")
    assert started.stdout == (
        f"k8s-fetch: building in the background (log: {folder}/build.log; status: {folder}/build.status)\n"
    )
    wait_for("the background build's end", lambda: not build_running(folder / "build.lock"), timeout=60)
    assert (folder / "build.status").read_text() == "failed 1\n"
    assert (folder / "build.log").read_text() == (
        "make k8s-fetch: Go is missing; install Go 1.26 or newer (https://go.dev/dl/) and put it on PATH\n"
    )
    assert not (folder / "bin").exists()
    assert build_problem(folder) == (
        f"the control plane's build failed (exit status 1); the last lines of {folder}/build.log:\n"
        "    make k8s-fetch: Go is missing; install Go 1.26 or newer (https://go.dev/dl/) and put it on PATH"
    )


def test_a_build_holding_the_lock_is_running_and_a_second_one_does_not_start(tmp_path: Path) -> None:
    folder = tmp_path / "k8s"
    folder.mkdir()
    lock = folder / "build.lock"
    with subprocess.Popen(["flock", str(lock), "cat"], stdin=subprocess.PIPE) as holder:  # holds until stdin ends
        assert holder.stdin is not None
        wait_for("the lock taken", lambda: build_running(lock), timeout=30)
        second = start_in_background(tmp_path, folder)
        assert (second.returncode, second.stdout) == (
            0,
            f"k8s-fetch: a build is already running (log: {lock.parent}/build.log)\n",
        )
        assert not (folder / "build.log").exists()
        problem = build_problem(folder)
        still = "the control plane's build is still running (a worker waits for it 40 min at most); the last lines of"
        assert problem is not None and problem.startswith(still)
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0
    assert not build_running(lock)
    assert build_problem(folder) == (
        f"etcd, kube-apiserver, kube-controller-manager, kubectl missing from {folder}/bin: run `make k8s-fetch`"
    )


def test_the_files_that_need_the_control_plane_are_collected_last() -> None:
    files = [
        "tests/deploy/test_k8s_control_plane.py",
        "tests/deploy/test_kubernetes_manifests.py",
        "tests/core/test_codec.py",
        "tests/deploy/test_k8s_build.py",
    ]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTEST_ADDOPTS": ""},
        check=False,
        timeout=240,  # a few seconds; minutes when other builds load the machine
    )
    assert collected.returncode == 0, collected.stdout + collected.stderr
    order = [line.split("::")[0] for line in collected.stdout.splitlines() if "::" in line]
    seen = list(dict.fromkeys(order))
    # the rest first, the files with the most tests first; then the control plane's files, the same way
    assert seen[:2] == ["tests/core/test_codec.py", "tests/deploy/test_k8s_build.py"]
    assert set(seen[2:]) == {"tests/deploy/test_kubernetes_manifests.py", "tests/deploy/test_k8s_control_plane.py"}
    assert [order.count(f) for f in seen] == sorted((order.count(f) for f in seen[:2]), reverse=True) + sorted(
        (order.count(f) for f in seen[2:]), reverse=True
    )
