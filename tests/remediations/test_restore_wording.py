"""What a run left to undo is told in the remediation's own words (`Remediation.restored`): the hold after scaling is
scale's to name; another remediation that hands something back says what it undid, never "scaling"."""

from __future__ import annotations

from lagbot.remediations.base import CutShort, Outcome
from lagbot.remediations.registry import get
from lagbot.service import wording


def test_scale_names_its_hold_and_the_autoscaler() -> None:
    scale = get("scale")
    assert wording.restored(True, scale.restored(Outcome(True, "orders-so resumed"))) == (
        ":arrows_counterclockwise: The hold after scaling is over: handed back to the autoscaler: orders-so resumed"
    )
    assert wording.restored(False, scale.restored(Outcome(False, "403 Forbidden"))) == (
        ":x: The hold after scaling is over, but handing back to the autoscaler failed: 403 Forbidden"
    )


def test_another_remediation_says_what_it_undid_without_naming_scaling() -> None:
    restart = get("restart")
    assert wording.restored(True, restart.restored(Outcome(True, "paused again"))) == (
        ":arrows_counterclockwise: What restart left to undo is undone: paused again"
    )
    assert wording.restored(False, restart.restored(Outcome(False, "timed out"))) == (
        ":x: Undoing what restart left to undo failed: timed out"
    )


def test_an_interrupted_run_s_restore_says_it_undid_the_interrupted_change() -> None:
    drain, scale = get("drain"), get("scale")
    assert wording.restored(True, drain.restored(Outcome(True, "consumers restored: orders back to 2 replica(s)"))) == (
        ":arrows_counterclockwise: The interrupted drain's pause is undone: consumers restored: orders back to 2 "
        "replica(s)"
    )
    failed = Outcome(False, "RESTORE FAILED: scale orders back to 2 by hand")
    assert wording.restored(False, drain.restored(failed)) == (
        ":x: The interrupted drain's pause could not be undone: RESTORE FAILED: scale orders back to 2 by hand"
    )
    handed = Outcome(True, "orders-so resumed", cut_short=CutShort.INTERRUPTED)
    assert wording.restored(True, scale.restored(handed)) == (
        ":arrows_counterclockwise: The interrupted scale is handed back to the autoscaler: orders-so resumed"
    )


def test_what_a_restore_says_is_escaped_for_slack() -> None:
    line = wording.restored(False, get("drain").restored(Outcome(False, "group <!here> & co")))
    assert line == ":x: The interrupted drain's pause could not be undone: group &lt;!here&gt; &amp; co"
