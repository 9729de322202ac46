"""Fixtures of the core tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No LAGBOT_* variable of the machine running the tests leaks into them (settings read the environment)."""
    for name in list(os.environ):
        if name.upper().startswith("LAGBOT_"):
            monkeypatch.delenv(name)
    yield
