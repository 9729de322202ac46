"""The `slack` fixture: the project's Slack Web API emulator, started on loopback for one test.

It answers to the test module's `TOKEN` (each module names its own, so a request one module's bot sends can never be
taken for another's); a module that needs users, user groups or another scope defines its own `slack`, which wins.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lagbot.devkit.emulator import SlackEmulator

DEFAULT_TOKEN = "xoxb-lagbot-tests"


@pytest.fixture
def slack(request: pytest.FixtureRequest) -> Iterator[SlackEmulator]:
    token = getattr(request.module, "TOKEN", DEFAULT_TOKEN)
    with SlackEmulator(token=token).start() as running:
        yield running
