"""Every stored type goes through the one codec (lagbot.core.codec): each round-trips, reads the document the release
before wrote (the old shape, verbatim), and refuses a version it does not read with the one StoredFormatError."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lagbot.core import codec
from lagbot.core.model import Severity, Status, Trend
from lagbot.core.stored import StoredFormatError
from lagbot.devkit.fleet import RECORD_CODEC, SPEC_CODEC, FleetSpec, MemberRecord
from lagbot.policies.approvers import CACHE_CODEC, CachedUsergroup
from lagbot.remediations.base import PLAN_CODEC, Plan, Risk
from lagbot.remediations.drain.job import JOB_CODEC, PROGRESS_CODEC, JobConfig, JobProgress
from lagbot.remediations.drain.plan import MANIFEST_CODEC, Manifest, OffsetRange, RangeReceipt
from lagbot.remediations.scale.hand_back import HAND_BACK_CODEC, KedaHandBack
from lagbot.service.audit import AUDIT_CODEC, AuditEntry
from lagbot.service.edits import SHOWN_CODEC, Shown
from lagbot.service.incidents import INCIDENT_CODEC, Incident
from lagbot.service.outbox import DEAD_LETTER_CODEC, OPERATION_CODEC, ROOT_BODY_CODEC, DeadLetter, Operation, RootBody
from lagbot.service.proposal_messages import PROPOSAL_MESSAGE_CODEC, ProposalMessage
from lagbot.service.proposal_stores import PROPOSAL_DOC_CODEC, ProposalDocument
from lagbot.service.remediation_state import STATE_CODEC, RemediationState, RunState
from lagbot.service.restores import RESTORE_CODEC, PendingRestore
from lagbot.service.sent_marks import MARKS_CODEC, Mark, Marks
from lagbot.service.silences import SILENCE_CODEC, Silence
from lagbot.service.slack_message import Block, SlackMessage
from lagbot.service.storms import MEMBER_CODEC, OPENS_CODEC, STORM_CODEC, ChannelOpens, Member, Storm
from lagbot.service.summary import SUMMARY_CODEC, SummaryDocument, SummaryRow

BLOCKS = [{"type": "section", "text": {"type": "mrkdwn", "text": "*orders* behind"}}]
HELD = tuple(Block(b) for b in BLOCKS)
OPERATION = Operation(
    "update_root", "i1", "prod", "orders", "C1", SlackMessage("behind", HELD), table=SlackMessage("t", HELD)
)
INCIDENT = Incident(
    id="i1", cluster="prod", group="orders", channel="C1", opened_at=5.0, severity=Severity.CRITICAL,
    peak_severity=Severity.PAGE, peak_lag=9_000, primary_cause="hot_partition", status=Status.STALL, updated_at=9.0,
    resolved_at=12.0, reopened=1, causes_stated=("hot_partition",),
    remediation=RemediationState("scale", RunState.RUNNING, "Scaling", "p1", executed_at=8.0),
)  # fmt: skip
RECEIPT = RangeReceipt("t", 0, 0, 10, "written", 10, 50, 0, 9)

CASES: list[tuple[codec.Codec[Any], Any, str]] = [
    (OPERATION_CODEC, OPERATION, json.dumps({"v": 1, "op": "update_root", "incident_id": "i1", "cluster": "prod",
     "group": "orders", "channel": "C1", "text": "behind", "blocks": BLOCKS, "table": ["t", BLOCKS]})),
    (ROOT_BODY_CODEC, RootBody("behind", HELD), json.dumps({"text": "behind", "blocks": BLOCKS})),
    (DEAD_LETTER_CODEC, DeadLetter({"v": 1, "op": "reply"}, "invalid_blocks", 7.5),
     '{"operation": {"v": 1, "op": "reply"}, "error": "invalid_blocks", "at": 7.5}'),
    (PROPOSAL_MESSAGE_CODEC, ProposalMessage("C1", "1.2", "Scale?", HELD, ("p1", "p2")),
     json.dumps({"v": 1, "channel": "C1", "ts": "1.2", "text": "Scale?", "blocks": BLOCKS, "proposals": ["p1", "p2"]})),
    (INCIDENT_CODEC, INCIDENT, json.dumps({"v": 1, "id": "i1", "cluster": "prod", "group": "orders", "channel": "C1",
     "opened_at": 5.0, "severity": "critical", "peak_severity": "page", "peak_lag": 9_000,
     "primary_cause": "hot_partition", "status": "STALL", "updated_at": 9.0, "below_since": None, "resolved_at": 12.0,
     "reopened": 1, "causes_stated": ["hot_partition"], "remediation": {"action": "scale", "state": "running",
     "detail": "Scaling", "id": "p1", "executed_at": 8.0}})),
    (STATE_CODEC, RemediationState("scale", RunState.FAILED, "boom", "p1"),
     '{"v": 1, "action": "scale", "state": "failed", "detail": "boom", "id": "p1"}'),
    (PROPOSAL_DOC_CODEC, ProposalDocument("prod", "orders", "scale", "{}", 5.0, 600.0, "C1", "i1", {"k": 1}),
     json.dumps({"action": "scale", "channel": "C1", "cluster": "prod", "cooldown": 600.0, "created_at": 5.0,
     "extra": {"k": 1}, "group": "orders", "incident_id": "i1", "plan": "{}"}, sort_keys=True)),
    (SUMMARY_CODEC, SummaryDocument("prod", 5.0, (SummaryRow("orders", Severity.CRITICAL, Status.STALL, 7_000, 12.5,
     Trend.GROWING),)), '{"v":1,"cluster":"prod","taken_at":5.0,"groups":[["orders","CRITICAL","STALL",7000,12.5,'
     '"growing"]]}'),
    (RESTORE_CODEC, PendingRestore({"paused": "4"}), '{"previous":{"paused":"4"},"v":1}'),
    (SHOWN_CODEC, Shown('["story"]', "ab12", 5.0), '{"at":5.0,"digest":"ab12","story":"[\\"story\\"]","v":1}'),
    (SILENCE_CODEC, Silence("prod", "orders", 60.0, "deploy", "U1", 5.0),
     '{"v":1,"cluster":"prod","group":"orders","until":60.0,"reason":"deploy","by":"U1","created_at":5.0}'),
    (OPENS_CODEC, ChannelOpens((1.0, 2.0), "storm-1"), '{"recent":[1.0,2.0],"storm_id":"storm-1","v":1}'),
    (STORM_CODEC, Storm("storm-1", "C1", 1.0, 3), '{"channel":"C1","dirty":false,"ended_at":null,"folded":3,'
     '"id":"storm-1","posted":false,"shown_at":0.0,"started_at":1.0,"v":1}'),
    (MEMBER_CODEC, Member("prod", "orders", "warn", None, True),
     '{"cluster":"prod","group":"orders","open":true,"peak_lag":null,"severity":"warn","v":1}'),
    (CACHE_CODEC, CachedUsergroup(60.0, ("U1", "U2")), '{"v":1,"expires_at":60.0,"users":["U1","U2"]}'),
    (AUDIT_CODEC, AuditEntry(5.0, "proposed", "prod", "orders", "lagbot", "scale", "p1", {"k": 1}),
     '{"action":"scale","at":5.0,"cluster":"prod","detail":{"k":1},"event":"proposed","group":"orders",'
     '"proposal":"p1","user":"lagbot","v":1}'),
    (PLAN_CODEC, Plan("scale", "prod", "orders", "Scale", Risk.LOW, {"replicas": 4}),
     '{"v":1,"action":"scale","cluster":"prod","group":"orders","summary":"Scale","risk":"low","params":'
     '{"replicas":4},"steps":[],"before":{},"after":{},"preflight":[],"created_at":0.0,"confirm":null}'),
    (MANIFEST_CODEC, Manifest("d1", "prod", "orders", "/s", 1.0, 2.0, (RECEIPT,)),
     json.dumps({"v": 1, "plan_id": "d1", "cluster": "prod", "group": "orders", "sink": "/s", "started_at": 1.0,
     "finished_at": 2.0, "ranges": [{"topic": "t", "partition": 0, "start": 0, "end": 10, "status": "written",
     "count": 10, "bytes": 50, "first_offset": 0, "last_offset": 9, "error": None}], "error": None, "extra": {},
     "complete": True, "messages": 10, "bytes": 50}, sort_keys=True, indent=1)),
    (JOB_CODEC, JobConfig("d1", "prod", "orders", "/s", "/s/m.json", {"bootstrap.servers": "k:1"},
     (OffsetRange("t", 0, 0, 10),)), json.dumps({"v": 1, "plan_id": "d1", "cluster": "prod", "group": "orders",
     "sink": "/s", "manifest_url": "/s/m.json", "kafka": {"bootstrap.servers": "k:1"}, "ranges": [["t", 0, 0, 10]],
     "idle_timeout": 30.0, "fail_after": None, "writer": "auto", "extra": {}})),
    (PROGRESS_CODEC, JobProgress(3, 10, 3_000, 2.0),
     '{"ranges_done": 3, "ranges_total": 10, "messages": 3000, "elapsed": 2.0}'),
    (SPEC_CODEC, FleetSpec(name="f1", bootstrap="k:1", group="g", topics=["t"]),
     json.dumps({"v": 1, "name": "f1", "bootstrap": "k:1", "group": "g", "topics": ["t"], "replicas": 1,
     "delay_ms": 0.0, "commit_every": 100, "commit_interval_ms": 1000, "stuck_after": 0, "max_seconds": 3600.0,
     "kafka": {}}, sort_keys=True)),
    # The scale's KEDA hand-back, as the restore queue's record held it before it had a type (each shape it had).
    (HAND_BACK_CODEC, KedaHandBack("7", interrupted=True), '{"interrupted":true,"keda_previous":"7"}'),
    (HAND_BACK_CODEC, KedaHandBack(3), "3"),
    (HAND_BACK_CODEC, KedaHandBack(None), "null"),
    # New with marks: what it reads is its first format.
    (MARKS_CODEC, Marks((Mark("k1.reply", 5.0),)), '{"v":1,"marks":[{"identity":"k1.reply","at":5.0}]}'),
    (RECORD_CODEC, MemberRecord(0, "f1-0", 42, None, 5.0, ["python", "-m", "x"]),
     '{"argv":["python","-m","x"],"client_id":"f1-0","index":0,"pid":42,"proc_start":null,"started_at":5.0,"v":1}'),
]  # fmt: skip


@pytest.mark.parametrize(("stored", "value", "old"), CASES, ids=[c[0].kind for c in CASES])
def test_a_stored_type_round_trips_and_reads_what_the_release_before_wrote(
    stored: codec.Codec[Any], value: Any, old: str
) -> None:
    assert stored.decode(stored.encode(value)) == value
    assert stored.decode(old) == value
    assert stored.decode(old.encode()) == value  # Redis replies are bytes
    assert json.loads(stored.encode(value))["v"] == stored.version


@pytest.mark.parametrize(("stored", "value", "old"), CASES, ids=[c[0].kind for c in CASES])
def test_a_version_it_does_not_read_is_one_error_naming_the_type(
    stored: codec.Codec[Any], value: Any, old: str
) -> None:
    newer = {**json.loads(stored.encode(value)), "v": stored.version + 1}
    with pytest.raises(StoredFormatError) as refused:
        stored.decode(json.dumps(newer))
    assert (
        str(refused.value)
        == f"{stored.kind} has format version {stored.version + 1}; this lagbot reads {stored.version}"
    )
    with pytest.raises(StoredFormatError, match=f"^{stored.kind} is not JSON$"):
        stored.decode(b"\xff")


def test_every_registered_type_is_checked_here() -> None:
    assert {c.kind for c in codec.registered()} - {"stored sample"} == {c[0].kind for c in CASES}
