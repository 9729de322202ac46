"""Who may do what through `/lag`, end to end: `lagbot run`, Apache Kafka, a real redis-server, the Slack emulator
and correctly signed HTTP requests.

A `/lag <group>` read never writes the shared window; per-user limits answer politely; silence, unsilence and
remediate need the policy rule's silencers or approvers (refusals audited, nothing changed); a drain sink comes
from the policy's allow-list and is shown in the confirm dialog; a replayed signed request is refused; user text
is echoed escaped; bad user ids are refused; `/lag digest` posts only where a digest is configured.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import redis
import yaml

from lagbot.core import keys
from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from lagbot.devkit.signed import post_signed
from lagbot.service.audit import AuditLog
from tests.conftest import Kafka, Names
from tests.support.bot_process import CHANNEL, SIGNING_SECRET, BotProcess, bot_config, empty_group, wait_for

pytestmark = pytest.mark.integration

TOKEN = "xoxb-security"
APPROVER, SILENCER, OUTSIDER = "U0APPROVER", "U0SILENCER", "U0OUTSIDER"
OTHER_CHANNEL = "C0ELSEWHERE"


def write_policy(tmp: Path, drains: Path) -> Path:
    policy = {
        "version": 1,
        "default": {
            "name": "team-orders",
            "approvers": {"users": [APPROVER]},
            "silencers": {"users": [SILENCER]},
            "remediations": {"drain": {"sinks": {"paths": [str(drains)], "topics": "drained-.*"}}},
        },
    }
    path = tmp / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path


def config(
    broker: ApacheKafka, redis_server: EmbeddedRedis, slack: SlackEmulator, group: str, policy: Path
) -> dict[str, Any]:
    """A check every 20 s: between two, the shared window changes only if a command writes it."""
    base = bot_config(broker, redis_server, slack, group)
    cluster = {**base["clusters"][0], "check_interval": "20s"}
    limits = {"per_user": 6, "per_channel": 1000, "every": "1h", "digests": 1, "digest_every": "1h"}
    return {
        **base,
        "clusters": [cluster],
        "policy_file": str(policy),
        "slack": {**base["slack"], "command_limits": limits},
    }


class Asker:
    def __init__(self, slack: SlackEmulator, bot: BotProcess) -> None:
        self.slack, self.bot = slack, bot

    def __call__(self, text: str, user: str, channel: str = CHANNEL) -> dict[str, Any]:
        status, _, key = self.slack.slash_command(
            self.bot.events_url, SIGNING_SECRET, text=text, user=user, channel=channel
        )
        assert status == 200
        [reply] = wait_for(f"the reply to /lag {text}", lambda: self.slack.responses[key])
        return reply


def audit(redis_client: redis.Redis, group: str) -> list[tuple[str, str, str | None]]:
    return [(e.event, e.user, e.action) for e in reversed(AuditLog(redis_client).latest("embedded", group, 50))]


def test_reads_write_nothing_shared_changes_need_the_policy_and_replays_are_refused(
    kafka: Kafka,
    names: Names,
    broker: ApacheKafka,
    redis_server: EmbeddedRedis,
    redis_client: redis.Redis,
    slack: SlackEmulator,
    tmp_path: Path,
) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 1)
    kafka.produce(topic, 0, 30)
    empty_group(kafka, group, topic, 10)
    drains = tmp_path / "drains"
    bot = BotProcess(tmp_path, config(broker, redis_server, slack, group, write_policy(tmp_path, drains)), token=TOKEN)
    ask = Asker(slack, bot)
    window = f"lagbot:window:embedded:{group}"
    try:
        bot.wait_ready()
        wait_for("the first check", lambda: redis_client.llen(window) == 1, timeout=30)
        stored, checked_at = redis_client.lrange(window, 0, -1), time.monotonic()

        # 1. Reads sample privately: the reply is fresh (log-end 50), the shared window is untouched.
        kafka.produce(topic, 0, 20)
        for user in ("U0READER1", "U0READER2", "U0READER3"):
            shown = ask(group, user)
            [table] = [b for b in shown["blocks"] if b["type"] == "table"]
            assert [c["text"] for c in table["rows"][1]][:4] == [f"{topic}/0", "10", "50", "40"]
        assert redis_client.lrange(window, 0, -1) == stored
        assert time.monotonic() - checked_at < 19  # no scheduled check could have come in between

        # 1. Per-user rate limit: the 7th command within the hour is answered politely and runs nothing.
        for _ in range(6):
            assert "/lag silence" in ask("help", "U0CHATTY")["text"]
        limited = ask("help", "U0CHATTY")
        assert "try again in" in limited["text"] and limited["response_type"] == "ephemeral"
        [rate_key] = redis_client.keys("lagbot:rate:user:U0CHATTY:*")
        assert int(redis_client.get(rate_key) or 0) == 7

        # 2. Silence needs the rule's silencers: the approver and an outsider are refused and audited.
        for user in (OUTSIDER, APPROVER):
            refused = ask(f"silence {group} 1h deploying", user)
            assert "You may not silence" in refused["text"] and "team-orders" in refused["text"]
            assert refused["response_type"] == "ephemeral"
        assert redis_client.keys("lagbot:silence*") == []
        silenced = ask(f"silence {group} 1h deploying", SILENCER)
        assert silenced["response_type"] == "in_channel" and f"<@{SILENCER}> silenced" in silenced["text"]
        assert "You may not unsilence" in ask(f"unsilence {group}", OUTSIDER)["text"]
        assert "lifted the silence" in ask(f"unsilence {group}", SILENCER)["text"]

        # 2. Remediate needs an approver: the outsider's request proposes nothing.
        assert "You may not remediate" in ask(f"remediate {group} drain {drains}/x", OUTSIDER)["text"]
        assert redis_client.keys("lagbot:proposal:*") == []

        # 3. Drain sinks only from the allow-list; never an internal topic; the sink is in the confirm dialog.
        etc = ask(f"remediate {group} drain /etc", APPROVER)
        assert "`/etc` is not under an allowed drain sink prefix" in etc["text"]
        internal = ask(f"remediate {group} drain kafka:__consumer_offsets", APPROVER)
        assert "`__consumer_offsets` is an internal Kafka topic" in internal["text"]
        assert "not an allowed drain sink" in ask(f"remediate {group} drain kafka:orders", APPROVER)["text"]
        assert redis_client.keys("lagbot:proposal:*") == []
        proposed = ask(f"remediate {group} drain {drains}/orders", APPROVER)
        [button] = [e for b in proposed["blocks"] if b["type"] == "actions" for e in b["elements"]][:1]
        assert f"to {drains}/orders, then commits" in button["confirm"]["text"]["text"]
        # One proposal, and where its answer showed it (so that its buttons are retired when it expires).
        shown = keys.proposal_message(button["value"])
        wait_for("where the answer showed the proposal", lambda: redis_client.exists(shown), timeout=30)
        assert sorted(redis_client.keys("lagbot:proposal:*")) == [
            keys.proposal(button["value"]).encode(),
            shown.encode(),
        ]

        # 9. User text is echoed escaped: no live <!channel>.
        echoed = ask(f"remediate {group} &lt;!channel&gt;", APPROVER)
        assert "&lt;!channel&gt;" in echoed["text"] and "<!channel>" not in echoed["text"]

        events = audit(redis_client, group)
        assert [e for e in events if e[0] == "refused"] == [
            ("refused", "U0OUTSIDER", "silence"),
            ("refused", "U0APPROVER", "silence"),
            ("refused", "U0OUTSIDER", "unsilence"),
            ("refused", "U0OUTSIDER", "remediate"),
        ]

        # 9. A request with no valid user id is refused before anything uses the id.
        bad = ask(f"silence {group} 1h", "<!channel>")
        assert "no valid Slack user" in bad["text"] and "<!channel>" not in bad["text"]
        assert audit(redis_client, group) == events

        # 8. The same signed request sent twice: the second is refused, the command ran once.
        form = {"command": "/lag", "text": f"silence {group} 2h", "user_id": SILENCER, "channel_id": CHANNEL,
                "response_url": slack.response_url("REPLAYED")}  # fmt: skip
        body, at = urlencode(form), int(time.time())
        assert post_signed(bot.events_url, body, SIGNING_SECRET, timestamp=at)[0] == 200
        status, answer = post_signed(bot.events_url, body, SIGNING_SECRET, timestamp=at)
        assert status == 409 and "replay" in answer
        [first] = wait_for("the reply to the first request", lambda: slack.responses["REPLAYED"])
        assert "silenced" in first["text"]
        assert len(slack.responses["REPLAYED"]) == 1
        assert len(redis_client.keys("lagbot:seen:*")) >= 1

        # 11. The digest goes only to a configured channel or to the caller, and is rate limited.
        posted = ask("digest", OUTSIDER, channel=OTHER_CHANNEL)
        assert "direct message" in posted["text"]
        [dm] = wait_for("the digest sent to the caller", lambda: slack.channel(OUTSIDER))
        assert group in str(dm.blocks)
        assert slack.channel(OTHER_CHANNEL) == []
        assert "try again in" in ask("digest", OUTSIDER, channel=OTHER_CHANNEL)["text"]
        assert len(slack.channel(OUTSIDER)) == 1

        assert "Traceback" not in bot.log()
    finally:
        bot.stop(signal.SIGKILL)
