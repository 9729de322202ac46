"""Which remediations there are, and the causes each answers, read without loading any remediation.

`PACKAGES` is the registry: one line per remediation, the package lagbot.remediations.<name>, in the order
`lagbot policy explain` lists them (lagbot.remediations.registry loads each one's `remediation` module). A package says
which causes it answers in its `answers` module, which imports nothing but lagbot.core.model: `ADDRESSES`, the cause
kinds it answers, and, where a cause's facts decide (`Fact`: the engine names no action), `answers(cause)`, pure. A
package without an `answers` module answers no cause: it is proposed only when a user asks (`/lag remediate`).

Declarations only: lagbot.service.remedies joins causes to them, and `lagbot check` names a cause's remedy through it
without loading a remediation (nor pydantic, nor the policy model).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from lagbot.core.model import Cause, CauseKind

PACKAGES = (  # one line per remediation, in the order `policy explain` lists them
    "restart",
    "scale",
    "drain",
    "reset_offsets",
)


class AnswersError(Exception):
    """A package's `answers` module is malformed."""


def _any(cause: Cause) -> bool:
    return True


@dataclass(frozen=True)
class Answers:
    """What one remediation answers: of the cause kinds it addresses, those `when` says (from their facts)."""

    name: str
    addresses: frozenset[CauseKind]
    when: Callable[[Cause], bool] = _any

    def answers(self, cause: Cause) -> bool:
        return cause.kind in self.addresses and self.when(cause)


def load(package: str) -> Answers:
    """What lagbot.remediations.<package> answers (nothing without an `answers` module). Raises AnswersError."""
    name = f"lagbot.remediations.{package}.answers"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return Answers(package, frozenset())
    addresses = getattr(module, "ADDRESSES", None)
    when = getattr(module, "answers", _any)
    if (
        not isinstance(addresses, frozenset)
        or not all(isinstance(k, CauseKind) for k in addresses)
        or not callable(when)
    ):
        from lagbot.remediations import wording  # only to say what is wrong: `lagbot check` never loads the words

        raise AnswersError(wording.answers_malformed(package))
    return Answers(package, frozenset(CauseKind(k) for k in addresses), when)


@functools.cache
def declared() -> tuple[Answers, ...]:
    """What every remediation answers, in the registry's order (loaded once)."""
    return tuple(load(package) for package in PACKAGES)
