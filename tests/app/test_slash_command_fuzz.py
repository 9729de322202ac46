"""Fuzzing `/lag` through the running bot: generated, correctly signed slash commands over HTTP.

`lagbot run` (Apache Kafka, a real redis-server, the Slack emulator) gets at least 1,000 slash commands whose
text, user id and channel id are generated (subcommands, known and unknown names, options, durations,
mrkdwn links and escapes, arbitrary text). None of the generated users is in the policy. For each:
an HTTP 200 (never a 5xx), one reply at the response URL without an apology or a traceback, nothing live
(no `<!channel>`) echoed, and Redis exactly as before (every key and value) apart from the rate counters,
the seen signatures and, for a refused change, the audit trail. The bot's log has no traceback at the end.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis
from lagbot.devkit.emulator import SlackEmulator
from lagbot.slack.command_parse import CommandError, Digest, Remediate, Silence, Unsilence
from lagbot.slack.subcommands import parse
from tests.conftest import Kafka, Names
from tests.support.bot_process import SIGNING_SECRET, BotProcess, bot_config, empty_group, wait_for

pytestmark = pytest.mark.integration

TOKEN = "xoxb-fuzz"
APPROVER = "U0APPROVER"
REQUESTS = 1_000
IGNORED = ("lagbot:rate:", "lagbot:seen:", "lagbot:lease:", "lagbot:leader")
"""Keys every command may touch (rate counters, seen signatures) and the leader's lease (renewed on its own)."""


def words(group: str) -> st.SearchStrategy[str]:
    fixed = [
        *("show", "top", "silence", "unsilence", "digest", "help", "audit", "remediate", "slience", "SILENCE"),
        *(group, group.upper(), f"`{group}`", group[:-1], "nosuch", "embedded", "other", "--cluster", "--here"),
        *("--cluster=embedded", "--cluster=", "--here=1", "--bogus", "--", "1h", "10d", "0s", "59s", "7d", "1x"),
        *("drain", "restart", "scale", "reset_offsets", "shift", "-5", "latest", "datetime", "2024-13-01T00:00Z"),
        *("kafka:__consumer_offsets", "kafka:ok", "/etc", "s3a://b/x", "999", "0", "50", "51", "4"),
        *("&lt;!channel&gt;", "<!channel>", "<!here|here>", "<@U0APPROVER>", "<#C1|alerts>", "&amp;", "*bold*"),
    ]
    return st.one_of(st.sampled_from(fixed), st.text(max_size=16))


def texts(group: str) -> st.SearchStrategy[str]:
    """Half shaped like a command on a real or unknown group, half any words or any text."""
    commands = ["silence", "unsilence", "remediate", "show", "audit", "top", "digest", "help", ""]
    shaped = st.tuples(
        st.sampled_from(commands), st.sampled_from([group, group, "nosuch"]), st.lists(words(group), max_size=3)
    ).map(lambda t: " ".join([t[0], t[1], *t[2]]).strip())
    loose = st.one_of(st.lists(words(group), max_size=8).map(" ".join), st.text(max_size=400))
    return st.booleans().flatmap(lambda pick: shaped if pick else loose)


def mostly(valid: list[str], odd: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """A valid value nine times in ten, else an odd one (empty, lowercase, a mention, any text)."""
    return st.integers(0, 9).flatmap(lambda n: odd if n == 0 else st.sampled_from(valid))


USERS = mostly(
    ["U0FUZZ1", "U0FUZZ2", "W0FUZZ3", "U0ONCALL"],
    st.one_of(st.sampled_from(["", "U", "u0lower", "<!channel>", "U0FUZZ1 "]), st.text(max_size=12)),
)
CHANNELS = mostly(
    ["C0ALERTS", "C0OTHER", "G0PRIVATE", "D0DIRECT"], st.one_of(st.sampled_from(["", "x"]), st.text(max_size=10))
)


def state(client: redis.Redis) -> dict[bytes, Any]:
    """Every key's value (type-aware), except the keys any command may touch."""
    found: dict[bytes, Any] = {}
    for key in client.scan_iter(count=1000):
        if key.decode(errors="replace").startswith(IGNORED):
            continue
        kind = client.type(key)
        if kind == b"string":
            found[key] = client.get(key)
        elif kind == b"list":
            found[key] = client.lrange(key, 0, -1)
        elif kind == b"hash":
            found[key] = client.hgetall(key)
        elif kind == b"zset":
            found[key] = client.zrange(key, 0, -1, withscores=True)
        elif kind == b"set":
            found[key] = client.smembers(key)
        elif kind == b"stream":
            found[key] = client.xlen(key)
    return found


def changes(command_text: str) -> tuple[str, ...]:
    """Key prefixes a command from a non-approver may change: a refused change is audited; a digest's history."""
    try:
        command = parse(command_text)
    except CommandError:
        return ()
    if isinstance(command, Silence | Unsilence | Remediate):
        return ("lagbot:audit",)
    if isinstance(command, Digest):
        return ("lagbot:",)  # posting a digest may record what it posted; Slack is what the user sees
    return ()


def kind(shown: str) -> str:
    if "'type': 'table'" in shown:
        return "table"
    if "You may not" in shown:
        return "refused"
    if "Usage: " in shown:
        return "usage"
    if "no valid Slack user" in shown:
        return "bad id"
    return "other"


def test_a_thousand_generated_signed_slash_commands(
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
    kafka.produce(topic, 0, 10)
    empty_group(kafka, group, topic, 10)
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "default": {
                    "approvers": {"users": [APPROVER]},
                    "remediations": {"restart": {}, "drain": {"sinks": {"paths": ["/srv/drains"]}}},
                },
            }
        )
    )
    base = bot_config(broker, redis_server, slack, group)
    config = {
        **base,
        "clusters": [{**base["clusters"][0], "check_interval": "1h"}],  # one check, then Redis stays still
        "policy_file": str(policy),
        "slack": {**base["slack"], "command_limits": {"per_user": 100_000, "per_channel": 100_000}},
    }
    bot = BotProcess(tmp_path, config, token=TOKEN)
    statuses: list[int] = []
    kinds: Counter[str] = Counter()
    try:
        bot.wait_ready()
        wait_for("the first check", lambda: redis_client.llen(f"lagbot:window:embedded:{group}") == 1, timeout=30)

        @settings(
            max_examples=REQUESTS,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        @given(text=texts(group), user=USERS, channel=CHANNELS)
        def one_request(text: str, user: str, channel: str) -> None:
            before = state(redis_client)
            status, body, key = slack.slash_command(
                bot.events_url, SIGNING_SECRET, text=text, user=user, channel=channel
            )
            statuses.append(status)
            assert status == 200, (status, body)
            [reply] = wait_for(f"the reply to /lag {text!r}", lambda: slack.responses[key], timeout=30)
            shown = str(reply.get("text", "")) + str(reply.get("blocks", ""))
            assert "Something went wrong" not in shown and "Traceback" not in shown, shown
            assert "<!channel>" not in shown and "<!here" not in shown, shown
            kinds[kind(shown)] += 1
            after = state(redis_client)
            allowed = changes(text)
            changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
            unexpected = {k for k in changed if not k.decode(errors="replace").startswith(allowed or ("\0",))}
            assert unexpected == set(), (text, user, channel, sorted(unexpected))

        one_request()
        print("replies by kind:", dict(kinds))
        assert len(statuses) >= REQUESTS and set(statuses) == {200}
        # The generated requests reach every part: fresh checks, refusals, usage errors, bad ids.
        assert min(kinds[k] for k in ("table", "refused", "usage", "bad id")) >= 10, dict(kinds)
        assert "Traceback" not in bot.log()
    finally:
        bot.stop(signal.SIGKILL)
