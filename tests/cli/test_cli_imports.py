"""`lagbot check` loads only what a check needs: a whole check, run in a fresh interpreter, starts no process (its
groups are read in-process, not by the offset reader's child) and imports none of the bot's other machinery (Spark,
Kubernetes, the Redis client, numpy, Slack, the policy model, the drain job; the YAML parser when no file is given;
typer, since the command line is argparse's; rich's console, since a report to a pipe is laid out without it). Help
loads none of them, nor pydantic, the Kafka client or rich.

What the process printed is checked too, so the test proves the check really ran to its end in that interpreter.
"""

from __future__ import annotations

import json

import pytest

from lagbot.devkit.apache_kafka import ApacheKafka
from lagbot.devkit.embedded import committed_offsets
from tests.conftest import Kafka, Names
from tests.support.bot_process import wait_for
from tests.support.cli_imports import NOT_FOR_A_CHECK, run_check

pytestmark = pytest.mark.integration


def commit_until_read_back(kafka: Kafka, group: str, topic: str, offsets: list[int]) -> None:
    """Commit, and again until the broker reads the offsets back: a fresh broker can drop a first commit while
    it loads its offsets topic (the commit answers with a per-partition error the helper does not raise)."""

    def committed() -> bool:
        kafka.commit(group, {(topic, p): offset for p, offset in enumerate(offsets)})
        return committed_offsets(kafka.admin, group, topic, len(offsets)) == offsets

    wait_for(f"{group}'s offsets committed", committed, timeout=30)


def test_a_check_imports_nothing_but_the_check(broker: ApacheKafka, kafka: Kafka, names: Names) -> None:
    topic, group = names("topic"), names("group")
    kafka.create_topic(topic, 2)
    kafka.produce(topic, 0, 7)
    kafka.produce(topic, 1, 2)
    commit_until_read_back(kafka, group, topic, [3, 2])

    table, outcome = run_check("check", "--samples", "1", "-b", broker.bootstrap, "--group", group)
    assert outcome == {"exit": 0, "loaded": [], "processes": 0}  # the groups are read in-process: no child
    rows = [line.split()[:6] for line in table.splitlines() if line.startswith(f"{group}  ")]
    assert rows == [[group, topic, "0", "3", "7", "4"], [group, topic, "1", "2", "2", "0"]]

    report, outcome = run_check(
        "check", "--samples", "2", "--every", "0.1", "-b", broker.bootstrap, "--group", group, "--json"
    )
    assert outcome == {"exit": 0, "loaded": [], "processes": 0}
    [found] = json.loads(report)["groups"]
    assert (found["group"], found["total_lag"]) == (group, 4)
    assert [(p["partition"], p["lag"]) for p in found["partitions"]] == [(0, 4), (1, 0)]


NOT_FOR_HELP = (
    *NOT_FOR_A_CHECK,
    "pydantic",  # no value is validated before a command runs
    "confluent_kafka",
    "rich",
    "lagbot.core.config",
    "lagbot.engine.check",
)


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (("check", "--help"), ("--bootstrap", "--samples", "1<=x<=1000", "--every", "--json")),
        (("--help",), ("--version", "check", "run", "demo", "drain", "policy", "fleet", "audit")),
        (("drain", "--help"), ("--group", "--sink", "--chunk", "--topic", "--master", "--dry-run")),
        (("policy", "--help"), ("validate", "explain")),
    ],
    ids=["check", "lagbot", "drain", "policy"],
)
def test_help_loads_no_command_s_machinery(args: tuple[str, ...], shown: tuple[str, ...]) -> None:
    usage, outcome = run_check(*args, unwanted=NOT_FOR_HELP)
    assert outcome == {"exit": 0, "loaded": [], "processes": 0}
    assert usage.startswith(f"Usage: lagbot {args[0] if args[0] != '--help' else ''}".rstrip())
    assert [text for text in shown if text not in usage] == []
