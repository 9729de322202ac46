"""One incident, one story (issue 22, section 4): what its root and thread say agree, and say something new.

Real redis-server, the Slack Web API emulator, the leader's incident loop and outbox (`Bot.apply`, `deliver`); for
the remediation's part the coordinator on the real Kubernetes control plane (tests/support/remediator_rig.py). The
verdicts are given: what the incident loop does with them is under test, not how the engine judges a group.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
import redis

from lagbot.core.config import ConfigError, build_settings
from lagbot.core.model import Cause, GroupState, GroupVerdict, Severity, Status, Trend
from lagbot.devkit.emulator import SlackEmulator
from lagbot.engine.agreement import Settling, held, settling
from lagbot.remediations import registry
from lagbot.service import edits
from lagbot.service.bot import Bot
from lagbot.service.incidents import UPDATE_ROOT, Change, Effect
from lagbot.service.remediate import Remediator
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter
from tests.support.bot_process import wait_for
from tests.support.k8s_shop import Shop
from tests.support.remediator_rig import NOW, _broker, k8s, remediator, slack
from tests.support.slack_counts import edits_of, posts
from tests.support.verdicts import CLUSTER, GROUP, partition, verdict

pytestmark = pytest.mark.integration

__all__ = ["_broker", "k8s", "slack"]  # fixtures from tests.support.remediator_rig

CHANNEL = "C1"


# -- counters alone are no news -------------------------------------------------------------------------------------

PLAIN_TOKEN = "xoxb-story"


@pytest.fixture
def plain_slack() -> Iterator[SlackEmulator]:
    with SlackEmulator(token=PLAIN_TOKEN).start() as running:
        yield running


def plain_bot(redis_client: redis.Redis, slack: SlackEmulator, **incidents: object) -> Bot:
    settings = build_settings(
        {
            "clusters": [{"name": "prod", "bootstrap_servers": "127.0.0.1:9"}],
            "slack": {"default_channel": CHANNEL},
            "incidents": {"resolve_after": 0, **incidents},
        },
        source="test",
    )
    bot = Bot.on_redis(
        settings, redis_client, slack_client(PLAIN_TOKEN, slack.api_url), SlackPresenter(), replica_id="a"
    )
    assert bot.leadership.tick()
    return bot


def stopped(lag: int, severity: Severity = Severity.WARN) -> GroupVerdict:
    """A stopped group: its lag stands, its consumers commit nothing."""
    return GroupVerdict(
        cluster="prod", group="billing", state=GroupState.EMPTY, status=Status.STOP, severity=severity,
        severity_reason=f"{severity.label}: test", partitions=(), total_lag=lag, max_lag_seconds=None,
        produce_rate=0.0, consume_rate=0.0, eta_seconds=None, trend=Trend.STEADY,
    )  # fmt: skip


def check(bot: Bot, verdicts: list[GroupVerdict], *, now: float) -> None:
    bot.apply(verdicts, now=now)
    report = bot.deliver()
    assert report.pending == 0 and report.dead == 0 and report.failed_transient == 0


def test_an_edit_that_changes_only_counters_waits_for_the_refresh_and_an_identical_root_is_never_sent(
    redis_client: redis.Redis, plain_slack: SlackEmulator
) -> None:
    bot = plain_bot(redis_client, plain_slack)
    check(bot, [stopped(500)], now=NOW)
    assert (posts(plain_slack, CHANNEL, roots=True), posts(plain_slack, CHANNEL, roots=False)) == (1, 1)
    [root] = plain_slack.channel(CHANNEL)
    assert root.text == "WARN `billing` on `prod`: stopped, lag 500"

    # The same root again at the same check (as a remediation's state change re-renders it): identical, not sent.
    incident = bot.incidents.get("prod", "billing")
    assert incident is not None
    bot.enqueue(Effect(UPDATE_ROOT, Change.REMEDIATION), incident, stopped(500), now=NOW)
    assert bot.outbox.pending() == 0

    # A stopped group checked every minute: only "open for N" changes, then its lag figure: no edit before 300 s.
    for at, lag in [(60, 500), (120, 500), (180, 640), (240, 700)]:
        check(bot, [stopped(lag)], now=NOW + at)
    assert edits_of(plain_slack, root.ts) == []

    # The refresh: 300 s after the root was last shown, the figures go out (the lag 700, open for 5 min).
    check(bot, [stopped(700)], now=NOW + 300)
    assert edits_of(plain_slack, root.ts) == ["WARN `billing` on `prod`: stopped, lag 700"]
    [(shown, when)] = [(c.args["blocks"], c.args["ts"]) for c in plain_slack.calls_to("chat.update")]
    assert when == root.ts and "open for 5 min" in str(shown)
    check(bot, [stopped(700)], now=NOW + 360)
    assert len(edits_of(plain_slack, root.ts)) == 1

    # A change of story goes at once: the severity rises (and its own reply is posted).
    check(bot, [stopped(9_000, Severity.CRITICAL)], now=NOW + 370)
    assert edits_of(plain_slack, root.ts)[-1] == "CRITICAL `billing` on `prod`: stopped, lag 9,000"
    assert len(edits_of(plain_slack, root.ts)) == 2
    assert posts(plain_slack, CHANNEL, roots=False) == 2
    # It resolves (resolve_after 0: at once): the green root goes at once too.
    check(bot, [stopped(10, Severity.OK)], now=NOW + 380)
    assert len(edits_of(plain_slack, root.ts)) == 3
    assert edits_of(plain_slack, root.ts)[-1].startswith("RESOLVED `billing` on `prod`")
    assert bot.outbox.dead_letters() == []


def test_the_configured_refresh_is_the_one_used(redis_client: redis.Redis, plain_slack: SlackEmulator) -> None:
    # incidents.refresh_every: 2m instead of the default 5 min: a counter-only edit goes out 120 s after the root was
    # last shown, not before, and the next one 120 s after that.
    bot = plain_bot(redis_client, plain_slack, refresh_every="2m")
    assert bot.settings.incidents.refresh_every == 120.0
    check(bot, [stopped(500)], now=NOW)
    [root] = plain_slack.channel(CHANNEL)
    for at, lag in [(60, 520), (119, 560)]:
        check(bot, [stopped(lag)], now=NOW + at)
    assert edits_of(plain_slack, root.ts) == []
    check(bot, [stopped(600)], now=NOW + 120)
    assert edits_of(plain_slack, root.ts) == ["WARN `billing` on `prod`: stopped, lag 600"]
    check(bot, [stopped(650)], now=NOW + 239)
    assert len(edits_of(plain_slack, root.ts)) == 1
    check(bot, [stopped(700)], now=NOW + 240)
    assert edits_of(plain_slack, root.ts)[-1] == "WARN `billing` on `prod`: stopped, lag 700"
    assert len(edits_of(plain_slack, root.ts)) == 2


@pytest.mark.parametrize("value", [0, 5, "9s", "2d", "soon", -60])
def test_a_bad_refresh_is_refused_naming_the_field(value: object) -> None:
    data = {"clusters": [{"name": "prod", "bootstrap_servers": "k:9092"}], "incidents": {"refresh_every": value}}
    with pytest.raises(ConfigError) as refused:
        build_settings(data, source="lagbot.yaml")
    assert "lagbot.yaml: incidents.refresh_every:" in str(refused.value)


def test_the_refresh_defaults_to_five_minutes() -> None:
    settings = build_settings({"clusters": [{"name": "prod", "bootstrap_servers": "k:9092"}]}, source="test")
    assert settings.incidents.refresh_every == edits.REFRESH == 300.0


def test_the_edit_rule_is_a_story_change_or_the_refresh_never_an_identical_root() -> None:
    first = edits.Shown(story="a", digest="d1", at=100.0)
    assert edits.due(None, first)
    assert not edits.due(first, replace(first, at=100.0 + edits.REFRESH))  # identical: never again
    assert not edits.due(first, edits.Shown("a", "d2", 100.0 + edits.REFRESH - 1))  # counters, too soon
    assert edits.due(first, edits.Shown("a", "d2", 100.0 + edits.REFRESH))  # counters, refreshed
    assert edits.due(first, edits.Shown("b", "d2", 101.0))  # the story changed: at once


# -- the remediation's own settle period; its words and the root's agree --------------------------------------------


def coordinated(redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop) -> Remediator:
    r = remediator(redis_client, slack, k8s, wired=True, remediations={"restart": {"auto_approve": True}})
    bot = r.bot
    bot.settings = bot.settings.model_copy(
        update={"slack": bot.settings.slack.model_copy(update={"default_channel": CHANNEL})}
    )
    assert bot.leadership.tick()
    return r


STUCK = Cause("stuck_consumer", "stuck", 0.9, rank=1)


def restarted(redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop) -> tuple[Remediator, GroupVerdict, str]:
    """An incident whose restart the policy auto-approved and ran at NOW: (coordinator, verdict, root ts)."""
    r = coordinated(redis_client, slack, k8s)
    stalled = partition(0, committed=0, log_end=140_000, status=Status.STALL)
    v = replace(verdict([stalled]), causes=(STUCK,))
    assert r.bot.apply([v], now=NOW) == 1
    r.bot.deliver()
    r.run_auto_approved(now=NOW)
    deliver_all(r.bot)
    incident = r.bot.incidents.get(CLUSTER, GROUP)
    assert incident is not None
    state = r.state(incident.id)
    assert state is not None and (state.action, state.state) == ("restart", "verifying"), state
    assert (state.executed_at, state.settle_until) == (NOW, NOW + 180.0)
    [root] = slack.channel(CHANNEL)
    return r, v, root.ts


def deliver_all(bot: Bot) -> None:
    wait_for("the outbox to empty", lambda: (bot.deliver(), not bot.outbox.pending())[1], timeout=30)


def test_a_new_cause_within_our_own_action_s_settle_period_is_not_posted_and_is_after_it(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    """The rates of a check 60 s after our restart span the rebalance it caused: a partition_ceiling then is not
    news. After the settle period (180 s) a cause not read from rates is said; one read from rates waits until the
    check's window (30 samples x 60 s) no longer reaches into the settle period, and is said then, once."""
    r, v, root = restarted(redis_client, slack, k8s)
    replies = len(slack.thread(CHANNEL, root))
    ceiling = Cause("partition_ceiling", "one member per partition already", 0.8, rank=1)
    unassigned = Cause("unassigned_partitions", "nobody owns orders/0", 0.9, rank=1)
    measured = replace(v, causes=(ceiling, replace(STUCK, rank=2)))

    def new_causes() -> list[str]:
        deliver_all(r.bot)
        return [m.text for m in slack.thread(CHANNEL, root)[replies:] if "New likely cause" in m.text]

    def stated() -> tuple[str, ...]:
        incident = r.bot.incidents.get(CLUSTER, GROUP)
        assert incident is not None
        return incident.causes_stated

    r.bot.apply([measured], now=NOW + 60)
    assert new_causes() == []
    assert stated() == ("stuck_consumer",)

    r.bot.apply([replace(v, causes=(unassigned, replace(STUCK, rank=2)))], now=NOW + 240)
    [said] = new_causes()
    assert said.startswith(":mag: New likely cause (was stuck_consumer): *1. unassigned_partitions*"), said

    r.bot.apply([measured], now=NOW + 300)
    r.bot.apply([measured], now=NOW + 180 + 1_800)  # the window's oldest sample is the settle period's last moment
    assert len(new_causes()) == 1
    assert "partition_ceiling" not in stated()

    r.bot.apply([measured], now=NOW + 180 + 1_800 + 60)
    said = new_causes()[-1]
    assert said.startswith(":mag: New likely cause (was unassigned_partitions): *1. partition_ceiling*"), said
    assert stated() == ("stuck_consumer", "unassigned_partitions", "partition_ceiling")


def test_which_causes_wait_near_our_own_action() -> None:
    def at(now: float, action: str = "scale") -> Settling:
        return settling(registry.settles(action), 1_000.0, 1_180.0, window=1_800.0, now=now)

    assert [at(t) for t in (999.0, 1_000.0, 1_180.0, 1_181.0, 2_980.0, 2_981.0)] == [
        Settling.NO, Settling.ALL, Settling.ALL, Settling.RATES, Settling.RATES, Settling.NO,
    ]  # fmt: skip
    assert at(1_100.0, "reset_offsets") is Settling.NO  # only a restart or a scale makes the group rebalance
    assert settling(registry.settles("restart"), None, None, window=60.0, now=1_100.0) is Settling.NO
    assert held(Settling.ALL, "stuck_consumer") and held(Settling.RATES, "throughput_deficit")
    assert not held(Settling.RATES, "stuck_consumer") and not held(Settling.NO, "partition_ceiling")


def test_the_root_and_the_thread_agree_on_trend_and_eta_for_one_check(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    """The lag fell from 140,000 to 80,000 in a minute, but the check's own recent totals grow: the root says
    "↗ growing, ETA never at the current rates", and neither its remediation line nor the thread says "draining
    at ... ETA" (the two checks' 1,000 msg/s, a second source of rates, said so before)."""
    r, v, root = restarted(redis_client, slack, k8s)
    replies = len(slack.thread(CHANNEL, root))
    lower = partition(0, committed=60_000, log_end=140_000, status=Status.STALL)
    growing = replace(v, partitions=(lower,), total_lag=80_000, trend=Trend.GROWING, drain_rate=-5.0,
                      produce_rate=100.0, consume_rate=95.0, eta_seconds=None)  # fmt: skip

    r.bot.apply([v], now=NOW + 60)  # the first check after the restart: still 140,000 behind
    deliver_all(r.bot)
    r.bot.apply([growing], now=NOW + 120)
    deliver_all(r.bot)
    shown = str(slack.channel(CHANNEL)[0].blocks)
    assert "↗ growing, ETA never at the current rates" in shown, shown
    assert "draining at" not in shown
    assert "growing at the latest check: no ETA yet" in shown  # the remediation line, from the same verdict
    said = [m.text for m in slack.thread(CHANNEL, root)][replies:]
    assert said == ["lag 140,000 -> 80,000 since the peak, but growing at the latest check: no ETA yet"], said


def test_a_resolved_root_shows_the_lag_when_it_resolved_not_the_verification_s_old_figure(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    """The verification saw the group back to normal at lag 125 (under every threshold); the incident resolved 600 s
    later at lag 0. The green root says lag 0, never "back to normal: lag 125" (the thread keeps that reply)."""
    r, _, root = restarted(redis_client, slack, k8s)
    normal = replace(verdict([partition(0, committed=139_875, log_end=140_000)], severity=Severity.OK), causes=())
    r.bot.apply([normal], now=NOW + 60)
    deliver_all(r.bot)
    assert "back to normal: lag 125, every partition OK" in [m.text for m in slack.thread(CHANNEL, root)]

    drained = replace(verdict([partition(0, committed=140_000, log_end=140_000)], severity=Severity.OK), causes=())
    r.bot.apply([drained], now=NOW + 60 + r.bot.settings.incidents.resolve_after)
    deliver_all(r.bot)
    incident = r.bot.incidents.get(CLUSTER, GROUP)
    assert incident is not None and not incident.is_open
    green = slack.channel(CHANNEL)[0]
    headline = green.blocks[0]["text"]["text"]
    assert headline.endswith("resolved after 11 min, peak 140,000 (WARN); lag 0 when resolved"), headline
    assert "back to normal" not in str(green.blocks)
    assert "remediation *restart*: resolved" in str(green.blocks)
