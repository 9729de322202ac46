"""Fuzzing the real `lagbot run` over HTTP: 1,000 generated, correctly signed requests each for block_actions,
view_submission and events. Every one is answered (never a dropped connection), none with a 5xx, the bot's
log holds no traceback, and Redis is exactly as it was (every key and value compared before and after).

The bot does not lead (the leader lease is held by someone else for the whole test), so its checks write
nothing but the state epoch's marker, at the first (every replica looks at it: lagbot.service.state_epoch), which
the snapshot before waits for: any Redis change would come from a request.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.state_epoch import EPOCH_KEY
from lagbot.slack.render import DENY_CALLBACK
from tests.support.bot_process import SIGNING_SECRET, BotProcess, bot_config, wait_for

pytestmark = pytest.mark.integration

TOKEN = "xoxb-fuzz"
EXAMPLES = 1_000
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


class Target:
    """The bot under test, its Redis and what the fuzzing saw."""

    def __init__(self, bot: BotProcess, client: redis.Redis, slack: SlackEmulator) -> None:
        self.bot = bot
        self.redis = client
        self.slack = slack
        self.statuses: dict[str, list[int]] = {}

    def post(self, kind: str, body: str, content_type: str) -> int:
        timestamp = str(int(time.time()))
        digest = hmac.new(SIGNING_SECRET.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256).hexdigest()
        headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": f"v0={digest}",
        }
        connection = http.client.HTTPConnection("127.0.0.1", self.bot.port, timeout=15)
        try:
            connection.request("POST", "/slack/events", body=body.encode(), headers=headers)
            status = connection.getresponse().status
        finally:
            connection.close()
        self.statuses.setdefault(kind, []).append(status)
        return status


def snapshot(client: redis.Redis) -> dict[bytes, bytes | None]:
    return {key: client.dump(key) for key in client.keys("*")}


@pytest.fixture(scope="module")
def target(
    broker: ApacheKafka, redis_server: EmbeddedRedis, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Target]:
    client = redis.Redis.from_url(redis_server.url)
    client.flushdb()
    client.set("lagbot:lease:leader", "someone-else", ex=3_600)  # this bot never leads: its checks only look
    with SlackEmulator(token=TOKEN).start() as slack:
        tmp: Path = tmp_path_factory.mktemp("fuzz")
        bot = BotProcess(tmp, bot_config(broker, redis_server, slack, "fuzz-none"), token=TOKEN, name="fuzzed")
        try:
            bot.wait_ready()
            wait_for("the first check's look at the state epoch", lambda: client.exists(EPOCH_KEY) == 1, timeout=30)
            before = snapshot(client)
            target = Target(bot, client, slack)
            yield target
            wait_for("lazy listeners to finish", lambda: bot.health() is not None, timeout=10)
            after = snapshot(client)
            # No request changed anything in Redis but the replay guard's record of the signatures it saw, each
            # kept only for Slack's replay window, and the per-user counters of approve/deny clicks (a click counts
            # before its proposal is looked up, as a flood of clicks must), each kept only for its minute.
            new = after.keys() - before.keys()
            seen = {key for key in new if key.startswith(b"lagbot:seen:")}
            counted = {key for key in new if key.startswith(b"lagbot:rate:click:")}
            assert {key: value for key, value in after.items() if key not in seen | counted} == before
            assert all(0 < client.ttl(key) <= 660 for key in seen)
            assert all(0 < client.ttl(key) <= 61 for key in counted)
            log = bot.log()
            assert "Traceback" not in log and '"exc":' not in log
        finally:
            bot.stop(signal.SIGKILL)
            client.flushdb()
            client.close()


json_leaf = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=40)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
ids = st.text(max_size=30) | st.sampled_from(["U0APPROVER", "", "<!channel>", "U" + "9" * 40])
maybe = st.one_of  # readability: each field is either well-formed or anything at all


def _drop(fields: dict[str, Any], draw: st.DrawFn) -> dict[str, Any]:
    """Some fields left out."""
    return {k: v for k, v in fields.items() if not draw(st.booleans()) or k == "type"}


@st.composite
def block_actions(draw: st.DrawFn) -> str:
    action = {
        "type": draw(maybe(st.just("button"), json_value)),
        "action_id": draw(
            maybe(st.sampled_from(["approve:p1", "deny:p1", "approve:", "deny:"]), st.text(max_size=20), json_value)
        ),
        "block_id": draw(maybe(st.text(max_size=10), json_value)),
        "value": draw(maybe(st.text(max_size=40), st.sampled_from(["", "0" * 16, "../../etc"]), json_value)),
    }
    payload = {
        "type": draw(maybe(st.just("block_actions"), st.text(max_size=20))),
        "user": draw(maybe(st.fixed_dictionaries({"id": ids}), json_value)),
        "actions": draw(maybe(st.lists(st.just(action), min_size=1, max_size=2), json_value)),
        "trigger_id": draw(maybe(st.text(max_size=20), json_value)),
        "team": draw(maybe(st.fixed_dictionaries({"id": st.text(max_size=10)}), json_value)),
        "channel": draw(maybe(st.fixed_dictionaries({"id": st.text(max_size=10)}), json_value)),
        "container": draw(json_value),
    }
    body = draw(maybe(st.just(_drop(payload, draw)), json_value))
    raw = draw(maybe(st.just(json.dumps(body)), st.text(max_size=60)))
    return urlencode({"payload": raw})


@st.composite
def view_submissions(draw: st.DrawFn) -> str:
    state = draw(
        maybe(
            st.fixed_dictionaries(
                {
                    "values": st.fixed_dictionaries(
                        {
                            "reason": st.fixed_dictionaries(
                                {"text": st.fixed_dictionaries({"value": maybe(st.text(max_size=80), json_value)})}
                            )
                        }
                    )
                }
            ),
            st.fixed_dictionaries({"values": st.dictionaries(st.text(max_size=8), json_value, max_size=3)}),
            json_value,
        )
    )
    view = {
        "callback_id": draw(maybe(st.just(DENY_CALLBACK), st.text(max_size=20), json_value)),
        "private_metadata": draw(maybe(st.text(max_size=30), json_value)),
        "id": draw(maybe(st.text(max_size=10), json_value)),
        "state": state,
    }
    payload = {
        "type": draw(maybe(st.sampled_from(["view_submission", "view_closed"]), st.text(max_size=20))),
        "user": draw(maybe(st.fixed_dictionaries({"id": ids}), json_value)),
        "view": draw(maybe(st.just(_drop(view, draw)), json_value)),
        "trigger_id": draw(maybe(st.text(max_size=20), json_value)),
    }
    body = draw(maybe(st.just(_drop(payload, draw)), json_value))
    return urlencode({"payload": json.dumps(body)})


@st.composite
def events(draw: st.DrawFn) -> str:
    event = draw(
        maybe(
            st.fixed_dictionaries(
                {"type": st.sampled_from(["app_mention", "message", "app_home_opened"]), "text": st.text(max_size=40)}
            ),
            json_value,
        )
    )
    envelope = {
        "type": draw(
            maybe(st.sampled_from(["event_callback", "url_verification", "app_rate_limited"]), st.text(max_size=20))
        ),
        "event": event,
        "challenge": draw(maybe(st.text(max_size=20), json_value)),
        "team_id": draw(maybe(st.text(max_size=10), json_value)),
        "event_id": draw(maybe(st.text(max_size=10), json_value)),
        "api_app_id": draw(maybe(st.text(max_size=10), json_value)),
    }
    body = draw(maybe(st.just(_drop(envelope, draw)), json_value))
    return draw(maybe(st.just(json.dumps(body)), st.text(max_size=60)))


@FUZZ
@given(body=block_actions())
def test_block_actions_fuzz(target: Target, body: str) -> None:
    assert target.post("block_actions", body, "application/x-www-form-urlencoded") < 500


@FUZZ
@given(body=view_submissions())
def test_view_submission_fuzz(target: Target, body: str) -> None:
    assert target.post("view_submission", body, "application/x-www-form-urlencoded") < 500


@FUZZ
@given(body=events())
def test_events_fuzz(target: Target, body: str) -> None:
    assert target.post("events", body, "application/json") < 500


def test_every_entry_point_got_its_thousand_requests(target: Target) -> None:
    counts = {kind: len(statuses) for kind, statuses in target.statuses.items()}
    assert counts == {"block_actions": EXAMPLES, "view_submission": EXAMPLES, "events": EXAMPLES} or all(
        n >= EXAMPLES for n in counts.values()
    ), counts
    assert all(s < 500 for statuses in target.statuses.values() for s in statuses)
