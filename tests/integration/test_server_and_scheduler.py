"""The bot's HTTP server (health, metrics, limits) and its schedule (checks, leadership, digests by cron)."""

from __future__ import annotations

import urllib.error
import urllib.request
from datetime import UTC, datetime

import redis

from bot.config import Settings
from bot.scheduler import build_scheduler
from bot.server import METRICS_CONTENT_TYPE, BotHTTPServer
from bot.service import Bot, slack_client


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
    bot = Bot(settings, redis_client, slack_client("xoxb-x", "http://127.0.0.1:9/api/"))
    scheduler = build_scheduler(bot)
    jobs = {job.id: job for job in scheduler.get_jobs()}
    assert sorted(jobs) == ["check:prod", "check:staging", "digest:C0DIGEST", "leadership"]
    assert jobs["leadership"].trigger.interval.total_seconds() == 10
    assert jobs["check:prod"].trigger.interval.total_seconds() == 60
    assert jobs["check:staging"].trigger.interval.total_seconds() == 300
    digest = jobs["digest:C0DIGEST"].trigger
    # Saturday 2026-11-21 12:00 UTC: the next weekday 09:00 in Paris is Monday 08:00 UTC.
    after = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    assert digest.get_next_fire_time(None, after).astimezone(UTC) == datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
