"""Run in a copy of the tree to which one remediation, `pause`, was added as docs/remediations.md says (one package,
one registry line): what the copy's lagbot makes of it, printed as one JSON document for
tests/remediations/test_plugin_contract.py to assert on.

`python -m tests.support.plugin_probe REDIS_URL`, with the copy's three roots first on PYTHONPATH. It goes through the
policy schema, `/lag remediate`'s arguments, `lagbot policy explain`, the service's join of causes to remediations
(and `lagbot check`'s line and JSON of it), a proposal from a verdict whose cause the remediation answers, an approval
that runs it and a verification step, on a real redis-server and the Slack emulator.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any

import redis
from pydantic import ValidationError

from lagbot.cli.wording import cli_cause_line
from lagbot.core.config import Settings
from lagbot.core.model import Cause, Severity, Status
from lagbot.devkit.emulator import SlackEmulator
from lagbot.engine.report import cause_json
from lagbot.policies.approvers import ApproverDirectory, MemoryUsergroupCache
from lagbot.policies.explain import explain
from lagbot.policies.model import Policy
from lagbot.remediations import registry
from lagbot.service.bot import Bot
from lagbot.service.checkpoints import CheckPoint
from lagbot.service.incidents import Incident
from lagbot.service.remediate import Remediator
from lagbot.service.remediation_state import RemediationState
from lagbot.service.remedies import remedy
from lagbot.service.slack_api import slack_client
from lagbot.slack.presenter import SlackPresenter
from lagbot.slack.replies import remediate_args
from tests.support.verdicts import CLUSTER, GROUP, partition, verdict

NOW = 1_790_000_000.0
TOKEN = "xoxb-plugin"
APPROVER = "U0ONCALL1"


def policy(pause: dict[str, Any]) -> Policy:
    return Policy.model_validate({"default": {"approvers": {"users": [APPROVER]}, "remediations": {"pause": pause}}})


def schema() -> dict[str, Any]:
    allowed = policy({"max_seconds": 45}).default.allows("pause")
    try:
        policy({"max_secs": 45})
        refused: list[Any] = []
    except ValidationError as exc:
        refused = [[list(e["loc"]), e["msg"]] for e in exc.errors()]
    return {"model": type(allowed).__name__, "max_seconds": getattr(allowed, "max_seconds", None), "refused": refused}


def remediate() -> dict[str, Any]:
    try:
        remediate_args("pause", ["soon"])
        usage = ""
    except ValueError as exc:
        usage = str(exc)
    return {"args": remediate_args("pause", ["40"]), "usage": usage}


def join() -> dict[str, Any]:
    """The remedies the service's join gives: the cause `pause` answers, one it does not, and `lagbot check`'s line and
    JSON of the first."""
    churn = Cause("rebalance_churn", "members keep changing", 0.7, rank=1)
    idle = Cause("idle_members", "more members than partitions", 0.5, rank=2)
    return {
        "rebalance_churn": remedy(churn),
        "idle_members": remedy(idle),
        "check_line": cli_cause_line(churn, remedy(churn)),
        "check_json": cause_json(churn, remedy(churn))["remediation"],
    }


def service(redis_url: str) -> dict[str, Any]:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    churning = replace(
        verdict([partition(0, committed=0, log_end=500)]),
        causes=(Cause("rebalance_churn", "members keep changing", 0.7, rank=1),),
        severity=Severity.WARN,
    )
    incident = Incident(
        "inc-pause", CLUSTER, GROUP, "C0LAG", NOW, Severity.WARN, Severity.WARN, 500, None, Status.WARN, NOW
    )
    with SlackEmulator(token=TOKEN).start() as slack:
        pausing = policy({"max_seconds": 45})
        settings = Settings(clusters=[{"name": CLUSTER, "bootstrap_servers": "127.0.0.1:9"}])  # type: ignore[list-item]
        bot = Bot.on_redis(
            settings, client, slack_client(TOKEN, slack.api_url), SlackPresenter(), policy=pausing, clock=lambda: NOW
        )
        directory = ApproverDirectory(bot.slack, cache=MemoryUsergroupCache())
        r = Remediator(bot, directory=directory, executor_for=lambda _w: None)
        suggested = r.suggested(churning)
        [proposal], skipped = r.propose(churning, now=NOW, incident=None, given={"seconds": 40})
        answer = r.click(proposal.id, APPROVER, now=NOW).ephemeral
        done = r.proposals.get(proposal.id)
        v = churning
        baseline = CheckPoint(NOW, v.total_lag, v.status, v.severity, v.produce_rate, v.consume_rate, v.error)
        verifying = RemediationState(action="pause", state="verifying", detail="", id=proposal.id, checks=(baseline,))
        r.runs.write(incident.id, verifying)
        r.verify_step(incident, churning, now=NOW + 30)
        verified = r.runs.read(incident.id)[0]
    client.flushdb()
    client.close()
    return {
        "suggested": suggested,
        "summary": proposal.plan.summary,
        "skipped": skipped,
        "answer": answer,
        "state": done.state.value if done is not None else None,
        "verified": [verified.state, verified.detail] if verified is not None else None,
    }


def main(redis_url: str) -> None:
    pause = registry.get("pause")
    report = {
        "registry_file": sys.modules["lagbot.remediations.packages"].__file__,
        "pause_file": sys.modules[type(pause).__module__].__file__,
        "names": list(registry.names_in_order()),
        "schema": schema(),
        "remediate": remediate(),
        "explain": [line for line in explain(policy({}), CLUSTER, GROUP, now=NOW) if "pause" in line],
        "join": join(),
        "service": service(redis_url),
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1])
