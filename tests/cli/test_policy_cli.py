"""`lagbot policy validate` and `lagbot policy explain`, through the real entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from lagbot.cli.main import main
from tests.support.tree import package_folder

EXAMPLE = package_folder("lagbot.policies") / "examples" / "teams.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def test_validate_a_good_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "policy", "validate", str(EXAMPLE))
    assert (code, out, err) == (0, f"{EXAMPLE}: valid: 2 rules (and the default)\n", "")


def test_validate_names_every_problem_and_exits_4(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "default: {}\nrules:\n"
        "  - name: orders\n    match: {group: 'orders-.*'}\n"
        "    remediations:\n      scale: {max_replicas: 0}\n      reset_offsets: {approvals_required: 1}\n"
    )
    code, out, err = run(capsys, "policy", "validate", str(path))
    assert (code, out) == (4, "")
    assert err.splitlines() == [
        f"lagbot: {path}: rules[0] (name 'orders'): remediations.scale.max_replicas: Input should be greater than "
        "or equal to 1 (got 0)",
        f"{path}: rules[0] (name 'orders'): remediations.reset_offsets.approvals_required: reset_offsets loses data: "
        "it needs 2 approvals, by two different people (got 1)",
    ]


def test_validate_a_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "policy", "validate", str(tmp_path / "nope.yaml"))
    assert code == 4 and "nope.yaml: cannot read the configuration file" in err and "Traceback" not in err


def test_explain_a_matched_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "policy", "explain", "prod-eu", "payments-settlement", "--policy", str(EXAMPLE))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (
        "payments-settlement on prod-eu: rule 'payments-prod' (rules[0], match cluster 'prod(-eu|-us)?', "
        "group 'payments-.*')"
    )
    assert lines[1] == (
        "thresholds: warn lag > 10,000 messages and growing for 2 min; critical lag > 5 min; page lag > 15 min"
    )
    assert "channel: #payments-oncall" in lines
    assert "approvers: users U01PAYLEAD; members of user groups S01PAYONCALL (looked up in Slack, cached)" in lines
    assert "workload: kubernetes executor, deployment payments/payments-consumer" in lines
    assert (
        "  scale: allowed (medium risk), 1 approval, no auto-approve, cooldown 30 min, proposals expire after 10 min, "
        "replicas 2 to 12 (and at most one per partition)"
    ) in lines
    assert "  drain: not allowed" in lines
    assert "  0: sun 02:00-04:00 Europe/Paris (weekly database maintenance)" in lines
    assert "dry-run: off" in lines


def test_explain_with_the_shipped_default(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "policy", "explain", "prod", "orders")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "orders on prod: the default rule 'default' (none of the 0 rules matches)"
    assert (
        "approvers: NONE configured: nobody can approve any remediation until approvers (users or usergroups) are set"
    ) in lines
    assert "thresholds: those of lagbot's configuration (the rule sets none)" in lines
    assert any(line.startswith("  reset_offsets: allowed (high risk), 2 approvals") for line in lines)
    assert any(line.endswith("NOT offered: the rule names no workload") for line in lines if "restart" in line)


def test_explain_needs_both_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "policy", "explain", "prod")
    assert code == 4 and err.splitlines() == [
        "lagbot: the following arguments are required: GROUP",
        "Usage: lagbot policy explain [--help] [-p <path>] CLUSTER GROUP",
    ]
