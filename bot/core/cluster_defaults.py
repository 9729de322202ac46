"""What a cluster's settings say without the settings' models: the defaults `ClusterConfig` and `GroupFilter` take
(lagbot.core.config) and the rule by which a group filter picks groups.

Kept apart from lagbot.core.config, which loads pydantic and every settings model (~150 ms of CPU), so that
`lagbot check --bootstrap` can start reading the cluster it names while those load (lagbot.cli.early).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REQUEST_TIMEOUT = 10.0
"""Seconds a request to the cluster may take (`ClusterConfig.request_timeout`)."""
ALL_GROUPS = ".*"
"""The group filter's default `include`: every group."""


def group_matches(include: Iterable[str], exclude: Iterable[str], group: str) -> bool:
    """Whether a group filter picks `group`: a full match of an `include` regex and of no `exclude` one."""
    included = any(re.fullmatch(p, group) for p in include)
    return included and not any(re.fullmatch(p, group) for p in exclude)
