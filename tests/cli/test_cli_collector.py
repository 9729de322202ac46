"""As the `lagbot` process, the command line is parsed (and `check` loads) with CPython's cyclic collector paused;
every other command resumes it before its own arguments are parsed, so a long-running one (`lagbot run`) collects
as before. Called by a program (`main(argv)`), the collector is never touched."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from lagbot.cli import main as cli_main
from lagbot.cli.exits import EXIT_USAGE


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    yield
    gc.unfreeze()
    gc.enable()
    cli_main._collector_paused = False


def run_as_the_process(monkeypatch: pytest.MonkeyPatch, *args: str) -> int | str | None:
    monkeypatch.setattr(sys, "argv", ["lagbot", *args])
    with pytest.raises(SystemExit) as done:
        cli_main.main()
    return done.value.code


@pytest.mark.parametrize("command", ["run", "drain", "demo", "fleet", "policy"])
def test_every_command_but_check_runs_with_the_collector_on(monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    assert run_as_the_process(monkeypatch, command, "--no-such-option") == EXIT_USAGE
    assert gc.isenabled()


def test_check_parses_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_as_the_process(monkeypatch, "check", "--no-such-option") == EXIT_USAGE
    assert not gc.isenabled()  # resumed by `check` itself once it has loaded, before the check's own work


def test_called_by_a_program_the_collector_is_left_alone() -> None:
    with pytest.raises(SystemExit):
        cli_main.main(["check", "--no-such-option"])
    assert gc.isenabled()


def test_a_collector_disabled_by_whoever_runs_lagbot_stays_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    gc.disable()
    assert run_as_the_process(monkeypatch, "run", "--no-such-option") == EXIT_USAGE
    assert not gc.isenabled()
