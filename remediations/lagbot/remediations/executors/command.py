"""The command executor: an argv template per operation, run without a shell.

Each placeholder is filled element by element (an element never splits into two arguments, and no
shell ever reads it), after its value passed a strict pattern: a value that does not is refused
with a message naming it, and nothing runs. Values may not start with '-', so none can pose as an
option. A run is bounded by `timeout`: after it the whole process group is killed. The output
(stdout and stderr together) is trimmed to its last lines and characters for the Slack thread;
a nonzero exit is `ok=False`.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Mapping
from typing import Any

from lagbot.core.model import Member
from lagbot.remediations.base import Outcome
from lagbot.remediations.executors import wording
from lagbot.remediations.executors.base import Executor, ExecutorError, Workload
from lagbot.remediations.executors.config import CommandConfig

VALUE_PATTERNS: dict[str, re.Pattern[str]] = {
    "workload": re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]{0,252}"),
    "namespace": re.compile(r"[a-z0-9][a-z0-9-]{0,62}"),
    "kind": re.compile(r"deployment|statefulset"),
    "replicas": re.compile(r"0|[1-9][0-9]{0,3}"),
    "client_id": re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]{0,254}"),
    "host": re.compile(r"[A-Za-z0-9_.:\[\]][A-Za-z0-9_.:\[\]-]{0,252}"),
    "member_id": re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.:-]{0,254}"),
}
"""What each placeholder's value must fully match."""

_KILL_GRACE = 5.0


def check_value(name: str, value: str) -> str:
    """`value` if it fully matches the placeholder's pattern.

    Raises:
        ExecutorError: naming the placeholder, the value and the pattern.
    """
    pattern = VALUE_PATTERNS[name]
    if not pattern.fullmatch(value):
        raise ExecutorError(wording.command_bad_value(name, value, pattern.pattern))
    return value


def render(template: list[str], values: Mapping[str, str]) -> list[str]:
    """The argv: each element of `template` with its placeholders filled from validated `values`.

    Raises:
        ExecutorError: a value breaks its pattern (nothing is rendered).
    """
    checked = {name: check_value(name, value) for name, value in values.items()}
    return [element.format_map(checked) for element in template]


def trim(output: str, *, lines: int, chars: int) -> str:
    """The last `lines` lines of `output`, then at most its last `chars` characters ('…' marks a cut)."""
    kept = output.rstrip().splitlines()
    text = "\n".join(kept[-lines:])
    cut = len(kept) > lines
    if len(text) > chars:
        text, cut = text[-(chars - 1) :], True
    return f"…{text}" if cut else text


def workload_values(workload: Workload) -> dict[str, str]:
    return {"workload": workload.name, "namespace": workload.namespace, "kind": workload.kind}


def member_values(member: Member) -> dict[str, str]:
    """A member as the placeholders see it; Kafka's leading '/' of the host is dropped."""
    return {"client_id": member.client_id, "host": member.host.lstrip("/"), "member_id": member.member_id}


class CommandExecutor(Executor):
    """Runs the configured argv template of each operation."""

    name = "command"

    def __init__(self, config: CommandConfig) -> None:
        self.config = config

    def replicas(self, workload: Workload) -> int:
        """The count the `replicas` command prints as the last line of its output."""
        code, output, argv = self._run("replicas", workload, {})
        what = wording.command_doing("replicas", workload.name)
        if code != 0:
            raise ExecutorError(wording.executor_failed(what, wording.command_exit(argv, code, self._trim(output))))
        last = (output.strip().splitlines() or [""])[-1].strip()
        if not re.fullmatch(r"\d{1,6}", last):
            raise ExecutorError(wording.executor_failed(what, wording.command_not_a_count(last)))
        return int(last)

    def scale(self, workload: Workload, replicas: int) -> Outcome:
        if replicas < 0:
            raise ExecutorError(wording.executor_bad_replicas(replicas))
        self._template("scale")
        before: int | None = None
        if self.config.replicas is not None:
            try:
                before = self.replicas(workload)
            except ExecutorError as exc:
                return Outcome(ok=False, detail=str(exc))
        outcome = self._outcome("scale", workload, {"replicas": str(replicas)})
        if not outcome.ok:
            return outcome
        detail = f"{wording.executor_scaled(workload.name, before, replicas)}\n{outcome.detail}".rstrip()
        return Outcome(ok=True, detail=detail, data={**outcome.data, "before": before, "after": replicas})

    def restart(self, workload: Workload) -> Outcome:
        return self._outcome("restart", workload, {})

    def restart_member(self, workload: Workload, member: Member) -> Outcome:
        return self._outcome("restart_member", workload, member_values(member))

    # --- running --------------------------------------------------------------------------------

    def _template(self, operation: str) -> list[str]:
        template = self.config.template(operation)
        if template is None:
            raise ExecutorError(wording.command_no_template(operation))
        return template

    def _outcome(self, operation: str, workload: Workload, extra: dict[str, str]) -> Outcome:
        """Run one operation; ok when it exits 0. detail: the command and its trimmed output."""
        try:
            code, output, argv = self._run(operation, workload, extra)
        except ExecutorError as exc:
            return Outcome(ok=False, detail=str(exc))
        trimmed = self._trim(output)
        data: dict[str, Any] = {"argv": argv, "exit_code": code}
        if code != 0:
            what = wording.command_doing(operation, workload.name)
            detail = wording.executor_failed(what, wording.command_exit(argv, code, trimmed))
            return Outcome(ok=False, detail=detail, data=data)
        return Outcome(ok=True, detail=wording.command_done(argv, trimmed), data=data)

    def _run(self, operation: str, workload: Workload, extra: dict[str, str]) -> tuple[int, str, list[str]]:
        """Render and run; returns (exit code, output, argv).

        Raises:
            ExecutorError: a bad value, no template, a program that cannot start, or the timeout.
        """
        if workload.executor != "command":
            raise ExecutorError(wording.executor_wrong_workload("command", workload.executor, workload.name))
        argv = render(self._template(operation), {**workload_values(workload), **extra})
        what = wording.command_doing(operation, workload.name)
        try:
            code, output = run_bounded(argv, timeout=self.config.timeout, cwd=self.config.cwd)
        except FileNotFoundError as exc:
            raise ExecutorError(wording.executor_failed(what, wording.command_not_found(argv[0]))) from exc
        except PermissionError as exc:
            raise ExecutorError(wording.executor_failed(what, f"{argv[0]}: {exc.strerror}")) from exc
        except subprocess.TimeoutExpired as exc:
            output = _text(exc.output)
            problem = wording.command_timed_out(argv, self.config.timeout, self._trim(output))
            raise ExecutorError(wording.executor_failed(what, problem)) from exc
        return code, output, argv

    def _trim(self, output: str) -> str:
        return trim(output, lines=self.config.output_lines, chars=self.config.output_chars)


def run_bounded(argv: list[str], *, timeout: float, cwd: os.PathLike[str] | str | None = None) -> tuple[int, str]:
    """Run `argv` (no shell, no stdin) in its own process group; returns (exit code, stdout+stderr).

    Raises:
        subprocess.TimeoutExpired: after `timeout`; the whole group was killed, `output` holds what it wrote.
        OSError: the program cannot be started.
    """
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=cwd,
    )
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        try:
            out, _ = process.communicate(timeout=_KILL_GRACE)
        except subprocess.TimeoutExpired:  # a grandchild left the group and holds the pipe
            process.kill()
            out = b""
        raise subprocess.TimeoutExpired(argv, timeout, output=out) from None
    return process.returncode, _text(out)


def _text(raw: bytes | str | None) -> str:
    if raw is None:
        return ""
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
