"""Remediations of an incident folded into a storm: none offered in a thread it does not have; `/lag remediate`
still proposes, answered in the channel, and speaks in no thread.

Real Redis, the Slack emulator and the real Kubernetes API server (tests/support/remediator_rig.py).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import redis

from lagbot.core import keys
from lagbot.core.config import StormConfig
from lagbot.core.model import Cause, Status
from lagbot.devkit.emulator import SlackEmulator
from lagbot.service.storms import RedisStorms
from lagbot.slack.replies import remediate_reply
from tests.support.k8s_shop import Shop
from tests.support.remediator_rig import NOW, _broker, k8s, remediator, slack
from tests.support.verdicts import partition, verdict

pytestmark = pytest.mark.integration

__all__ = ["_broker", "k8s", "slack"]  # fixtures from tests.support.remediator_rig


def test_a_folded_incident_is_offered_no_remediation_in_a_thread_and_remediate_answers_in_the_channel(
    redis_client: redis.Redis, slack: SlackEmulator, k8s: Shop
) -> None:
    r = remediator(redis_client, slack, k8s, wired=True, remediations={"restart": {"auto_approve": False}})
    bot = r.bot
    bot.settings = bot.settings.model_copy(
        update={"slack": bot.settings.slack.model_copy(update={"default_channel": "C1"})}
    )
    bot.storms = RedisStorms(redis_client, StormConfig(threshold=1, window=60, update_every=5))  # the 2nd is a storm
    assert bot.leadership.tick()
    stalled = partition(0, committed=0, log_end=500, status=Status.STALL)
    posted = replace(verdict([stalled]), causes=(Cause("stuck_consumer", "stuck", 0.9, rank=1),))
    folded = replace(posted, group="orders-replay")

    assert bot.apply([posted, folded], now=NOW) == 2
    bot.show_storms(now=NOW)
    bot.deliver()
    first, second = bot.incidents.get(posted.cluster, posted.group), bot.incidents.get(folded.cluster, folded.group)
    assert first is not None and first.storm is None
    assert second is not None and second.storm is not None
    assert redis_client.hkeys(keys.offered(first.id)) == [b"restart"]  # offered in its thread
    assert redis_client.exists(keys.offered(second.id)) == 0  # no thread: nothing offered there
    [root, summary] = slack.channel("C1")
    assert summary.text == "Incident storm on: 1 new incidents folded into one summary, 1 still open"
    assert any(b["type"] == "actions" for m in slack.thread("C1", root.ts) for b in m.blocks)

    reply = remediate_reply(r, folded, "restart", "U0ONCALL1", [], now=NOW)
    assert reply.public and any(b["type"] == "actions" for b in reply.blocks)
    proposal_id = next(
        e["value"] for b in reply.blocks if b["type"] == "actions" for e in b["elements"] if "approve" in e["action_id"]
    )
    proposal = r.proposals.get(proposal_id)
    assert proposal is not None and (proposal.group, proposal.incident_id) == ("orders-replay", None)
    answer = r.approve_and_run(proposal_id, "U0ONCALL1", now=NOW)
    assert answer.ephemeral is not None and answer.ephemeral.startswith(":white_check_mark:")  # said to the approver
    bot.deliver()
    assert slack.thread("C1", summary.ts) == []  # nothing in the summary's thread
    assert bot.outbox.dead_letters() == []
