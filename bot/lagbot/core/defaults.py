"""Defaults of the settings that a check needs before the settings' models are loaded: those `ClusterConfig`,
`GroupFilter` and `Evaluation` take (lagbot.core.config), and the rule by which a group filter picks groups.

Kept apart from lagbot.core.config, which loads pydantic and every settings model (~150 ms of CPU), so that
`lagbot check --bootstrap` can start reading the cluster it names, and its time index, while those load
(lagbot.cli.early).
"""

from __future__ import annotations

from collections.abc import Iterable

from lagbot.core.patterns import fullmatch

REQUEST_TIMEOUT = 10.0
"""Seconds a request to the cluster may take (`ClusterConfig.request_timeout`)."""
ALL_GROUPS = ".*"
"""The group filter's default `include`: every group."""
HISTORY_HORIZONS = (60.0, 300.0, 900.0, 3600.0)
"""The time index's default horizons in seconds (`Evaluation.history_horizons`): the last 1, 5, 15 and 60 minutes."""


def group_matches(include: Iterable[str], exclude: Iterable[str], group: str) -> bool:
    """Whether a group filter picks `group`: a full match of an `include` regex and of no `exclude` one."""
    included = any(fullmatch(p, group) for p in include)
    return included and not any(fullmatch(p, group) for p in exclude)
