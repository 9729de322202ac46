"""`/lag <group>` shows the owners' pods under the cause, as the incident thread does.

On real parts: a group on Apache Kafka whose stalled partition's owner is named as the pod that runs it
(tests/support/pod_lines_rig.py), the pods of a Deployment on the real API server read by the KubernetesExecutor as
lagbot's ServiceAccount under the shipped evidence Role, their status patched as a kubelet writes it (no kubelet
runs), windows in a real redis-server, and the command sent to the bolt app behind the bot's HTTP server, signed as
Slack signs it; the answer is what the Slack emulator received on the command's response URL.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from lagbot.app.server import BotHTTPServer
from lagbot.core.config import build_settings
from lagbot.devkit.emulator import SlackEmulator
from lagbot.policies.model import Policy
from lagbot.service.bot import Bot
from lagbot.service.remediate import Remediator
from lagbot.service.silences import MemorySilenceStore
from lagbot.service.slack_api import slack_client
from lagbot.slack.app import build_app
from lagbot.slack.presenter import SlackPresenter
from lagbot.slack.wiring import BotCommands
from tests.conftest import Kafka, Names
from tests.support.k8s_fixtures import Cluster
from tests.support.pod_evidence_rig import POD_GET, REPLICA_SETS, Counted, orders, orders_policy, unread
from tests.support.pod_lines_rig import Stalled, ago, explanation, settings, stalled_on_pods, topic_with_backlog
from tests.support.pod_status import LIMITS, hostile, oom_findings, oom_looping
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

__all__ = ["orders", "unread"]  # fixtures, from tests.support.pod_evidence_rig

TOKEN = "xoxb-podlines"
SECRET = "podlines-secret"
CHANNEL = "C0ALERTS"


@pytest.fixture
def slack() -> Iterator[SlackEmulator]:
    with SlackEmulator(token=TOKEN).start() as running:
        yield running


def commands(redis_client: redis.Redis, slack: SlackEmulator, k8s: Cluster, kafka: Kafka, group: str,
             counted: Counted) -> BotCommands:  # fmt: skip
    """One replica's `/lag` side, as lagbot.app.assembly builds it: the bot on Redis, its remediator (whose pod
    readings the slash command shares), the executor as lagbot's ServiceAccount."""
    configured = build_settings({**settings(kafka, group), "slack": {"default_channel": CHANNEL}}, source="test")
    rules = Policy.model_validate(orders_policy(k8s, by_client_id=True))
    bot = Bot.on_redis(
        configured, redis_client, slack_client(TOKEN, slack.api_url), SlackPresenter(), policy=rules,
        remediations=counted.remediator_of,
    )  # fmt: skip
    assert isinstance(bot.remediations, Remediator)
    return BotCommands(bot, MemorySilenceStore(), remediator=bot.remediations)


def ask(slack: SlackEmulator, deps: BotCommands, text: str) -> dict[str, Any]:
    """`/lag <text>` signed and sent to the bolt app over HTTP; the one answer Slack received for it."""
    app = build_app(client=deps.bot.slack, signing_secret=SECRET, run_command=deps.run, clock=deps.bot.clock)
    server = BotHTTPServer(
        host="127.0.0.1", port=0, app=app, health=lambda: (True, {}), metrics=bytes, signing_secret=SECRET
    )
    with server.start() as running:
        url = f"http://127.0.0.1:{running.port}/slack/events"
        status, _, key = slack.slash_command(url, SECRET, text=text, user="U0ONCALL1", channel=CHANNEL)
        assert status == 200
        [answer] = wait_for("the answer on the response URL", lambda: slack.responses.get(key), timeout=60)
    return dict(answer)


def causes_of(answer: dict[str, Any]) -> list[str]:
    """The cause sections of a group's answer (after the table's divider)."""
    blocks = answer["blocks"]
    dividers = [i for i, b in enumerate(blocks) if b["type"] == "divider"]
    assert dividers, answer["text"]  # a group's answer, not an error
    divider = dividers[0]
    return [str(b["text"]["text"]) for b in blocks[divider + 1 :] if b["type"] == "section"]


def stuck_cause(group: Stalled, confidence: str, pods: list[str]) -> str:
    """The stuck_consumer cause of the stalled group as Slack shows it, with its owner's pod lines (mrkdwn)."""
    return (
        f"*1. stuck_consumer* ({confidence}): {explanation(group)}"
        + (f"; owner pods: {'; '.join(pods)}" if pods else "")
        + " → _restart_"
    )


def minutes_ago(finished: float, before: float, after: float) -> list[str]:
    """How a termination at `finished` is worded when read at some moment between `before` and `after`."""
    return sorted({ago(at, finished) for at in (before, after)})


HOSTILE_SHOWN = "&lt;!channel&gt; ˋxˋ\\x1b[2J" + "y" * 81 + "…"
"""pod_status's HOSTILE as Slack shows it: cut to 100 characters when read (the ellipsis the last), then inert."""


def hostile_lines(pod: str, ago: str) -> list[str]:
    return [
        f"pod {pod}: container consumer restarted 2 times, last ended {HOSTILE_SHOWN} (exit code 1) {ago}",
        f"pod {pod}: container consumer is waiting in {HOSTILE_SHOWN}",
        LIMITS,
        f"pod {pod} is running but not Ready",
    ]


def oom(k8s: Cluster, pod: str, finished: float) -> None:
    oom_looping(k8s, pod, "10.1.2.3", finished=finished, restarts=4)


def hostile_not_ready(k8s: Cluster, pod: str, finished: float) -> None:
    hostile(k8s, pod, "10.1.2.3", finished, is_ready=False)


@pytest.mark.parametrize(
    ("written", "lines"), [(oom, oom_findings), (hostile_not_ready, hostile_lines)], ids=["oom", "hostile"]
)
def test_lag_group_shows_the_owner_s_pod_under_the_cause_as_the_thread_does(
    redis_client: redis.Redis,
    slack: SlackEmulator,
    orders: Cluster,
    kafka: Kafka,
    names: Names,
    written: Callable[[Cluster, str, float], None],
    lines: Callable[[str, str], list[str]],
) -> None:
    topic, group = topic_with_backlog(kafka, names)
    pods = [p.metadata.name for p in orders.wait_pods("orders", 2)]
    counted = Counted(orders, time.time())
    deps = commands(redis_client, slack, orders, kafka, group, counted)
    with stalled_on_pods(kafka.bootstrap, topic, group, pods) as stalled:
        finished = float(int(time.time()) - 250)  # a kubelet's times are whole seconds
        written(orders, stalled.stuck, finished)
        deps.bot.checker.run(2, 2.0)  # the window spans min_span already; `/lag` samples once more into its own copy
        before = time.time()
        answer = ask(slack, deps, group)
        after = time.time()

    [first, *_] = causes_of(answer)
    confidence = re.match(r"\*1\. stuck_consumer\* \((\d{1,3}%)\)", first)
    assert confidence is not None, first
    shown = [
        stuck_cause(stalled, confidence[1], lines(stalled.stuck, when)) for when in minutes_ago(finished, before, after)
    ]
    assert first in shown
    assert answer["response_type"] == "ephemeral"
    # The stuck owner's pod, read once (found by its name: no listing by IP); the caught-up one is not blamed.
    assert counted.requests == [POD_GET, REPLICA_SETS]
    assert slack.calls_to("chat.postMessage") == []  # the answer went to the response URL only


def test_lag_group_whose_pods_cannot_be_read_shows_the_cause_as_the_broker_sees_it(
    redis_client: redis.Redis, slack: SlackEmulator, unread: Cluster, kafka: Kafka, names: Names
) -> None:
    """The namespace grants lagbot no read of its pods (no evidence Role): the real authorizer refuses the read, and
    the answer is the group's, without pods and without an error."""
    topic, group = topic_with_backlog(kafka, names)
    [pod] = [p.metadata.name for p in unread.wait_pods("orders", 1)]
    oom_looping(unread, pod, "10.1.2.3", finished=time.time() - 30, restarts=4)
    counted = Counted(unread, time.time())
    deps = commands(redis_client, slack, unread, kafka, group, counted)
    with stalled_on_pods(kafka.bootstrap, topic, group, [pod, f"{pod}-other"]) as stalled:
        deps.bot.checker.run(2, 2.0)
        answer = ask(slack, deps, group)

    [first, *_] = causes_of(answer)
    confidence = re.match(r"\*1\. stuck_consumer\* \((\d{1,3}%)\)", first)
    assert confidence is not None, first
    assert first == stuck_cause(stalled, confidence[1], [])
    assert counted.requests == [POD_GET]  # asked, refused by RBAC, not asked again
    assert "went wrong" not in answer["text"] and "could not" not in str(answer["blocks"])
