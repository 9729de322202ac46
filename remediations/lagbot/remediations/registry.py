"""The registry: remediation name -> the one instance that plans, executes and verifies it.

`register` checks a remediation is well formed (a name fit for a policy key and a button id, a Risk, a pydantic Params
model that forbids unknown fields) and refuses a second one of the same name. Adding a remediation is one package,
lagbot.remediations.<name>, whose `remediation` module holds `REMEDIATION` (the instance) and whose `answers` module
says which causes it answers, and one line in lagbot.remediations.packages `PACKAGES` (docs/remediations.md;
tests/remediations/test_plugin_contract.py adds a throwaway one that way). Any registered one can be proposed with
`/lag remediate`. `params`
validates raw parameters (from a policy, a button, a stored plan) against the remediation's Params model, and raises
`ParamsError` naming the remediation and each bad field.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from lagbot.remediations import wording
from lagbot.remediations.base import ParamsError as ParamsError  # raised by params(); tests and callers catch it here
from lagbot.remediations.base import Remediation, Risk, validate_params
from lagbot.remediations.packages import PACKAGES

NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
"""A remediation's name: a policy key, part of a button's action id and a word in `/lag remediate`."""


class RegistryError(Exception):
    """A remediation is malformed, registered twice, or unknown."""


_registry: dict[str, Remediation] = {}


def register(remediation: Remediation) -> Remediation:
    """Add `remediation` under its name, after checking it is well formed. Returns it."""
    name = getattr(remediation, "name", None)
    problem = _malformed(remediation)
    if problem is not None:
        raise RegistryError(wording.registry_malformed(str(name), problem))
    if remediation.name in _registry:
        raise RegistryError(wording.registry_twice(remediation.name))
    _registry[remediation.name] = remediation
    return remediation


def _malformed(remediation: Remediation) -> str | None:
    name = getattr(remediation, "name", None)
    if not isinstance(name, str) or NAME.fullmatch(name) is None:
        return wording.registry_bad_name(name)
    if not isinstance(getattr(remediation, "risk", None), Risk):
        return wording.registry_no_risk()
    params = getattr(remediation, "Params", None)
    if not (isinstance(params, type) and issubclass(params, BaseModel)):
        return wording.registry_no_params()
    if params.model_config.get("extra") != "forbid":
        return wording.registry_params_not_strict(params.__name__)
    return None


def get(name: str) -> Remediation:
    """The registered remediation called `name`. Raises RegistryError naming the known ones."""
    try:
        return _registry[name]
    except KeyError:
        raise RegistryError(wording.registry_unknown(name, sorted(_registry))) from None


def names() -> tuple[str, ...]:
    return tuple(sorted(_registry))


def names_in_order() -> tuple[str, ...]:
    """Every registered name, in the order registered."""
    return tuple(_registry)


def remediations() -> tuple[Remediation, ...]:
    """Every registered remediation, in the order registered (lagbot.policies.model derives its schema from them)."""
    return tuple(_registry.values())


def settles(name: str) -> bool:
    """Whether the registered remediation called `name` rebalances the group when it runs (`Remediation.settles`);
    False when none is registered under `name` (a stored state of an action no longer shipped)."""
    remediation = _registry.get(name)
    return remediation is not None and remediation.settles


def risk_of(name: str) -> Risk | None:
    """The risk of a registered remediation; None when none is registered under `name`."""
    remediation = _registry.get(name)
    return None if remediation is None else remediation.risk


def params(name: str, raw: Mapping[str, Any]) -> BaseModel:
    """Validate raw parameters against the remediation's Params model.

    Raises:
        RegistryError: no remediation called `name`.
        ParamsError: one line per bad field, "<name>: <field>: <problem>".
    """
    remediation = get(name)
    return validate_params(name, remediation.Params, raw)


def load(package: str) -> Remediation:
    """The remediation of the package lagbot.remediations.<package>: its `remediation` module's REMEDIATION."""
    module = importlib.import_module(f"lagbot.remediations.{package}.remediation")
    remediation = getattr(module, "REMEDIATION", None)
    if not isinstance(remediation, Remediation) or remediation.name != package:
        raise RegistryError(wording.registry_malformed(package, wording.registry_not_its_package(package)))
    return remediation


for _package in PACKAGES:
    register(load(_package))
