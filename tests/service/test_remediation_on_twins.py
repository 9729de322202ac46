"""A bot on memory stores (lagbot.service.stores.memory_stores) offers, runs and verifies a remediation with no Redis
anywhere: its remediation side keeps its proposals, offers, run state, heartbeats and proposal messages in the twins
(lagbot.service.remediation_stores), checked against Redis in tests/service/test_remediation_store_contracts.py.

The lag is real (a group behind on Apache Kafka), the remediation acts on the broker (an offset reset to the log end,
two approvals) and the thread is the Slack emulator's."""

from __future__ import annotations

import re

import pytest

from lagbot.core.config import Settings, build_settings
from lagbot.devkit.emulator import SlackEmulator
from lagbot.policies.approvers import ApproverDirectory, MemoryUsergroupCache
from lagbot.policies.model import Policy
from lagbot.service import wording
from lagbot.service.approvals import State, Verdict
from lagbot.service.bot import Bot
from lagbot.service.remediate import Remediator
from lagbot.service.remediation_state import RunState
from lagbot.service.slack_api import slack_client
from lagbot.service.stores import memory_stores
from lagbot.slack.presenter import SlackPresenter
from tests.conftest import Kafka, Names
from tests.support.engine_rig import FAST_RULES
from tests.support.group_commits import committed
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

TOKEN = "xoxb-remediation-twins"
CHANNEL = "C0TWINS02"
REQUESTER, FIRST, SECOND = "U0ASKING01", "U0ONCALL01", "U0ONCALL02"
POLICY = Policy.model_validate(
    {"default": {"approvers": {"users": [FIRST, SECOND]}, "remediations": {"reset_offsets": {"modes": ["latest"]}}}}
)


def kafka_settings(kafka: Kafka, prefix: str) -> Settings:
    return build_settings(
        {
            "clusters": [
                {
                    "name": "prod",
                    "bootstrap_servers": kafka.bootstrap,
                    "groups": {"include": [f"{re.escape(prefix)}-.*"]},
                    "request_timeout": 5,
                    "check_interval": 30,
                }
            ],
            "evaluation": FAST_RULES,
            "thresholds": {
                "warn": {"messages": 5, "growing": False, "sustained_for": 0},
                "critical": {"messages": 12},
                "page": {"messages": 1_000},
            },
            "incidents": {"resolve_after": 3_600},  # open while the verification judges
            "slack": {"default_channel": CHANNEL},
        },
        source="test",
    )


def remediator(bot: Bot) -> Remediator:
    directory = ApproverDirectory(bot.slack, cache=MemoryUsergroupCache())
    return Remediator(bot, directory=directory, executor_for=lambda _workload: None)  # the reset needs no workload


def test_a_bot_on_memory_stores_proposes_runs_once_and_verifies_an_offset_reset_on_apache_kafka(
    kafka: Kafka, names: Names, slack: SlackEmulator
) -> None:
    prefix = names("group")
    topic, group = names("topic"), f"{prefix}-behind"
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 10)
    kafka.produce(topic, 1, 4)
    kafka.commit(group, {(topic, 0): 0, (topic, 1): 0})  # lag 14: critical, and no member: the reset may run

    config = kafka_settings(kafka, prefix)
    stores = memory_stores(config)
    assert stores.redis is None
    bot = Bot(
        config, stores, slack_client(TOKEN, slack.api_url), SlackPresenter(), policy=POLICY, remediations=remediator
    )
    r = bot.remediations
    assert isinstance(r, Remediator) and bot.leadership.tick()

    first = bot.check("prod")
    assert first is not None and first.opened == 1
    [incident] = bot.incidents.open_incidents()
    [verdict] = [v for v in first.report.verdicts if v.group == group]
    assert verdict.total_lag == 14

    now = bot.clock()
    [proposal], skipped = r.propose(
        verdict, now=now, incident=incident, actions=["reset_offsets"], requested_by=REQUESTER, given={"mode": "latest"}
    )
    assert skipped == [] and proposal.approvals_required == 2 and proposal.incident_id == incident.id
    assert r.offer_book.offered(incident.id) == {"reset_offsets"}
    assert r.proposals.get(proposal.id) == proposal

    assert r.click(proposal.id, REQUESTER, now=now).verdict is Verdict.NOT_APPROVER
    assert r.click(proposal.id, FIRST, now=now).verdict is Verdict.RECORDED
    assert r.click(proposal.id, FIRST, now=now).verdict is Verdict.AGAIN
    assert committed(kafka, group, topic, 2) == {0: 0, 1: 0}  # one approval of two: nothing ran
    assert r.click(proposal.id, SECOND, now=now).verdict is Verdict.RUN
    assert committed(kafka, group, topic, 2) == {0: 10, 1: 4}  # read back from the broker: reset to the log end
    assert r.click(proposal.id, SECOND, now=now).verdict is Verdict.NOT_PROPOSED  # once: it ran already
    done = r.proposals.get(proposal.id)
    assert done is not None and done.state is State.SUCCEEDED and done.approvals == (FIRST, SECOND)
    assert r.heartbeats.beating() == []  # the run's heartbeat is dropped when it ends
    state = r.state(incident.id)
    assert state is not None and (state.action, state.state, state.id) == (
        "reset_offsets",
        RunState.VERIFYING,
        proposal.id,
    )

    def verified() -> bool:
        bot.check("prod")
        current = r.state(incident.id)
        assert current is not None and current.state in (RunState.VERIFYING, RunState.RESOLVED), current
        return current.state is RunState.RESOLVED

    wait_for("the verification to see the lag drained", verified, timeout=60, every=0.5)
    assert bot.incidents.get("prod", group) is not None

    events = [(e.event, e.user) for e in reversed(bot.audit.latest("prod", group, 50))]
    assert events == [
        ("proposed", REQUESTER),
        ("refused", REQUESTER),
        ("approved", FIRST),
        ("refused", FIRST),
        ("approved", SECOND),
        ("succeeded", "lagbot"),
        ("verified", "lagbot"),
    ]
    # A click's own delivery may hold the outbox's lock at this moment (never waited for): deliver until all is sent.
    wait_for("everything queued delivered", lambda: bot.deliver().pending == 0, timeout=30, every=0.2)
    [root] = slack.channel(CHANNEL)
    thread = [m.text for m in slack.thread(CHANNEL, root.ts)]
    assert wording.approval_recorded(FIRST, 1, 2) in thread
    assert wording.remediation_running((FIRST, SECOND), proposal.plan.summary) in thread
    assert sum(t.startswith(f":white_check_mark: *{proposal.plan.summary}* done: ") for t in thread) == 1
    assert bot.outbox.dead_letters() == []
    with pytest.raises(RuntimeError, match="memory stores"):
        _ = bot.redis
