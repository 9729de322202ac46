"""A storm of new incidents in one channel is one summary thread, edited at a bounded rate, in the Slack emulator.

Real redis-server, the Slack Web API emulator, the leader's incident loop and outbox (`Bot.apply`, `show_storms`,
`deliver`). The verdicts are given (what a check of a cluster with that many lagging groups judges): the storm is a
matter of incidents and Slack, the 300-group flood through Apache Kafka is tests/app/test_incident_storm_fault.py.
"""

from __future__ import annotations

import pytest
import redis

from lagbot.core import keys
from lagbot.core.config import Settings, StormConfig, build_settings
from lagbot.core.model import GroupState, GroupVerdict, Severity, Status, Trend
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.bot import Bot
from lagbot.service.incidents import REPLY, Change, Effect
from lagbot.service.slack_api import slack_client
from lagbot.service.storms import RedisStorms
from lagbot.slack.presenter import SlackPresenter
from tests.support.slack_counts import edits_of, posts

pytestmark = pytest.mark.integration

TOKEN = "xoxb-storm"
T0 = 1_700_000_000.0
STORMY, QUIET = "C0STORM", "C0QUIET"
FLOOD = 40
THRESHOLD = 10


def settings() -> Settings:
    return build_settings(
        {
            "clusters": [{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}],
            "slack": {"default_channel": QUIET, "routes": [{"channel": STORMY, "group": "load-.*"}]},
            "incidents": {
                "resolve_after": 0,
                "storm": {"threshold": THRESHOLD, "window": 60, "update_every": 5, "worst": 5},
            },
        },
        source="test",
    )


def verdict(group: str, lag: int, severity: Severity = Severity.WARN) -> GroupVerdict:
    return GroupVerdict(
        cluster="prod", group=group, state=GroupState.STABLE,
        status=Status.WARN if severity > Severity.OK else Status.OK, severity=severity,
        severity_reason=f"{severity.label}: test", partitions=(), total_lag=lag, max_lag_seconds=None,
        produce_rate=None, consume_rate=None, eta_seconds=None, trend=Trend.GROWING,
    )  # fmt: skip


def leader(redis_client: redis.Redis, slack: SlackEmulator, replica: str = "a") -> Bot:
    bot = Bot.on_redis(
        settings(), redis_client, slack_client(TOKEN, slack.api_url), SlackPresenter(), replica_id=replica
    )
    return bot


def check(bot: Bot, verdicts: list[GroupVerdict], *, now: float) -> int:
    """What the leader's check does with its verdicts: incidents, storm summaries, delivery."""
    opened = bot.apply(verdicts, now=now)
    bot.show_storms(now=now)
    report = bot.deliver()
    assert report.pending == 0 and report.dead == 0 and report.failed_transient == 0
    return opened


def test_a_storm_of_new_incidents_is_one_summary_root_with_bounded_edits_and_another_channel_posts_as_usual(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    bot = leader(redis_client, slack)
    assert bot.leadership.tick()
    follower = leader(redis_client, slack, replica="b")
    assert not follower.leadership.tick()
    flood = [f"load-{i:03d}" for i in range(FLOOD)]

    # One check: 40 new incidents in the stormy channel, one real incident in the quiet one.
    opened = check(bot, [verdict(g, 1_000 + i) for i, g in enumerate(flood)] + [verdict("billing", 5_000)], now=T0)
    assert opened == FLOOD + 1  # every incident is opened and tracked: only their posting is folded
    assert posts(slack, STORMY, roots=True) == THRESHOLD + 1  # the first 10 as usual, then one summary
    assert posts(slack, STORMY, roots=False) == THRESHOLD  # the first reply of each of the 10
    assert (posts(slack, QUIET, roots=True), posts(slack, QUIET, roots=False)) == (1, 1)
    assert slack.channel(QUIET)[0].text.startswith("WARN `billing` on `prod`")
    summary = slack.channel(STORMY)[-1]
    assert summary.text == "Incident storm on: 30 new incidents folded into one summary, 30 still open"
    assert "*Worst first* (5 of 30):" in summary.blocks[1]["text"]["text"]
    assert "`load-039` on `prod`: *WARN*, peak lag 1,039" in summary.blocks[1]["text"]["text"]
    assert slack.thread(STORMY, summary.ts) == []
    assert slack.calls_to("chat.update") == []

    # The exact state in Redis: every incident tracked, the 30 past the threshold folded into the one storm.
    incidents = {g: bot.incidents.get("prod", g) for g in flood}
    assert all(i is not None and i.is_open for i in incidents.values())
    [storm_id] = {i.storm for i in incidents.values() if i is not None and i.storm is not None}
    assert sorted(g for g, i in incidents.items() if i is not None and i.storm is None) == flood[:THRESHOLD]
    assert bot.storms.live() == [storm_id]
    assert redis_client.hlen(keys.storm_members(storm_id)) == FLOOD - THRESHOLD
    storm = bot.storms.get(storm_id)
    assert storm is not None and (storm.folded, storm.posted, storm.is_on) == (30, True, True)
    assert follower.check("prod") is None and follower.show_storms(now=T0) == 0  # the leader posts, alone
    folded = incidents[flood[-1]]
    assert folded is not None
    bot.enqueue(Effect(REPLY, Change.REMEDIATION, "a remediation's line"), folded, verdict(flood[-1], 1), now=T0)
    assert bot.outbox.pending() == 0  # no thread of its own to speak in (a remediation's reply is not queued)

    # Twelve more checks, one a second, every folded group's lag growing each time: two edits (at +5 s, +10 s).
    for second in range(1, 13):
        check(bot, [verdict(g, 1_000 + i + 100 * second) for i, g in enumerate(flood)], now=T0 + second)
    summary_edits = edits_of(slack, summary.ts)
    assert len(summary_edits) == 2
    assert posts(slack, STORMY, roots=True) == THRESHOLD + 1  # nothing new posted
    assert slack.channel(STORMY)[-1].edits == 2

    # Another real incident in the quiet channel meanwhile is posted as usual.
    check(bot, [verdict("payments", 9_000)], now=T0 + 13)
    assert posts(slack, QUIET, roots=True) == 2
    assert slack.channel(QUIET)[-1].text.startswith("WARN `payments` on `prod`")

    # A window with no new incident: the storm is over, said at once (one edit), the groups still open stay in it.
    still = [verdict(g, 3_000) for g in flood]
    check(bot, still, now=T0 + 61)
    assert len(edits_of(slack, summary.ts)) == 3
    assert edits_of(slack, summary.ts)[-1] == (
        "Incident storm over: 30 new incidents folded into one summary, 30 still open"
    )
    over = slack.channel(STORMY)[-1].blocks[0]["text"]["text"]
    assert over.startswith(":cyclone: *Incident storm over*: no more than 10 new incidents in 60 s.")
    assert "they stay in this summary until they resolve" in over
    assert posts(slack, STORMY, roots=True) == THRESHOLD + 1  # still-open incidents get no thread of their own

    # They resolve: the summary says so once its next edit is due, and the storm is finished (no longer live).
    check(bot, [verdict(g, 0, Severity.OK) for g in flood], now=T0 + 62)
    assert len(edits_of(slack, summary.ts)) == 3  # changed, but the last edit is 1 s old
    check(bot, [verdict(g, 0, Severity.OK) for g in flood], now=T0 + 66)
    assert edits_of(slack, summary.ts)[-1] == (
        "Incident storm over: 30 new incidents folded into one summary, 0 still open"
    )
    assert len(edits_of(slack, summary.ts)) == 4
    assert bot.storms.live() == []
    assert all(not i.is_open for g in flood if (i := bot.incidents.get("prod", g)) is not None)
    assert posts(slack, STORMY, roots=True) == THRESHOLD + 1
    assert slack.thread(STORMY, summary.ts) == []
    assert bot.outbox.dead_letters() == []

    # After the storm, a new incident in that channel is posted as usual.
    check(bot, [verdict("load-new", 50)], now=T0 + 200)
    assert posts(slack, STORMY, roots=True) == THRESHOLD + 2
    assert slack.channel(STORMY)[-1].text.startswith("WARN `load-new` on `prod`")


def test_a_deleted_storm_summary_is_posted_again_saying_it_replaces_the_lost_one(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    bot = leader(redis_client, slack)
    assert bot.leadership.tick()
    flood = [f"load-{i:03d}" for i in range(THRESHOLD + 5)]
    check(bot, [verdict(g, 100) for g in flood], now=T0)
    summary = slack.channel(STORMY)[-1]
    assert summary.text == "Incident storm on: 5 new incidents folded into one summary, 5 still open"
    slack.delete(STORMY, summary.ts)

    check(bot, [verdict(g, 200) for g in flood], now=T0 + 5)  # an edit is due: its message is gone
    replacement = slack.channel(STORMY)[-1]
    assert replacement.ts != summary.ts
    assert replacement.text == (
        ":recycle: This replaces the earlier storm summary, which was deleted or lost.\n"
        "Incident storm on: 5 new incidents folded into one summary, 5 still open"
    )
    assert "peak lag 200" in replacement.blocks[2]["text"]["text"]
    check(bot, [verdict(g, 300) for g in flood], now=T0 + 10)  # the next edit goes to the replacement
    assert [c.args["ts"] for c in slack.calls_to("chat.update") if "storm" in str(c.args["text"])] == [
        summary.ts,
        replacement.ts,
    ]
    assert "peak lag 300" in slack.channel(STORMY)[-1].blocks[2]["text"]["text"]
    assert posts(slack, STORMY, roots=True) == THRESHOLD + 2
    assert bot.outbox.dead_letters() == []


def test_a_new_leader_goes_on_with_the_storm_the_old_one_posted_never_a_second_summary(
    redis_client: redis.Redis, slack: SlackEmulator
) -> None:
    first = leader(redis_client, slack, replica="a")
    assert first.leadership.tick()
    flood = [f"load-{i:03d}" for i in range(THRESHOLD + 20)]
    check(first, [verdict(g, 100) for g in flood], now=T0)
    summary = slack.channel(STORMY)[-1]
    assert summary.text == "Incident storm on: 20 new incidents folded into one summary, 20 still open"
    first.leadership.resign()

    second = leader(redis_client, slack, replica="b")
    assert second.leadership.tick()
    assert first.show_storms(now=T0 + 5) == 0  # no longer the leader: shows nothing
    more = [f"load-{i:03d}" for i in range(THRESHOLD + 20, THRESHOLD + 25)]
    check(second, [verdict(g, 200) for g in flood + more], now=T0 + 5)
    assert posts(slack, STORMY, roots=True) == THRESHOLD + 1  # the 5 new ones folded into the same storm
    assert edits_of(slack, summary.ts) == ["Incident storm on: 25 new incidents folded into one summary, 25 still open"]
    assert second.storms.live() == first.storms.live() and len(second.storms.live()) == 1


def test_an_unreadable_storm_is_dropped_and_the_others_go_on(redis_client: redis.Redis) -> None:
    """A storm document this lagbot cannot read (another version, damaged) is dropped as an expired one: it never
    fails the checks for the days it would be kept."""
    storms = RedisStorms(redis_client, StormConfig(threshold=1, window=60, update_every=5))
    redis_client.sadd(keys.STORMS, "bad", "garbled")
    redis_client.set(keys.storm("bad"), '{"v": 99, "id": "bad"}')
    redis_client.set(keys.storm("garbled"), "not json")
    shown: list[object] = []
    assert storms.due(lambda *summary: shown.append(summary), now=1_000.0) == 0
    assert (shown, redis_client.smembers(keys.STORMS)) == ([], set())
