"""Settings for the engine's tests on the session broker."""

from __future__ import annotations

from typing import Any

from lagbot.core.config import build_settings
from tests.conftest import Kafka

FAST_RULES = {"min_samples": 3, "min_span": 2}


def settings_for(kafka: Kafka, group: str, **extra: Any) -> Any:
    return build_settings(
        {
            "clusters": [
                {
                    "name": "embedded",
                    "bootstrap_servers": kafka.bootstrap,
                    "groups": {"include": [group]},
                    "request_timeout": 5,
                }
            ],
            "evaluation": FAST_RULES,
            **extra,
        },
        source="test",
    )
