"""Settings for a command: the file (or the environment), then the command-line flags, which win over both."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from lagbot.cli import wording
from lagbot.cli.early import FLAG_CLUSTER
from lagbot.core.config import ClusterConfig, ConfigError, GroupFilter, Settings, build_settings, load_settings
from lagbot.engine.collector import check_clients

M = TypeVar("M", bound=BaseModel)


def load_for_cli(
    config: Path | None,
    bootstrap: str | None,
    group: str | None,
    *,
    takes_bootstrap: bool = True,
    timeout: float | None = None,
) -> Settings:
    """Settings from the file (or the environment), then the command-line flags, which win over both.

    `takes_bootstrap`: whether the command has a --bootstrap flag to suggest when nothing names a cluster.
    `timeout`: --timeout, every cluster's request timeout.

    Raises:
        ConfigError: a bad file, environment variable, flag, or librdkafka property, named.
    """
    if config is None and bootstrap is None and "LAGBOT_CLUSTERS" not in os.environ:
        raise ConfigError(wording.cli_no_cluster() if takes_bootstrap else wording.cli_no_config())
    if config is not None:
        settings, source = load_settings(config), str(config)
    else:
        # Clusters come from --bootstrap (or else LAGBOT_CLUSTERS); the rest may still come from the environment.
        seed: dict[str, Any] = {}
        if bootstrap is not None:  # validated here, so a bad value is named as the flag
            cluster = _flag(ClusterConfig, "--bootstrap", name=FLAG_CLUSTER, bootstrap_servers=bootstrap)
            seed = {"clusters": [cluster.model_dump()]}
        settings, source = build_settings(seed, source="environment"), "environment"
    settings = apply_flags(settings, bootstrap=bootstrap, group=group, replace_clusters=config is None)
    if timeout is not None:
        settings = settings.model_copy(
            update={"clusters": [c.model_copy(update={"request_timeout": timeout}) for c in settings.clusters]}
        )
    check_clients(settings, source=source)
    return settings


def apply_flags(settings: Settings, *, bootstrap: str | None, group: str | None, replace_clusters: bool) -> Settings:
    """`--bootstrap` and `--group` over validated settings (each overridden piece is validated on its own)."""
    clusters = list(settings.clusters)
    if bootstrap is not None:
        if replace_clusters:
            clusters = [_flag(ClusterConfig, "--bootstrap", name=FLAG_CLUSTER, bootstrap_servers=bootstrap)]
        elif len(clusters) == 1:
            clusters = [
                _flag(ClusterConfig, "--bootstrap", **{**clusters[0].model_dump(), "bootstrap_servers": bootstrap})
            ]
        else:
            raise ConfigError(wording.bad_option("--bootstrap", wording.cli_bootstrap_needs_one_cluster()))
    if group is not None:
        clusters = [
            c.model_copy(update={"groups": _flag(GroupFilter, "--group", include=[group], exclude=c.groups.exclude)})
            for c in clusters
        ]
    return settings.model_copy(update={"clusters": clusters})


def _flag(model: type[M], option: str, **values: Any) -> M:
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        problem = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors(include_url=False))
        raise ConfigError(wording.bad_option(option, problem)) from None
