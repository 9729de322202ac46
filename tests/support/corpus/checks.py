"""The corpus's `lagbot check --json --verbose` processes, and when each took its first snapshot.

A check logs each snapshot it took on stderr (`"msg": "snapshot taken"`, with --verbose). A scenario that must act
after the checks' first snapshot (a rewind, a member leaving, writes starting) waits on `first_snapshots`: the
log line comes once the first snapshot is in (with the read taken early, even later), and the second is taken a
whole `--every` after it.
"""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys
import threading
from typing import IO, Any

from tests.support.waiting import wait_for

FIRST_SNAPSHOT_WAIT = 90.0
"""Seconds a scenario waits for the checks' first snapshots at most."""

_lock = threading.Lock()
_first_taken: dict[str, list[threading.Event]] = collections.defaultdict(list)
"""Per group: one event per check started on it, set when that check logged its first snapshot."""


class CheckRun:
    """`lagbot check` on one group, as a user runs it (with --json and --verbose), started at once."""

    def __init__(self, bootstrap: str, group: str, flags: tuple[str, ...]) -> None:
        command = [sys.executable, "-m", "lagbot.cli.main", "check", "-b", bootstrap, "--group", re.escape(group)]
        self.group = group
        self.first_taken = threading.Event()
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._stdout: list[str] = []
        with _lock:
            _first_taken[group].append(self.first_taken)
        self._process = subprocess.Popen(
            [*command, "--json", "--verbose", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None and self._process.stderr is not None
        self._readers = [
            threading.Thread(target=self._read_stdout, args=(self._process.stdout,), daemon=True),
            threading.Thread(target=self._read_stderr, args=(self._process.stderr,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self, stream: IO[str]) -> None:
        self._stdout.append(stream.read())

    def _read_stderr(self, stream: IO[str]) -> None:
        for line in stream:
            self._stderr.append(line)
            if _is_first_snapshot(line):
                self.first_taken.set()

    def outcome(self, timeout: float = 120.0) -> dict[str, Any]:
        """The group's object of the check's JSON (status ERR when the check did not list the group)."""
        try:
            self._process.wait(timeout)
        finally:
            if self._process.poll() is None:
                self._process.kill()
            for reader in self._readers:
                reader.join(10)
        out = "".join(self._stdout)
        if not out:
            raise RuntimeError(f"lagbot check printed nothing (exit {self._process.returncode}): {self.stderr()}")
        found = [g for g in json.loads(out)["groups"] if g["group"] == self.group]
        if not found:
            return {"status": "ERR", "causes": [], "group": self.group}
        return dict(found[0])

    def stderr(self) -> str:
        return "".join(self._stderr)[-2000:]


def _is_first_snapshot(line: str) -> bool:
    if '"snapshot taken"' not in line:
        return False
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("msg") == "snapshot taken" and record.get("sample") == 1


def first_snapshots(group: str, count: int, timeout: float = FIRST_SNAPSHOT_WAIT) -> None:
    """Wait until `count` checks of `group` were started and each took its first snapshot."""

    def taken() -> bool:
        with _lock:
            events = list(_first_taken.get(group, ()))
        return len(events) >= count and all(e.is_set() for e in events)

    wait_for(f"{count} checks of {group} to take their first snapshot", taken, timeout=timeout, every=0.05)
