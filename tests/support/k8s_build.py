"""The control plane's build as the tests see it: waited for while it runs, its failure told in one clear message.

`make test` starts `tools/k8s/fetch.sh --background` and pytest at once: Go compiles the control plane (8-10 min
cold on 2 cores) while both workers run the rest of the suite, and the tests that need the binaries run last on
each worker (`needs_control_plane`, ordered by tests/conftest.py). A build holds `.k8s/build.lock` (flock) from its
start to its end and then writes `.k8s/build.status` (`ok` or `failed <exit status>`); its output is
`.k8s/build.log`. With the binaries already there (the pin unchanged) no build starts and nothing waits.
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.support.k8s_cluster import BIN, binaries_missing
from tests.support.waiting import wait_for

FOLDER = BIN.parent
LOCK = FOLDER / "build.lock"
LOG = FOLDER / "build.log"
WAIT_SECONDS = 40 * 60.0
"""How long a worker waits in all for a build still running, from its first wait: a cold build takes 8-10 min on 2
cores alone, and over 30 min beside the suite's other tests on a loaded machine (its priority is lowered)."""
LOG_LINES = 15


def build_running(lock: Path = LOCK) -> bool:
    """Whether a build holds the lock now (a build that died holds nothing: the kernel dropped its lock)."""
    if not lock.exists():
        return False
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


class BuildStillRunning(Exception):
    """The build did not end within the wait."""


_deadline: list[float] = []
"""When this process stops waiting for the build: set by its first wait, so the wait is one per worker, not one per
test (the tests after a wait that ran out fail at once, saying the build still runs)."""


def wait_for_build(timeout: float = WAIT_SECONDS, lock: Path = LOCK) -> None:
    """Wait while a build runs, until `timeout` s after this process first waited (`build_problem` then says it
    still runs)."""
    if not _deadline:
        _deadline.append(time.monotonic() + timeout)
    left = _deadline[0] - time.monotonic()
    if left <= 0:
        return
    with contextlib.suppress(BuildStillRunning):
        wait_for("the control plane's build", lambda: not build_running(lock), left, every=1.0, error=BuildStillRunning)


def log_tail(log: Path = LOG, lines: int = LOG_LINES) -> str:
    if not log.is_file():
        return f"({log} does not exist)"
    tail = log.read_text(errors="replace").splitlines()[-lines:]
    return "\n".join(f"    {line}" for line in tail) if tail else f"({log} is empty)"


def build_problem(folder: Path = FOLDER) -> str | None:
    """Why the control plane cannot start now, in words for the test report; None when its binaries are there."""
    lock, status, log = folder / "build.lock", folder / "build.status", folder / "build.log"
    if build_running(lock):
        return (
            f"the control plane's build is still running (a worker waits for it {WAIT_SECONDS / 60:.0f} min at most); "
            f"the last lines of {log}:\n{log_tail(log)}"
        )
    missing = binaries_missing(folder / "bin")
    if not missing:
        return None
    ended = status.read_text().strip() if status.is_file() else ""
    if ended.startswith("failed"):
        code = ended.removeprefix("failed").strip()
        return f"the control plane's build failed (exit status {code}); the last lines of {log}:\n{log_tail(log)}"
    return f"{', '.join(missing)} missing from {folder / 'bin'}: run `make k8s-fetch`"


def needs_control_plane(item: pytest.Item) -> bool:
    """A test that runs the control plane's binaries: it takes `k8s_control_plane` (itself, or through `k8s`, the
    shop ...), or its module runs them from `BIN` (the pinned kubectl, a `ControlPlane` of its own:
    tests/deploy/test_kubernetes_manifests.py). A module that imports `ControlPlane` only to name a type does not
    make its other tests wait (`test_without_go_one_line_says_what_to_install` runs without Go)."""
    if "k8s_control_plane" in getattr(item, "fixturenames", ()):
        return True
    module = getattr(item, "module", None)
    return module is not None and any(value is BIN for value in vars(module).values())


def control_plane_last(items: list[pytest.Item]) -> list[pytest.Item]:
    """The files that need the control plane after all the others, so both workers run the rest of the suite while
    its build (started beside pytest by `make test`) compiles. Within each of the two groups, the files with the
    most tests first (what pytest-xdist's own reordering did, so the last files to finish are short ones). A
    function of the collection alone: every xdist worker computes the same order."""
    late = {item.path for item in items if needs_control_plane(item)}
    sizes = Counter(item.path for item in items)
    first_seen = {path: index for index, path in reversed(list(enumerate(item.path for item in items)))}
    return sorted(items, key=lambda item: (item.path in late, -sizes[item.path], first_seen[item.path]))
