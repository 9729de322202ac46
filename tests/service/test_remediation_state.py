"""An incident's remediation state and its verification's check points: typed, stored through the one codec, and
what an earlier lagbot stored (format 1, points as positional lists) still read."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from lagbot.core.config import IncidentConfig
from lagbot.core.model import Severity, Status
from lagbot.core.stored import StoredFormatError
from lagbot.remediations.base import Progress
from lagbot.service.checkpoints import CheckPoint, check_of, point_of
from lagbot.service.incidents import decode_incident, encode_incident, step
from lagbot.service.remediation_state import RemediationState, RunState
from tests.support.verdicts import partition, verdict

KIND = "stored remediation state lagbot:remediation:inc-1"


def behind() -> CheckPoint:
    v = replace(verdict([partition(0, committed=100, log_end=600)]), status=Status.STALL, error="broker slow")
    return point_of(v, 1_000.0)


def test_a_point_keeps_the_checks_figures_and_gives_them_back_as_a_check() -> None:
    point = behind()
    assert (point.at, point.lag, point.status, point.severity, point.error) == (
        1_000.0, 500, Status.STALL, Severity.WARN, "broker slow",
    )  # fmt: skip
    check = check_of(point)
    assert check.at == 1_000.0 and check.verdict.partitions == ()
    assert (check.verdict.total_lag, check.verdict.status, check.verdict.severity) == (500, Status.STALL, Severity.WARN)
    state = RemediationState(action="scale", state=RunState.VERIFYING, detail="", id="p1", checks=(point,))
    assert RemediationState.from_json(KIND, state.to_json()).checks == (point,)


def test_the_positional_list_an_earlier_lagbot_stored_is_still_read() -> None:
    point = behind()
    old = [1_000, 500, "STALL", "warn", point.produce_rate, point.consume_rate, "broker slow"]
    raw = json.dumps({"v": 1, "action": "scale", "state": "verifying", "detail": "", "id": "p1", "checks": [old]})
    assert RemediationState.from_json(KIND, raw).checks == (point,)


@pytest.mark.parametrize(
    ("stored", "problem"),
    [
        ([1.0, 5, "STALL", "warn"], "of format version 1 is not one lagbot wrote"),
        ({"at": 1.0, "lag": 5, "status": "STALL"}, "checks.0.severity: Field required"),
        ([1.0, 5, "STUCK", "warn", None, None, None], "checks.0.status: Value error, 'STUCK' is not one of OK, WARN"),
        ({"at": 1.0, "lag": 5, "status": "STALL", "severity": "loud"}, "checks.0.severity: Value error, 'loud' is not"),
        ("1.0,5,STALL", "checks.0: Input should be"),
    ],
)
def test_a_point_lagbot_did_not_write_is_refused(stored: object, problem: str) -> None:
    raw = json.dumps({"v": 1, "action": "scale", "state": "verifying", "detail": "", "id": "p1", "checks": [stored]})
    with pytest.raises(StoredFormatError, match=problem) as refused:
        RemediationState.from_json(KIND, raw)
    assert str(refused.value).startswith(KIND)


def test_a_state_round_trips_through_the_versioned_codec() -> None:
    state = RemediationState(
        action="scale",
        state=RunState.VERIFYING,
        detail="lag falling",
        id="p1",
        checks=(behind(), replace(behind(), at=1_030.0, lag=300)),
        progress=Progress.IMPROVING,
        executed_at=1_000.0,
        settle_until=1_090.0,
    )
    raw = state.to_json()
    assert json.loads(raw)["v"] == 2 and json.loads(raw)["checks"][0]["status"] == "STALL"
    assert RemediationState.from_json(KIND, raw) == state
    running = RemediationState(action="restart", state=RunState.RUNNING, detail="Restart 1 member", id="p2")
    assert json.loads(running.to_json()) == {
        "v": 2, "action": "restart", "state": "running", "detail": "Restart 1 member", "id": "p2",
    }  # fmt: skip
    assert RemediationState.from_json(KIND, running.to_json().encode()) == running


def test_the_state_an_earlier_lagbot_stored_is_still_read() -> None:
    """Format 1, as lagbot.service.remediate wrote it before: check points as positional lists."""
    point = behind()
    old = {
        "v": 1,
        "action": "scale",
        "state": "verifying",
        "detail": "Scaled",
        "id": "p1",
        "checks": [[1_000.0, 500, "STALL", "warn", point.produce_rate, point.consume_rate, "broker slow"]],
        "progress": "pending",
        "executed_at": 1_000.0,
        "settle_until": 1_090.0,
    }
    state = RemediationState.from_json(KIND, json.dumps(old))
    assert state == RemediationState(
        action="scale",
        state=RunState.VERIFYING,
        detail="Scaled",
        id="p1",
        checks=(point,),
        progress=Progress.PENDING,
        executed_at=1_000.0,
        settle_until=1_090.0,
    )
    written = json.loads(state.to_json())  # written back in the current format
    assert point.produce_rate is None and point.consume_rate is None  # unset: left out
    assert written["v"] == 2 and written["checks"] == [
        {"at": 1_000.0, "lag": 500, "status": "STALL", "severity": "warn", "error": "broker slow"}
    ]


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"v":3,"action":"scale","state":"running","detail":"","id":"p1"}', "has format version 3"),
        ('{"v":2,"state":"running","detail":"","id":"p1"}', "not one lagbot wrote"),
        ('{"v":2,"action":"scale","state":"verifying","detail":"","id":"p1","progress":"great"}', "not one lagbot"),
        ('{"v":1,"action":"scale","state":"verifying","detail":"","id":"p1","checks":[[1]]}', "not one lagbot wrote"),
    ],
)
def test_a_state_lagbot_did_not_write_is_refused(raw: str, problem: str) -> None:
    with pytest.raises(StoredFormatError, match=problem):
        RemediationState.from_json(KIND, raw)


def test_an_incident_keeps_its_remediation_and_reads_the_old_empty_form() -> None:
    v = verdict([partition(0, committed=1, log_end=9_000)])
    opened = step(None, v, channel="C1", silenced=False, config=IncidentConfig(), now=1_000.0).incident
    assert opened is not None and opened.remediation is None
    stored = json.loads(encode_incident(opened))
    assert "remediation" not in stored and stored["v"] == 2  # no remediation: left out, as every unset field
    assert decode_incident(json.dumps({**stored, "v": 1, "remediation": {}})) == opened  # format 1 stored it as {}
    running = replace(opened, remediation=RemediationState(action="scale", state=RunState.RUNNING, detail="x", id="p1"))
    assert decode_incident(encode_incident(running)) == running
