"""A run cut short is typed (lagbot.remediations.base `CutShort` on `Outcome.cut_short`), and the audit keeps it as it
always has ({"interrupted": true} or {"crashed": true} in the entry's "data"): the stored format did not change, so an
entry an earlier lagbot wrote reads the same as one written today, and no upgrader is needed."""

from __future__ import annotations

import json

from lagbot.remediations.base import CutShort, Outcome
from lagbot.service.audit import AuditEntry

T0 = 1_790_000_000.0
EARLIER = (
    '{"action":"scale","at":1790000000.0,"cluster":"prod","detail":{"data":{"interrupted":true},'
    '"detail":"interrupted: scale"},"event":"failed","group":"orders","proposal":"p1","user":"lagbot","v":1}'
)
"""An audit entry of a reaped run, as the lagbot before typed outcomes wrote it."""


def test_a_cut_short_run_is_recorded_with_its_flag_beside_the_remediation_s_own_data() -> None:
    assert Outcome(False, "x", cut_short=CutShort.INTERRUPTED).recorded == {"interrupted": True}
    assert Outcome(False, "x", cut_short=CutShort.CRASHED).recorded == {"crashed": True}
    held = Outcome(False, "x", {"keda_previous": "7"}, CutShort.INTERRUPTED)
    assert held.recorded == {"keda_previous": "7", "interrupted": True} and held.data == {"keda_previous": "7"}
    assert Outcome(True, "done", {"before": 2, "after": 4}).recorded == {"before": 2, "after": 4}


def test_an_entry_an_earlier_lagbot_wrote_reads_as_the_entry_written_today() -> None:
    reaped = Outcome(False, "interrupted: scale", cut_short=CutShort.INTERRUPTED)
    today = AuditEntry(
        T0, "failed", "prod", "orders", "lagbot", "scale", "p1", {"detail": reaped.detail, "data": reaped.recorded}
    )
    assert AuditEntry.from_json(EARLIER) == today
    assert json.loads(today.to_json()) == json.loads(EARLIER)
