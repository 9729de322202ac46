"""Words a newcomer read wrong in the demo: a severity beside "status OK", and a local fleet named as if it
were a Kubernetes Deployment in namespace default."""

from __future__ import annotations

from lagbot.cli import wording as cli_wording
from lagbot.core import messages
from lagbot.core.model import Severity, Status
from lagbot.remediations.executors.base import Workload
from lagbot.remediations.restart.remediation import Restart, RestartParams
from lagbot.remediations.scale.remediation import Scale, ScaleParams
from lagbot.service import wording as service_wording
from lagbot.service.approvals import Verdict
from lagbot.slack.wording import incidents as slack_wording
from tests.support.verdicts import member, partition, verdict

NOW = 1_800_000_000.0
FLEET = Workload(executor="local", name="orders-workers")


def test_a_warning_about_moving_consumers_says_they_are_consuming() -> None:
    v = verdict([partition(0, committed=0, log_end=5_000)], severity=Severity.WARN, status=Status.OK)
    headline = cli_wording.cli_group_headline(v)
    assert "severity WARN · consuming · state Stable" in headline and "status" not in headline
    assert slack_wording.slack_root_fallback(v).startswith(f"WARN `{v.group}` on `{v.cluster}`: consuming, lag 5,000")


def test_every_status_has_its_words() -> None:
    assert {s.name for s in Status} == set(messages.STATUS_WORDS)


def test_a_local_fleet_is_named_as_a_fleet_in_plans() -> None:
    v = verdict([partition(p, committed=0, log_end=1000) for p in range(6)],
                members=[member(1, 0, 1, 2), member(2, 3, 4, 5)], produce=1_600.0, consume=1_000.0)  # fmt: skip
    scale = Scale().plan(v, ScaleParams(workload=FLEET, current_replicas=2, max_replicas=10), now=NOW)
    assert scale.steps == ("scale local fleet orders-workers from 2 to 4 replicas",)
    restart = Restart().plan(v, RestartParams(workload=FLEET, scope="workload"), now=NOW)
    assert restart.steps[0].startswith("rolling restart of local fleet orders-workers: ")
    kubernetes = Workload(executor="kubernetes", name="orders", namespace="shop", kind="statefulset")
    assert kubernetes.label() == "statefulset shop/orders"


def test_every_refusal_of_an_approval_click_has_its_own_words() -> None:
    refusals = [v for v in Verdict if v not in (Verdict.RUN, Verdict.RECORDED)]
    lines = {v: service_wording.approval_refused(v, "succeeded", "90000") for v in refusals}
    assert len(set(lines.values())) == len(refusals)  # no two refusals read the same
    assert lines[Verdict.COOLDOWN] == "Not run: it ran for this group recently: cooldown for another 90 s."
    assert lines[Verdict.NOT_PROPOSED] == "Not run: this proposal is already succeeded."
    assert lines[Verdict.NOT_APPROVER] == "Not run: you are not an approver of it."


def test_an_escalation_mentions_the_approvers_it_is_given() -> None:
    assert service_wording.verify_escalation("no change after 3 checks", "<@U1> <!subteam^S1>") == (
        ":rotating_light: no change after 3 checks <@U1> <!subteam^S1>"
    )
    assert service_wording.verify_escalation("no change", "") == ":rotating_light: no change"
