"""What the remediation end-to-end tests share: the bot's configuration and policy, a local fleet, the thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import EmbeddedRedis, log_end_offsets
from lagbot.devkit.emulator import Message, SlackEmulator
from lagbot.devkit.fleet import FleetSpec, LocalExecutor
from lagbot.remediations.executors.base import Workload
from lagbot.remediations.scale.remediation import Scale, ScaleParams
from tests.conftest import Kafka
from tests.support.bot_process import CHANNEL, bot_config, wait_for
from tests.support.verdicts import member, partition, verdict

TOKEN = "xoxb-remediation"


def config(
    broker: ApacheKafka, redis_server: EmbeddedRedis, slack: SlackEmulator, group: str, policy: Path, fleets: Path
) -> dict[str, Any]:
    """The end-to-end bot configuration, with this file's policy, a local fleet and a 2 s span for STALL."""
    base = bot_config(broker, redis_server, slack, group)
    return {
        **base,
        "thresholds": {**base["thresholds"], "critical": {"messages": 10**8}, "page": {"messages": 10**9}},
        "evaluation": {**base["evaluation"], "min_span": "2s"},
        "policy_file": str(policy),
        "executors": {"local": {"state_dir": str(fleets)}},
    }


def log_end(kafka: Kafka, topic: str, partitions: int) -> list[int]:
    return log_end_offsets(kafka.admin, topic, partitions)


def thread_with_button(slack: SlackEmulator, prefix: str, label: str = "") -> tuple[Message, Message]:
    """The incident's root and the first reply with a button whose action id starts with `prefix` and
    whose text contains `label`."""

    def labels(message: Message) -> list[str]:
        return [
            e["text"]["text"]
            for b in message.blocks
            if b["type"] == "actions"
            for e in b["elements"]
            if e["action_id"].startswith(prefix)
        ]

    def find() -> tuple[Message, Message] | None:
        for root in slack.channel(CHANNEL):
            for reply in slack.thread(CHANNEL, root.ts):
                if any(label in text for text in labels(reply)):
                    return root, reply
        return None

    return wait_for(f"a thread reply with a {prefix} button labelled {label!r}", find, timeout=90)


def replies_text(slack: SlackEmulator, root: Message) -> str:
    return "\n".join(m.text for m in slack.thread(CHANNEL, root.ts))


def start_fleet(executor: LocalExecutor, broker: ApacheKafka, name: str, group: str, topic: str, **kw: Any) -> None:
    outcome = executor.start(FleetSpec(name=name, bootstrap=broker.bootstrap, group=group, topics=[topic], **kw))
    assert outcome.ok, outcome.detail


APPROVER = "U0APPROVER"


SECOND = "U0SECOND"


REQUESTER = "U0REQUESTER"
"""An approver who asks for a remediation with `/lag remediate` (only approvers may ask)."""


def write_policy(tmp: Path, fleet: str, **rule: Any) -> Path:
    remediations = rule.pop(
        "remediations",
        {
            "restart": {"proposal_expiry": "10m", "cooldown": "1m"},
            "scale": {"min_replicas": 1, "max_replicas": 4, "proposal_expiry": "10m", "cooldown": "1m"},
            "reset_offsets": {"approvals_required": 2, "proposal_expiry": "10m", "cooldown": "1m"},
        },
    )
    policy = {
        "version": 1,
        "default": {
            "name": "team-orders",
            "approvers": {"users": [APPROVER, SECOND, REQUESTER]},
            "workload": {"executor": "local", "name": fleet},
            "remediations": remediations,
            "verification": {"no_change_after": 5},
            **rule,
        },
    }
    path = tmp / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    return path


def scale_plan(workload: Workload, current: int = 2, *, now: float = 1_800_000_000.0, **extra: Any) -> Any:
    v = verdict(
        [partition(p, committed=0, log_end=1000) for p in range(6)],
        produce=1_600.0,
        consume=1_000.0,
        members=[member(1, 0, 1, 2), member(2, 3, 4, 5)],
    )
    params = ScaleParams(workload=workload, current_replicas=current, max_replicas=10, **extra)
    return Scale().plan(v, params, now=now)
