"""Read a policy file: YAML -> Policy, or a PolicyError naming the file, the rule and the field.

Each problem is one line: `<file>: rules[2] (name 'orders'): remediations.scale.max_replicas: <problem>`,
`<file>: default: channel: <problem>`, or `<file>: version: <problem>` for the top level. All problems of a
file are reported at once. Reading does no other I/O.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lagbot.core.config import ConfigError, read_yaml
from lagbot.policies import wording
from lagbot.policies.model import Policy

DEFAULT_POLICY = "default.yaml"


class PolicyError(ConfigError):
    """A policy file is unreadable or invalid; the message has one line per problem."""


def default_policy_path() -> Path:
    """The conservative policy shipped inside the package (policies/default.yaml)."""
    return Path(str(resources.files("lagbot.policies").joinpath(DEFAULT_POLICY)))


def load_policy(path: Path) -> Policy:
    """Read and validate the policy in `path`.

    Raises:
        PolicyError: unreadable, not YAML, not a mapping, or invalid (every problem named).
    """
    try:
        data = read_yaml(path)
    except ConfigError as exc:
        raise PolicyError(str(exc)) from None
    return parse_policy(data, source=str(path))


def parse_policy(data: dict[str, Any], *, source: str) -> Policy:
    """Validate a policy given as a mapping; `source` names it in errors."""
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        raise PolicyError(format_policy_errors(exc, data, source=source)) from None


def format_policy_errors(exc: ValidationError, data: dict[str, Any], *, source: str) -> str:
    """One line per problem: the source, the rule (index and name) when inside one, the field, the problem."""
    lines = []
    for error in exc.errors(include_url=False):
        where, field = _split_location(error["loc"], data)
        problem = error["msg"].removeprefix("Value error, ")
        lines.append(wording.policy_error(source, where, field, problem, error.get("input")))
    return "\n".join(lines)


def _split_location(loc: tuple[int | str, ...], data: dict[str, Any]) -> tuple[str | None, str]:
    """('rules', 2, 'remediations', ...) -> ("rules[2] (name 'orders')", 'remediations...')."""
    if len(loc) >= 2 and loc[0] == "rules" and isinstance(loc[1], int):
        index = loc[1]
        return wording.policy_rule_location(index, _rule_name(data, index)), _dotted(loc[2:])
    if len(loc) >= 2 and loc[0] == "default":
        return "default", _dotted(loc[1:])
    return None, _dotted(loc)


def _rule_name(data: dict[str, Any], index: int) -> str | None:
    rules = data.get("rules")
    if isinstance(rules, list) and 0 <= index < len(rules) and isinstance(rules[index], dict):
        name = rules[index].get("name")
        return str(name) if name is not None else None
    return None


def _dotted(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
