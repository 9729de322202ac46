"""The bot's HTTP server (health, metrics, limits) and its schedule (checks, leadership, digests by cron)."""

from __future__ import annotations

import urllib.error
import urllib.request
from datetime import UTC, datetime

import pytest
import redis

from lagbot.app.server import METRICS_CONTENT_TYPE, BotHTTPServer
from lagbot.core.config import Settings
from lagbot.service.bot import Bot
from lagbot.service.scheduler import build_scheduler
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter

pytestmark = pytest.mark.integration


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def test_health_metrics_and_what_is_not_served() -> None:
    healthy = {"value": True}
    server = BotHTTPServer(
        host="127.0.0.1",
        port=0,
        app=None,
        health=lambda: (healthy["value"], {"ok": healthy["value"]}),
        metrics=lambda: b"lagbot_check_cycles_total 3.0\n",
    ).start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert get(f"{base}/healthz") == (200, "application/json", '{"ok": true}')
        healthy["value"] = False
        assert get(f"{base}/healthz") == (503, "application/json", '{"ok": false}')
        # Liveness is the process: unhealthy dependencies do not make it fail (no restart loop while Redis is down).
        assert get(f"{base}/livez") == (200, "application/json", '{"live": true}')
        assert get(f"{base}/metrics") == (200, METRICS_CONTENT_TYPE, "lagbot_check_cycles_total 3.0\n")
        assert get(f"{base}/nothing")[0] == 404
        # Without an app (Socket Mode) there is no Slack endpoint at all.
        request = urllib.request.Request(f"{base}/slack/events", data=b"x", method="POST")
        try:
            urllib.request.urlopen(request, timeout=5)
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
        else:
            raise AssertionError("POST /slack/events answered without an app")
    finally:
        server.stop()


def test_the_schedule_has_leadership_a_check_per_cluster_and_digests_in_their_zone(redis_client: redis.Redis) -> None:
    settings = Settings(
        clusters=[
            {"name": "prod", "bootstrap_servers": "k:9092", "check_interval": "1m"},  # type: ignore[list-item]
            {"name": "staging", "bootstrap_servers": "s:9092", "check_interval": "5m"},  # type: ignore[list-item]
        ],
        leader={"lease_ttl": "30s"},  # type: ignore[arg-type]
        digest={"channels": [{"channel": "C0DIGEST", "cron": "0 9 * * mon-fri", "timezone": "Europe/Paris"}]},  # type: ignore[arg-type]
    )
    bot = Bot.on_redis(settings, redis_client, slack_client("xoxb-x", "http://127.0.0.1:9/api/"), SlackPresenter())
    scheduler = build_scheduler(bot)
    jobs = {job.id: job for job in scheduler.get_jobs()}
    assert sorted(jobs) == ["check:prod", "check:staging", "digest:C0DIGEST", "leadership", "outbox"]
    assert jobs["leadership"].trigger.interval.total_seconds() == 10
    assert jobs["outbox"].trigger.interval.total_seconds() == 10  # a dead deliverer's lock is taken over soon
    assert jobs["check:prod"].trigger.interval.total_seconds() == 60
    assert jobs["check:staging"].trigger.interval.total_seconds() == 300
    digest = jobs["digest:C0DIGEST"].trigger
    # Saturday 2026-11-21 12:00 UTC: the next weekday 09:00 in Paris is Monday 08:00 UTC.
    after = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    assert digest.get_next_fire_time(None, after).astimezone(UTC) == datetime(2026, 11, 23, 8, 0, tzinfo=UTC)


def test_slack_endpoint_refuses_missing_negative_and_oversized_bodies_before_reading_them() -> None:
    import http.client

    from lagbot.app.server import MAX_BODY
    from lagbot.devkit.emulator import SlackEmulator
    from lagbot.slack.app import build_app
    from lagbot.slack.commands import Reply

    with SlackEmulator(token="xoxb-server").start() as slack:
        app = build_app(
            client=slack_client("xoxb-server", slack.api_url),
            signing_secret="secret",
            run_command=lambda text, user, channel: Reply(text="unused"),
        )
        server = BotHTTPServer(
            host="127.0.0.1", port=0, app=app, health=lambda: (True, {}), metrics=lambda: b"", signing_secret="secret"
        )
        server.start()
        try:

            def post(length: str | None) -> int:
                connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
                connection.putrequest("POST", "/slack/events", skip_accept_encoding=True)
                if length is not None:
                    connection.putheader("Content-Length", length)
                connection.endheaders()
                status = connection.getresponse().status
                connection.close()
                return status

            assert post(None) == 411
            assert post("-1") == 400
            assert post("12abc") == 400
            assert post(str(MAX_BODY + 1)) == 413
        finally:
            server.stop()


def test_an_unreachable_redis_is_named_without_its_password(tmp_path: object) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    config = Path(str(tmp_path)) / "lagbot.yaml"
    config.write_text(
        "clusters: [{name: prod, bootstrap_servers: 'k:9092'}]\nredis_url: 'redis://:hunter2@127.0.0.1:9/0'\n"
    )
    env = {**os.environ, "SLACK_BOT_TOKEN": "xoxb-x", "SLACK_SIGNING_SECRET": "s"}
    done = subprocess.run(
        [sys.executable, "-m", "lagbot.cli.main", "run", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 4
    assert "redis_url: cannot reach redis://127.0.0.1:9/0" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout and "Traceback" not in done.stderr
