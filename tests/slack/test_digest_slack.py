"""The digest posted through slack_sdk's real WebClient to the Slack emulator, from a history kept in real Redis."""

from __future__ import annotations

import io

import matplotlib.image
import pytest
import redis
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from lagbot.core.digest_config import DigestConfig
from lagbot.core.model import Status
from lagbot.devkit.emulator import SlackEmulator
from lagbot.engine.check import CheckReport
from lagbot.service.digest import IncidentSummary, RemediationSummary, post_digest
from lagbot.service.history import MemoryHistoryStore, RedisHistoryStore
from lagbot.slack.digest import compose_digest
from tests.support.slack_messages import section_message
from tests.support.verdict_factory import verdict

pytestmark = pytest.mark.integration

TOKEN = "xoxb-lagbot-test"
NOW = 1_710_234_000.0  # Tue 12 Mar 2024 09:00 UTC
HOUR = 3600.0
CONFIG = DigestConfig(channel="C0ALERTS", timezone="UTC")


def web(slack: SlackEmulator) -> WebClient:
    return WebClient(token=TOKEN, base_url=slack.api_url)


def orders(at: float, lag: int, seconds: float) -> CheckReport:
    status = Status.WARN if lag > 1_000 else Status.OK
    return CheckReport(at, [verdict("orders", total_lag=lag, lag_seconds=seconds, status=status)], clusters=["prod"])


def history_of_a_day(client: redis.Redis) -> RedisHistoryStore:
    """orders in real Redis: 500 messages (50 s) behind yesterday at 09:00, then growing each hour to 12,000 (95 s)."""
    history = RedisHistoryStore(client)
    history.record(orders(NOW - 24 * HOUR, 500, 50.0))
    for hour in range(1, 24):
        history.record(orders(NOW - 24 * HOUR + hour * HOUR, 500 * hour, 4.0 * hour))
    history.record(orders(NOW, 12_000, 95.0))
    return history


def test_one_message_then_the_chart_in_its_thread(slack: SlackEmulator, redis_client: redis.Redis) -> None:
    latest = [verdict("orders", total_lag=12_000, lag_seconds=95.0, status=Status.WARN), verdict("billing")]
    composed = compose_digest(
        config=CONFIG,
        verdicts=latest,
        history=history_of_a_day(redis_client),
        incidents=[IncidentSummary("prod", "orders", NOW - 2 * HOUR, None, 12_000, "warn")],
        remediations=[RemediationSummary("prod", "orders", "scale", "U0ANA", ("U0BOB",), NOW - HOUR, "succeeded")],
        now=NOW,
    )
    assert composed.chart_png is not None

    posted = post_digest(web(slack), CONFIG.channel, composed.message, composed.chart_png, alt_text=composed.chart_alt)

    assert [c.method for c in slack.calls] == [
        "chat.postMessage",
        "files.getUploadURLExternal",
        "upload",
        "files.completeUploadExternal",
    ]
    [post] = slack.calls_to("chat.postMessage")
    assert (post.args["channel"], post.args["text"], post.args["blocks"]) == (
        CONFIG.channel,
        composed.message.text,
        composed.message.json_blocks(),
    )
    [root] = slack.channel(CONFIG.channel)
    assert (posted.channel, posted.ts, posted.upload_error) == (CONFIG.channel, root.ts, None)
    worst_line = root.blocks[2]["text"]["text"].splitlines()[1]
    assert worst_line == "1. `orders` on prod: *95 s* behind, lag 12,000 (WARN) · ↗ vs 24 h ago: 50 s behind, lag 500"

    [complete] = slack.calls_to("files.completeUploadExternal")
    assert (complete.args["channel_id"], complete.args["thread_ts"]) == (CONFIG.channel, root.ts)
    [share] = slack.thread(CONFIG.channel, root.ts)
    [shared_file] = share.files
    assert (shared_file["id"], shared_file["name"], shared_file["title"]) == (
        posted.file_id, "lag-24h.png", "Lag of the worst groups, last 24 h",
    )  # fmt: skip
    uploaded = slack.uploads[shared_file["id"]]
    assert uploaded == composed.chart_png
    assert matplotlib.image.imread(io.BytesIO(uploaded), format="png").shape[:2] == (450, 1000)


def test_no_chart_when_no_group_is_behind(slack: SlackEmulator, redis_client: redis.Redis) -> None:
    composed = compose_digest(config=CONFIG, verdicts=[verdict("billing")], history=RedisHistoryStore(redis_client),
                              incidents=[], remediations=[], now=NOW)  # fmt: skip
    assert composed.chart_png is None
    posted = post_digest(web(slack), CONFIG.channel, composed.message, composed.chart_png)
    assert [c.method for c in slack.calls] == ["chat.postMessage"]
    assert posted.file_id is None and posted.upload_error is None


def test_a_failed_upload_leaves_the_digest_posted_once_and_is_reported(slack: SlackEmulator) -> None:
    slack.fail("files.completeUploadExternal", status=500)
    errors: list[tuple[str, str]] = []
    message = section_message("digest")

    posted = post_digest(
        web(slack), "C0ALERTS", message, b"\x89PNG\r\n\x1a\n0000", on_error=lambda *e: errors.append(e)
    )

    assert posted.upload_error == "internal_error" and posted.file_id is None
    assert errors == [("files.completeUploadExternal", "internal_error")]
    assert len(slack.calls_to("chat.postMessage")) == 1
    assert [m.text for m in slack.channel("C0ALERTS")] == ["digest"]
    assert slack.thread("C0ALERTS", posted.ts) == []


def test_a_failed_post_raises_uploads_nothing_and_is_reported(slack: SlackEmulator) -> None:
    slack.fail("chat.postMessage", status=429, retry_after=1)
    errors: list[tuple[str, str]] = []
    message = section_message("digest")

    with pytest.raises(SlackApiError):
        post_digest(web(slack), "C0ALERTS", message, b"\x89PNG", on_error=lambda *e: errors.append(e))

    assert errors == [("chat.postMessage", "ratelimited")]
    assert [c.method for c in slack.calls] == ["chat.postMessage"]
    assert slack.channel("C0ALERTS") == []


def test_the_emulator_accepts_a_digest_of_5000_groups(slack: SlackEmulator) -> None:
    many = [verdict(f"group-{i:04}", total_lag=i, lag_seconds=float(i), status=Status(i % 6)) for i in range(5_000)]
    incidents = [IncidentSummary("prod", v.group, NOW - 60, None, 1, "page") for v in many]
    composed = compose_digest(config=CONFIG, verdicts=many, history=MemoryHistoryStore(), incidents=incidents,
                              remediations=[], now=NOW)  # fmt: skip
    post_digest(web(slack), CONFIG.channel, composed.message, composed.chart_png)
    assert [c.response["ok"] for c in slack.calls if c.method != "upload"] == [True, True, True]  # type: ignore[index]
