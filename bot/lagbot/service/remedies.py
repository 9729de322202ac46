"""The join of causes to remediations, in one place: which remediation answers a cause.

The engine names no action: a cause carries its kind and the facts that decide its remedy (lagbot.core.model `Fact`),
and each remediation package declares the causes it answers (lagbot.remediations.packages). Everything that shows or
offers a remedy takes it from here: the incident's proposals and buttons (lagbot.service.remediate), the root's story
(lagbot.service.edits), the causes in Slack, `lagbot check`'s lines and JSON, and the corpus' grading. Pure, and light
enough for `lagbot check`: it loads the declarations only, no remediation.
"""

from __future__ import annotations

from collections.abc import Iterable

from lagbot.core.model import Cause
from lagbot.remediations import packages


def remedy(cause: Cause) -> str | None:
    """The remediation that answers `cause`: the first, in the registry's order, whose package answers it; None when
    none does."""
    return next((answers.name for answers in packages.declared() if answers.answers(cause)), None)


def remedies(causes: Iterable[Cause]) -> list[str]:
    """The remediations that answer `causes`, in their order (the most likely cause's first), each once."""
    found: list[str] = []
    for cause in causes:
        action = remedy(cause)
        if action is not None and action not in found:
            found.append(action)
    return found
