"""What a newcomer types first, through the real entry point: help, version, missing or bad configuration.

Bad input is exit 4 with the field or file named, never an internal error (70) or a traceback.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest

from lagbot.cli.main import main
from tests.support.tree import package_folder

NOT_UTF8 = b"clusters:\n  - name: caf\xe9\n"  # Latin-1, as an editor on another system may save it
EXAMPLES = sorted((package_folder("lagbot.policies") / "examples").glob("*.yaml"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


@pytest.fixture(autouse=True)
def no_lagbot_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAGBOT_CLUSTERS", raising=False)
    monkeypatch.delenv("LAGBOT_REDIS_URL", raising=False)


def test_bare_lagbot_prints_the_help_and_no_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert code == 0 and err == ""
    assert out.startswith("Usage: lagbot [--help] [--version] COMMAND ...\n") and "--version" in out
    listed = out.split("\nCommands:\n", 1)[1]
    assert [line.split()[0] for line in listed.splitlines() if line.startswith("  ") and line[2] != " "] == [
        "check",
        "run",
        "demo",
        "drain",
        "policy",
        "fleet",
        "audit",
        "history",
        "thresholds",
    ]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--version") == (0, f"lagbot {version('lagbot')}\n", "")


def test_clusters_from_the_environment_that_are_not_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAGBOT_CLUSTERS", "not json")
    code, out, err = run(capsys, "check", "-n", "1")
    assert (code, out) == (4, "")
    assert err == (
        "lagbot: environment variable LAGBOT_CLUSTERS: not valid JSON (clusters takes a JSON value, "
        'e.g. \'[{"name": "prod", "bootstrap_servers": "kafka:9092"}]\')\n'
    )


@pytest.mark.parametrize("argv", [("check", "-n", "1", "-c"), ("policy", "validate")], ids=["check", "policy"])
def test_a_file_that_is_not_utf8_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: tuple[str, ...]
) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(NOT_UTF8)
    code, out, err = run(capsys, *argv, str(path))
    assert (code, out) == (4, "")
    assert err == f"lagbot: {path}: not UTF-8 text (byte 0xe9 at position 23): save the file as UTF-8\n"


def test_run_without_configuration_does_not_suggest_a_flag_it_lacks(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "run")
    assert (code, out) == (4, "")
    assert err == (
        "lagbot: no configuration: give --config FILE (see examples/lagbot.yaml), "
        "or set LAGBOT_CLUSTERS and LAGBOT_REDIS_URL\n"
    )
    assert "--bootstrap" not in err


def test_audit_export_without_configuration_says_where_the_trail_is(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "audit", "export")
    assert (code, out) == (4, "")
    assert err == (
        "lagbot: the audit trail is in the bot's Redis: give --config FILE (the bot's configuration, with "
        "redis_url), or set LAGBOT_CLUSTERS and LAGBOT_REDIS_URL\n"
    )


def test_policy_validate_takes_several_files(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "policy", "validate", *map(str, EXAMPLES))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"{EXAMPLES[0]}: valid: 1 rules (and the default)",
        f"{EXAMPLES[1]}: valid: 2 rules (and the default)",
    ]


def test_policy_validate_reports_every_bad_file_and_still_checks_the_others(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(NOT_UTF8)
    missing = tmp_path / "missing.yaml"
    code, out, err = run(capsys, "policy", "validate", str(bad), str(EXAMPLES[1]), str(missing))
    assert code == 4
    assert out == f"{EXAMPLES[1]}: valid: 2 rules (and the default)\n"
    assert err.splitlines() == [
        f"lagbot: {bad}: not UTF-8 text (byte 0xe9 at position 23): save the file as UTF-8",
        f"{missing}: cannot read the configuration file: No such file or directory",
    ]


def test_report_errors_are_one_line_on_a_narrow_non_terminal_output() -> None:
    import io

    from rich.console import Console

    from lagbot.cli.terminal import print_report
    from lagbot.engine.check import CheckReport

    error = "cluster 'default' unreachable while listing consumer groups: " + "Local: Timed out (_TIMED_OUT) " * 12
    out = io.StringIO()
    print_report(CheckReport(taken_at=0.0, verdicts=[], cluster_errors={"default": error}), Console(file=out, width=80))
    assert out.getvalue().splitlines() == [f"cluster default: UNREACHABLE ({error})"]
