"""The JSON report and the terminal table, from hand-made windows with owners.

Hand-made so that every rendering case is exact and cheap: owner columns (CONSUMER-ID, HOST, CLIENT-ID and
the JSON `owner`) from snapshots shaped as Apache Kafka describes groups, errors, groups without members.
The same columns read from live groups on Apache Kafka are asserted by the integration tests.
"""

from __future__ import annotations

import io
import json

from rich.console import Console

from lagbot.cli.terminal import COLUMNS, print_report
from lagbot.core.config import Evaluation, Thresholds
from lagbot.core.model import GroupSample, GroupSnapshot, GroupState, GroupVerdict, GroupWindow, Member, PartitionSample
from lagbot.engine.check import CheckReport
from lagbot.engine.diagnose import diagnose
from lagbot.engine.evaluate import error_verdict, evaluate_group
from lagbot.engine.report import report_json
from lagbot.service.remedies import remedy

T0 = 1_700_000_000.0
W1 = Member("consumer-1-7f3a", "orders-worker-1", "/10.0.0.11", (("orders", 0),))
W2 = Member("consumer-2-91bc", "orders-worker-2", "/10.0.0.12", (("orders", 1),))


def stuck_group() -> GroupVerdict:
    """orders-0 drains with worker-1; orders-1 is stuck on worker-2; orders-2 has never been committed."""
    times = [T0 + 10 * i for i in range(4)]
    p0 = tuple(PartitionSample(t, 100 + 10 * i, 140 + 10 * i, 0) for i, t in enumerate(times))
    p1 = tuple(PartitionSample(t, 50, 500 + 100 * i, 0) for i, t in enumerate(times))
    p2 = tuple(PartitionSample(t, None, 30, 0) for t in times)
    window = GroupWindow(
        cluster="prod",
        group="orders-consumer",
        samples=tuple(GroupSample(t, GroupState.STABLE, (W1.member_id, W2.member_id)) for t in times),
        partitions={("orders", 0): p0, ("orders", 1): p1, ("orders", 2): p2},
        latest=GroupSnapshot(
            "orders-consumer", GroupState.STABLE, (W1, W2), {("orders", 0): 130, ("orders", 1): 50, ("orders", 2): None}
        ),
    )
    now = times[-1]
    verdict = evaluate_group(window, thresholds=Thresholds(), rules=Evaluation(), now=now)
    from dataclasses import replace

    return replace(verdict, causes=diagnose(verdict, window, Evaluation()))


def report() -> CheckReport:
    down = error_verdict("prod", "billing", GroupState.UNKNOWN, "group 'billing': describing the group failed")
    return CheckReport(taken_at=T0, verdicts=[stuck_group(), down], clusters=["prod"])


def test_json_has_the_contract_fields_with_owners_and_unknowns() -> None:
    document = json.loads(json.dumps(report_json(report(), remedy=remedy)))

    assert document["version"] == 1
    assert document["clusters"] == [{"cluster": "prod", "ok": True, "error": None}]
    orders, billing = document["groups"]
    assert (orders["cluster"], orders["group"], orders["state"], orders["status"]) == (
        "prod",
        "orders-consumer",
        "Stable",
        "STALL",
    )
    assert orders["members"] == [
        {"member_id": "consumer-1-7f3a", "client_id": "orders-worker-1", "host": "/10.0.0.11"},
        {"member_id": "consumer-2-91bc", "client_id": "orders-worker-2", "host": "/10.0.0.12"},
    ]
    rows = {p["partition"]: p for p in orders["partitions"]}
    assert rows[0]["owner"] == {"member_id": "consumer-1-7f3a", "client_id": "orders-worker-1", "host": "/10.0.0.11"}
    assert rows[1]["owner"]["client_id"] == "orders-worker-2"
    # Nobody is assigned partition 2: no owner, and no commit: lag unknown (null), never a number.
    assert (rows[2]["owner"], rows[2]["committed"], rows[2]["lag"], rows[2]["lag_seconds"]) == (None, None, None, None)
    assert [(r["committed"], r["log_end"], r["lag"], r["status"]) for r in orders["partitions"][:2]] == [
        (130, 170, 40, "OK"),
        (50, 800, 750, "STALL"),
    ]
    assert orders["total_lag"] == 790
    stuck = next(c for c in orders["causes"] if c["kind"] == "stuck_consumer")
    assert stuck["remediation"] == "restart"
    assert "orders-worker-2@/10.0.0.12" in stuck["explanation"]
    assert stuck["evidence"]["owners"] == [
        {"member_id": "consumer-2-91bc", "client_id": "orders-worker-2", "host": "/10.0.0.12"}
    ]
    assert set(stuck) == {"kind", "explanation", "remediation", "rank", "confidence", "evidence"}
    assert (billing["status"], billing["error"], billing["partitions"]) == (
        "ERR",
        "group 'billing': describing the group failed",
        [],
    )


def test_terminal_table_shows_owner_columns_and_dashes_for_unknowns() -> None:
    out = io.StringIO()
    print_report(report(), Console(file=out, width=300, no_color=True))
    lines = out.getvalue().splitlines()

    header = next(line for line in lines if line.startswith("GROUP"))
    assert header.split() == list(COLUMNS)
    rows = [line.split() for line in lines if line.split()[:2] == ["orders-consumer", "orders"]]
    owner1 = ["consumer-1-7f3a", "/10.0.0.11", "orders-worker-1"]
    owner2 = ["consumer-2-91bc", "/10.0.0.12", "orders-worker-2"]
    assert rows == [
        # committed 130 is below the window's oldest log end (140): written before the window, so ">30".
        ["orders-consumer", "orders", "0", "130", "170", "40", *owner1, "OK", ">30"],
        ["orders-consumer", "orders", "1", "50", "800", "750", *owner2, "STALL", ">30"],
        ["orders-consumer", "orders", "2", "-", "30", "-", "-", "-", "-", "OK", "-"],
    ]
    causes = [line.strip() for line in lines if line.strip()[:2] in ("1.", "2.", "3.")]
    assert causes[0].startswith("1. [stuck_consumer]")
    assert any("group 'billing': describing the group failed" in line for line in lines)


def test_terminal_prints_cluster_errors_first() -> None:
    out = io.StringIO()
    failed = CheckReport(taken_at=T0, verdicts=[], cluster_errors={"prod": "no answer"}, clusters=["prod"])
    print_report(failed, Console(file=out, width=200, no_color=True))
    assert out.getvalue().splitlines()[0] == "cluster prod: UNREACHABLE (no answer)"
