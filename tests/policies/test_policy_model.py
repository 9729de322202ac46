"""Policies: validation with messages naming file, rule and field; first match wins; maintenance windows."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from lagbot.core.config import Level, Thresholds
from lagbot.policies.loader import PolicyError, default_policy_path, load_policy, parse_policy
from lagbot.policies.model import MaintenanceWindow, Policy, Rule, remediation_params
from lagbot.remediations import registry
from lagbot.remediations.scale.remediation import ScaleParams
from tests.support.tree import package_folder

EXAMPLES = sorted((package_folder("lagbot.policies") / "examples").glob("*.yaml"))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return path


def at(text: str, tz: str = "UTC") -> float:
    """Epoch seconds of a local wall-clock time, 'YYYY-MM-DD HH:MM' in `tz`."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(tz)).timestamp()


# -- shipped files ---------------------------------------------------------------------------------


def test_shipped_default_is_conservative() -> None:
    policy = load_policy(default_policy_path())
    rule = policy.match("any-cluster", "any-group")
    assert rule is policy.default and policy.rules == ()
    assert not rule.approvers.configured  # nobody can approve until configured
    allowed = rule.remediations.allowed()
    assert sorted(allowed) == ["reset_offsets", "restart", "scale"]
    assert [allowed[a].approvals_required for a in ("restart", "scale", "reset_offsets")] == [1, 1, 2]
    assert not any(p.auto_approve for p in allowed.values())
    assert rule.workload is None and not rule.dry_run


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_are_valid(path: Path) -> None:
    assert load_policy(path).rules


def test_examples_are_shipped_as_package_data() -> None:
    """They are read as the package's resources (the wheel's content: tests/deploy/test_wheel.py)."""
    from importlib.resources import files

    shipped = sorted(
        p.name for p in files("lagbot.policies").joinpath("examples").iterdir() if p.name.endswith(".yaml")
    )
    assert shipped == [p.name for p in EXAMPLES]
    assert len(EXAMPLES) >= 2


# -- matching --------------------------------------------------------------------------------------

POLICY: dict[str, Any] = {
    "rules": [
        {"name": "payments", "match": {"cluster": "prod", "group": "payments-.*"}, "channel": "#payments"},
        {"name": "prod-any", "match": {"cluster": "prod"}, "channel": "#prod"},
        {"name": "payments-anywhere", "match": {"group": "payments-.*"}, "channel": "#never-for-prod"},
    ],
    "default": {"channel": "#kafka-alerts"},
}


@pytest.mark.parametrize(
    ("cluster", "group", "rule", "index"),
    [
        ("prod", "payments-eu", "payments", 0),
        ("prod", "orders", "prod-any", 1),  # second rule: the first does not match the group
        ("prod", "payments-eu", "payments", 0),  # first match wins over the later, broader ones
        ("staging", "payments-eu", "payments-anywhere", 2),
        ("staging", "orders", "default", None),
        ("prod-2", "payments-eu", "payments-anywhere", 2),  # whole-name match: 'prod' does not match 'prod-2'
    ],
)
def test_first_match_wins_then_the_default(cluster: str, group: str, rule: str, index: int | None) -> None:
    policy = parse_policy(POLICY, source="test")
    assert policy.match(cluster, group).name == rule
    assert policy.match_index(cluster, group) == index


# -- validation messages ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        (
            "default: {}\nrules:\n  - {name: a, match: {group: x}}\n  - {name: b, match: {group: y}}\n"
            "  - name: orders\n    match: {group: 'orders-.*'}\n"
            "    remediations: {scale: {min_replicas: 5, max_replicas: 2}}\n",
            [
                "rules[2] (name 'orders'): remediations.scale.max_replicas: "
                "min_replicas (5) is above max_replicas (2) (got 2)"
            ],
        ),
        (
            "default:\n  remediations: {reset_offsets: {approvals_required: 1}}\n",
            [
                "default: remediations.reset_offsets.approvals_required: "
                "reset_offsets loses data: it needs 2 approvals, by two different people (got 1)"
            ],
        ),
        (
            "default: {}\nrules:\n  - name: risky\n    match: {}\n"
            "    remediations: {scale: {max_replicas: 3, auto_approve: true}}\n",
            [
                "rules[0] (name 'risky'): remediations.scale.auto_approve: auto_approve is only allowed for low-risk "
                "remediations; scale is medium risk (got True)"
            ],
        ),
        (
            "default:\n  remediations: {drain: {auto_approve: true}}\n",
            [
                "default: remediations.drain.auto_approve: "
                "auto_approve is only allowed for low-risk remediations; drain is medium risk "
                "(got True)"
            ],
        ),
        (
            "default:\n  maintenance:\n    - {start: '25:00', end: '02:00', timezone: Mars/Olympus}\n",
            [
                "default: maintenance[0].start: "
                "'25:00' is not a time of day: use HH:MM, 24-hour (00:00 to 24:00) (got '25:00')",
                "default: maintenance[0].timezone: 'Mars/Olympus' is not an IANA time zone name (like Europe/Paris, "
                "America/New_York, UTC) (got 'Mars/Olympus')",
            ],
        ),
        (
            "default: {}\nrules:\n  - {name: x, match: {group: '('}}\n",
            [
                "rules[0] (name 'x'): match.group: '(' is not a valid regular expression (missing ), unterminated "
                "subpattern at position 0) (got '(')"
            ],
        ),
        (
            "default: {}\nrules:\n  - {match: {}, approvers: {users: [alice], usergroups: ['@oncall']}}\n",
            [
                "rules[0]: approvers.users: 'alice' is not a Slack user id (U... or W...); find it in the user's "
                "profile, 'Copy member ID'",
                "rules[0]: approvers.usergroups: '@oncall' is not a Slack user group id (S...); a handle like @oncall "
                "is not an id",
            ],
        ),
        (
            "default: {}\nrules:\n  - {name: a, match: {}}\n  - {name: a, match: {}}\n",
            ["rules: rule names must be unique: 'a' is used by rules[0] and rules[1]"],
        ),
        ("rules: []\n", ["default: Field required"]),
        (
            "version: 2\ndefault: {chanel: '#x', workload: {executor: k8s, name: w}}\n",
            [
                "version: Input should be 1 (got 2)",
                "default: workload.executor: Input should be 'kubernetes', 'command' or 'local' (got 'k8s')",
                "default: chanel: Extra inputs are not permitted (got '#x')",
            ],
        ),
        (
            "default: {}\nrules:\n  - {name: nomatch}\n",
            ["rules[0] (name 'nomatch'): match: Field required"],
        ),
        (
            "default:\n  thresholds: {warn: {growing: true}}\n",
            ["default: thresholds.warn: a level needs at least one of 'messages', 'seconds' or 'doubling_within'"],
        ),
    ],
    ids=[
        "min-over-max",
        "reset-one-approval",
        "auto-approve-medium",
        "auto-approve-drain-medium",
        "window",
        "regex",
        "slack-ids",
        "duplicate-names",
        "no-default",
        "top-level-and-typos",
        "rule-without-match",
        "thresholds-reused",
    ],
)
def test_invalid_policies_name_file_rule_and_field(tmp_path: Path, text: str, problems: list[str]) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PolicyError) as error:
        load_policy(path)
    assert str(error.value).splitlines() == [f"{path}: {p}" for p in problems]


def test_unreadable_and_not_yaml(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read the configuration file"):
        load_policy(tmp_path / "missing.yaml")
    with pytest.raises(PolicyError, match="not valid YAML at line 2"):
        load_policy(write(tmp_path, "default: [\n"))
    with pytest.raises(PolicyError, match="must be a mapping"):
        load_policy(write(tmp_path, "- a\n"))


def test_thresholds_are_bot_configs_own() -> None:
    policy = parse_policy({"default": {"thresholds": {"page": {"seconds": "15m"}}}}, source="t")
    assert isinstance(policy.default.thresholds, Thresholds)
    assert policy.default.thresholds.page == Level(seconds=900)
    assert policy.default.thresholds.warn == Thresholds().warn  # unset levels keep lagbot's defaults


# -- maintenance windows ---------------------------------------------------------------------------

NIGHTS = MaintenanceWindow(days=("fri",), start="22:00", end="06:00", timezone="Europe/Paris")
SUNDAY = MaintenanceWindow(days=("sun",), start="02:00", end="04:00", timezone="America/New_York")


@pytest.mark.parametrize(
    ("window", "moment", "tz", "inside", "why"),
    [
        (NIGHTS, "2027-01-08 22:00", "Europe/Paris", True, "Friday 22:00 Paris: the start is inside"),
        (NIGHTS, "2027-01-09 05:59", "Europe/Paris", True, "Saturday 05:59: the Friday night window continues"),
        (NIGHTS, "2027-01-09 06:00", "Europe/Paris", False, "the end is outside"),
        (NIGHTS, "2027-01-08 21:00", "UTC", True, "21:00 UTC is 22:00 in Paris (winter)"),
        (NIGHTS, "2027-01-09 22:30", "Europe/Paris", False, "Saturday night: not a listed day"),
        (NIGHTS, "2027-01-08 05:00", "Europe/Paris", False, "Friday early morning belongs to Thursday's night"),
        (SUNDAY, "2027-03-14 03:30", "America/New_York", True, "the DST switch day: 03:30 exists and is inside"),
        (SUNDAY, "2027-03-14 07:30", "UTC", True, "07:30 UTC is 03:30 EDT (the offset changed that night)"),
        (SUNDAY, "2027-03-14 08:30", "UTC", False, "08:30 UTC is 04:30 EDT"),
    ],
)
def test_maintenance_windows(window: MaintenanceWindow, moment: str, tz: str, inside: bool, why: str) -> None:
    assert window.covers(at(moment, tz)) is inside, why


def test_rule_in_maintenance_and_auto_approval() -> None:
    rule = Rule.model_validate(
        {
            "maintenance": [NIGHTS.model_dump()],
            "remediations": {"restart": {"auto_approve": True}, "scale": {"max_replicas": 3}},
        }
    )
    inside, outside = at("2027-01-08 23:00", "Europe/Paris"), at("2027-01-08 12:00", "Europe/Paris")
    assert rule.in_maintenance(inside) == NIGHTS and rule.in_maintenance(outside) is None
    assert rule.auto_approves("restart", outside) and not rule.auto_approves("restart", inside)
    assert not rule.auto_approves("scale", outside)  # allowed, but needs a human
    assert not rule.auto_approves("drain", outside)  # not allowed at all
    dry = rule.model_copy(update={"dry_run": True})
    assert not dry.auto_approves("restart", outside)


def test_whole_day_window_and_equal_times() -> None:
    day = MaintenanceWindow(days=("mon",), start="00:00", end="24:00")
    assert day.covers(at("2027-01-04 23:59")) and not day.covers(at("2027-01-05 00:00"))
    with pytest.raises(ValueError, match="start and end are both 10:00: for a whole day use 00:00 to 24:00"):
        MaintenanceWindow(start="10:00", end="10:00")


# -- from a rule to a remediation's parameters -----------------------------------------------------


def test_remediation_params_carry_the_rules_limits_and_workload() -> None:
    policy = Policy.model_validate(
        {
            "default": {
                "workload": {"executor": "local", "name": "fleet"},
                "remediations": {
                    "scale": {"min_replicas": 2, "max_replicas": 8, "hold_for": "10m"},
                    "reset_offsets": {"modes": ["shift"]},
                },
            }
        }
    )
    rule = policy.default
    raw = remediation_params(rule, "scale", current_replicas=3)
    params = registry.params("scale", raw)
    assert isinstance(params, ScaleParams)
    assert (params.min_replicas, params.max_replicas, params.hold_for, params.current_replicas) == (2, 8, 600.0, 3)
    assert params.workload.name == "fleet"
    with pytest.raises(ValueError, match="rule 'default' does not allow restart"):
        remediation_params(rule, "restart")
    with pytest.raises(ValueError, match="does not allow resetting offsets 'latest'; allowed: shift"):
        remediation_params(rule, "reset_offsets", mode="latest")
    no_workload = rule.model_copy(update={"workload": None})
    with pytest.raises(ValueError, match="names no workload, so scale has nothing to act on"):
        remediation_params(no_workload, "scale", current_replicas=3)


def test_approver_mentions_for_escalations() -> None:
    rule = Rule.model_validate({"approvers": {"users": ["U1AB", "W2CD"], "usergroups": ["S0ONCALL"]}})
    assert rule.approvers.mentions() == "<@U1AB> <@W2CD> <!subteam^S0ONCALL>"
    assert Rule().approvers.mentions() == ""
