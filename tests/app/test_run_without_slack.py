"""`lagbot run` when Slack is not there, as its own process: an unreachable Slack is one line naming Slack and what
to check, exit 3; a token Slack refuses is one line naming the variable, exit 4; no bolt notice at start; no Slack
mode set is one line naming both variables. Real redis-server, the Slack emulator for Slack's refusal, a closed port
for an unreachable one.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

TOKEN = "xoxb-test-lagbot"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def config(tmp_path: Path, redis_server: EmbeddedRedis, api_url: str) -> Path:
    document: dict[str, Any] = {
        "clusters": [{"name": "prod", "bootstrap_servers": f"127.0.0.1:{closed_port()}"}],
        "redis_url": redis_server.url,
        "slack": {"api_url": api_url, "default_channel": "C0ALERTS"},
        "http": {"host": "127.0.0.1", "port": 0},
    }
    path = tmp_path / "lagbot.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def environ(**slack: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "LAGBOT_"))}
    return {**kept, **slack}


def run(path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lagbot.cli.main", "run", "--config", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_an_unreachable_slack_is_one_line_and_exit_3(tmp_path: Path, redis_server: EmbeddedRedis) -> None:
    api_url = f"http://127.0.0.1:{closed_port()}/api/"
    done = run(config(tmp_path, redis_server, api_url), environ(SLACK_BOT_TOKEN=TOKEN, SLACK_SIGNING_SECRET="s"))
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == (
        f"lagbot: cannot reach Slack at {api_url}: [Errno 111] Connection refused; check this host's network, DNS "
        "and proxy (HTTPS_PROXY), or slack.api_url in the configuration\n"
    )


def test_a_refused_token_is_one_line_naming_the_variable_and_exit_4(
    tmp_path: Path, redis_server: EmbeddedRedis
) -> None:
    with SlackEmulator(token=TOKEN).start() as slack:
        path = config(tmp_path, redis_server, slack.api_url)
        done = run(path, environ(SLACK_BOT_TOKEN="xoxb-revoked", SLACK_SIGNING_SECRET="s"))
        assert [(c.method, c.token) for c in slack.calls_to("auth.test")] == [("auth.test", "xoxb-revoked")]
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == (
        "lagbot: Slack refused the bot token in SLACK_BOT_TOKEN (invalid_auth): check that it is the app's Bot User "
        "OAuth Token (xoxb-...), that the app is installed in the workspace, and that the token was not revoked\n"
    )


def test_no_slack_mode_names_both_variables(tmp_path: Path, redis_server: EmbeddedRedis) -> None:
    done = run(config(tmp_path, redis_server, "http://127.0.0.1:9/api/"), environ(SLACK_BOT_TOKEN=TOKEN))
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == (
        "lagbot: neither SLACK_APP_TOKEN nor SLACK_SIGNING_SECRET is set: set SLACK_APP_TOKEN to the app-level token "
        "(xapp-..., Socket Mode, no public URL needed) or SLACK_SIGNING_SECRET to the app's Signing Secret (HTTP "
        "mode: Slack posts to /slack/events)\n"
    )
    assert "it must hold HTTP mode" not in done.stderr


def test_a_bot_that_starts_prints_no_bolt_notice(tmp_path: Path, redis_server: EmbeddedRedis) -> None:
    with SlackEmulator(token=TOKEN).start() as slack:
        path = config(tmp_path, redis_server, slack.api_url)
        bot = subprocess.Popen(
            [sys.executable, "-m", "lagbot.cli.main", "run", "--config", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environ(SLACK_BOT_TOKEN=TOKEN, SLACK_SIGNING_SECRET="s"),
        )
        try:
            wait_for("bolt's auth.test at start", lambda: slack.calls_to("auth.test"), timeout=60)
            assert bot.stderr is not None
            first = bot.stderr.readline()  # the bot's first log line: it is listening
            assert '"lagbot listening"' in first or "lagbot listening" in first, first
        finally:
            bot.send_signal(signal.SIGTERM)
            _, err = bot.communicate(timeout=60)
    assert bot.returncode == 0
    assert "will be unused" not in first + err and "Traceback" not in err
