"""A policy's `remediations:` section is derived from the registry: each remediation declares what a rule may
set for it (its `Policy`), and lagbot.policies names none of them."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lagbot.core.model import GroupVerdict
from lagbot.policies.model import RemediationPolicy, Remediations, remediations_model
from lagbot.remediations import registry
from lagbot.remediations.base import ExecutionContext, Outcome, Plan, PolicyParams, Remediation, Risk
from tests.support.tree import package_folder

POLICIES = package_folder("lagbot.policies")


class PausePolicy(PolicyParams):
    max_pause: int = Field(default=60, ge=1)
    topics: tuple[str, ...] = ()

    @field_validator("topics")
    @classmethod
    def _no_internal(cls, topics: tuple[str, ...]) -> tuple[str, ...]:
        if any(t.startswith("__") for t in topics):
            raise ValueError("internal topics are never paused")
        return topics


class PauseParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_pause: int
    seconds: int = 30


class Pause(Remediation):
    """A remediation lagbot does not have: its module and a registry entry are all it takes."""

    name = "pause"
    risk = Risk.LOW
    Params = PauseParams
    Policy = PausePolicy

    def plan(self, verdict: GroupVerdict, params: BaseModel, *, now: float) -> Plan:
        raise NotImplementedError

    def execute(self, plan: Plan, context: ExecutionContext) -> Outcome:
        raise NotImplementedError


@pytest.fixture
def with_pause(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[Remediations]]:
    """The registry with Pause registered too (restored afterwards), and the section derived from it."""
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    registry.register(Pause())
    yield remediations_model(registry.remediations())


def test_a_newly_registered_remediation_gets_its_policy_section(with_pause: type[Remediations]) -> None:
    section = with_pause.model_validate({"pause": {"max_pause": 5, "cooldown": "10m", "auto_approve": True}})
    allowed = section.allowed()
    assert list(allowed) == ["pause"]
    policy = allowed["pause"]
    assert type(policy).__name__ == "PausePolicy" and policy.action == "pause"
    assert isinstance(policy, PausePolicy) and isinstance(policy, RemediationPolicy)
    assert (policy.max_pause, policy.cooldown, policy.approvals_required, policy.auto_approve) == (5, 600.0, 1, True)
    # What the rule sets and the remediation's Params also have is handed to them, the rule winning.
    assert Pause().policy_params(policy, {"max_pause": 999, "seconds": 5}, rule="r") == {"max_pause": 5, "seconds": 5}
    # The sections of the remediations lagbot has are still there, beside it.
    assert list(with_pause.model_fields) == [*registry.PACKAGES, "pause"]


@pytest.mark.parametrize(
    ("given", "loc", "message"),
    [
        ({"max_pause": 0}, ("pause", "max_pause"), "Input should be greater than or equal to 1"),
        ({"topics": ["__consumer_offsets"]}, ("pause", "topics"), "Value error, internal topics are never paused"),
        ({"max_paus": 3}, ("pause", "max_paus"), "Extra inputs are not permitted"),
        ({"approvals_required": 3}, ("pause", "approvals_required"), "Input should be 1 or 2"),
    ],
)
def test_a_new_remediations_bad_policy_is_named_by_its_field(
    with_pause: type[Remediations], given: dict[str, object], loc: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        with_pause.model_validate({"pause": given})
    assert [(e["loc"], e["msg"]) for e in raised.value.errors()] == [(loc, message)]


def test_the_shipped_sections_match_what_each_remediation_declares() -> None:
    section = remediations_model(registry.remediations())
    assert list(section.model_fields) == [r.name for r in registry.remediations()]
    for remediation in registry.remediations():
        policy = section.model_fields[remediation.name].annotation
        model = next(a for a in getattr(policy, "__args__", ()) if a is not type(None))
        assert issubclass(model, remediation.Policy) and issubclass(model, RemediationPolicy)
        own = set(remediation.Policy.model_fields) - set(RemediationPolicy.model_fields)
        assert own <= set(model.model_fields), remediation.name


def _words(source: str) -> Iterator[str]:
    """Identifiers and string constants of a module, docstrings left out."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.alias):
            yield node.asname or node.name
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.value


def _snake(word: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", word).lower()


@pytest.mark.parametrize("path", sorted(POLICIES.glob("*.py")), ids=lambda p: p.name)
def test_the_policies_package_names_no_particular_remediation(path: Path) -> None:
    found = [
        (name, word)
        for word in _words(path.read_text())
        for name in registry.names()
        if re.search(rf"(^|[^a-z]){name}($|[^a-z])", _snake(word))
    ]
    assert found == []
