"""The `/lag` handlers: each command's reply and the calls it makes, bad input, and Slack's limits at any size.

The deps are a small in-test class that answers with hand-made verdicts and records every call (no mocks);
silences live in the real MemorySilenceStore (the Redis one passes the same contract). Limits are checked
with the emulator's `block_errors`, written from Slack's published limits independently of the renderer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from lagbot.core.model import (
    Cause,
    GroupState,
    GroupSummary,
    GroupVerdict,
    Member,
    PartitionVerdict,
    Severity,
    Status,
    Trend,
)
from lagbot.devkit.block_kit import MAX_MESSAGE_BLOCKS, MAX_TEXT, block_errors
from lagbot.service.silences import MemorySilenceStore, SilenceStore
from lagbot.slack.command_parse import MAX_TOP, ShowGroup, Silence, Top
from lagbot.slack.commands import Reply, respond_safely
from lagbot.slack.subcommands import handle, parse, run_command

T0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
USER, CHANNEL = "U0ONCALL", "C0ALERTS"
HELP = "(`/lag help` lists every command)"


def partition(i: int, committed: int | None, log_end: int, *, topic: str = "orders", status: Status = Status.OK,
              owner: Member | None = None) -> PartitionVerdict:  # fmt: skip
    lag = None if committed is None else max(0, log_end - committed)
    return PartitionVerdict(
        topic=topic,
        partition=i,
        committed=committed,
        log_end=log_end,
        log_start=0,
        lag=lag,
        lag_seconds=None if lag is None else lag / 10,
        lag_seconds_lower_bound=False,
        status=status,
        reason="",
        produce_rate=None,
        consume_rate=None,
        owner=owner,
    )


def verdict(group: str, *, cluster: str = "prod", severity: Severity = Severity.OK, lag_seconds: float | None = None,
            lag: int | None = 0, partitions: Sequence[PartitionVerdict] = (), causes: Sequence[Cause] = (),
            status: Status = Status.OK) -> GroupVerdict:  # fmt: skip
    return GroupVerdict(
        cluster=cluster,
        group=group,
        state=GroupState.STABLE,
        status=status,
        severity=severity,
        severity_reason="under every threshold" if severity is Severity.OK else f"{severity.label}: lag over limit",
        partitions=tuple(partitions),
        total_lag=lag,
        max_lag_seconds=lag_seconds,
        produce_rate=None,
        consume_rate=None,
        eta_seconds=None,
        trend=Trend.STEADY,
        causes=tuple(causes),
    )


ORDERS = verdict(
    "orders-consumer",
    severity=Severity.CRITICAL,
    status=Status.STALL,
    lag=4_250,
    lag_seconds=425.0,
    partitions=[
        partition(0, 1_000, 1_000),
        partition(1, 750, 5_000, status=Status.STALL, owner=Member("m-2", "worker-2", "/10.0.0.2")),
        partition(2, None, 30),
    ],
    causes=[Cause("stuck_consumer", "partition 1 of orders: committed offset not moving", 0.9, rank=1)],
)


@dataclass
class Deps:
    """Answers from hand-made data and records every call, in order."""

    groups: dict[str, list[str]] = field(default_factory=lambda: {"prod": ["orders-consumer", "billing", "shared"],
                                                                  "staging": ["shared", "payments"]})  # fmt: skip
    verdicts: list[GroupVerdict] = field(default_factory=list)
    fresh: dict[tuple[str, str], GroupVerdict] = field(default_factory=lambda: {("prod", "orders-consumer"): ORDERS})
    silences: SilenceStore = field(default_factory=MemorySilenceStore)
    audit_reply: Reply | None = None
    remediate_reply: Reply | None = None
    check_raises: Exception | None = None
    digest_ready: bool = True
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def known_groups(self) -> Mapping[str, Sequence[str]]:
        self.calls.append(("known_groups",))
        return self.groups

    def latest_summaries(self) -> Sequence[GroupSummary]:
        self.calls.append(("latest_summaries",))
        return [GroupSummary.of(v) for v in self.verdicts]

    def check_group(self, cluster: str, group: str) -> GroupVerdict:
        self.calls.append(("check_group", cluster, group))
        if self.check_raises is not None:
            raise self.check_raises
        return self.fresh[(cluster, group)]

    def post_digest(self, channel: str) -> None:
        self.calls.append(("post_digest", channel))
        if not self.digest_ready:
            raise NotImplementedError

    def audit(self, cluster: str, group: str) -> Reply:
        self.calls.append(("audit", cluster, group))
        if self.audit_reply is None:
            raise NotImplementedError
        return self.audit_reply

    def remediate(self, cluster: str, group: str, action: str, user: str, *, args: Sequence[str]) -> Reply:
        self.calls.append(("remediate", cluster, group, action, user, tuple(args)))
        if self.remediate_reply is None:
            raise NotImplementedError
        return self.remediate_reply


def run(text: str, deps: Deps, now: float = T0) -> Reply:
    return run_command(text, deps, user=USER, channel=CHANNEL, now=now)


def assert_within_limits(reply: Reply) -> None:
    assert block_errors(reply.blocks, max_blocks=MAX_MESSAGE_BLOCKS) == []
    assert 0 < len(reply.text) <= MAX_TEXT


def table_cells(reply: Reply) -> list[list[str]]:
    [table] = [b for b in reply.blocks if b["type"] == "table"]
    return [[cell["text"] for cell in row] for row in table["rows"]]


def texts(reply: Reply) -> list[str]:
    found = []
    for block in reply.blocks:
        if block["type"] == "section":
            found.append(block["text"]["text"])
        elif block["type"] == "context":
            found.extend(e["text"] for e in block["elements"])
    return found


# ---------------------------------------------------------------------------------------------------
# /lag <group>
# ---------------------------------------------------------------------------------------------------


def test_show_group_runs_a_fresh_check_and_replies_with_headline_table_and_causes() -> None:
    deps = Deps()

    reply = run("orders-consumer", deps)

    assert deps.calls == [("known_groups",), ("check_group", "prod", "orders-consumer")]
    assert reply.public is False
    assert [b["type"] for b in reply.blocks] == ["section", "context", "section", "table", "divider", "section"]
    assert texts(reply) == [
        ":red_circle: *CRITICAL* `orders-consumer` on prod: *stalled*, lag *4,250* (7 min behind) → steady, "
        "ETA unknown",
        "state Stable · critical: lag over limit · worst: orders/1 lag 4,250 (STALL)",
        "*Partitions of* `orders-consumer` (3), lagging first",
        "*1. stuck_consumer* (90%): partition 1 of orders: committed offset not moving → _restart_",
    ]
    assert table_cells(reply) == [
        ["partition", "committed", "log-end", "lag", "lag s", "owner", "status"],
        ["orders/1", "750", "5000", "4250", "425.0", "worker-2@/10.0.0.2 (member m-2)", "STALL"],
        ["orders/0", "1000", "1000", "0", "0.0", "-", "OK"],
        ["orders/2", "-", "30", "-", "-", "-", "OK"],
    ]
    assert reply.text.startswith("CRITICAL `orders-consumer` on `prod`: stalled, lag 4,250\n```\npartition")
    assert reply.to_response() == {"response_type": "ephemeral", "text": reply.text, "blocks": reply.blocks}
    assert_within_limits(reply)


def test_show_group_here_is_posted_in_the_channel() -> None:
    reply = run("orders-consumer prod --here", Deps())

    assert reply.public is True
    assert reply.to_response()["response_type"] == "in_channel"


def test_show_a_silenced_group_says_so() -> None:
    deps = Deps()
    deps.silences.silence("prod", "orders-consumer", until=T0 + 7_200, reason="deploy", by="U0OTHER", now=T0 - 60)

    reply = run("orders-consumer", deps, now=T0)

    assert reply.blocks[2]["type"] == "context"
    assert reply.blocks[2]["elements"][0]["text"] == (
        ":no_bell: silenced by <@U0OTHER> until <!date^1700007200^{date_short_pretty} {time}|2023-11-15 00:13 UTC> "
        "(2 h left): deploy; no new incidents open"
    )
    assert_within_limits(reply)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("orders", "no consumer group `orders` on any cluster; closest: `orders-consumer`\n"
                   f"Usage: `/lag <group> [cluster] [--here]` {HELP}"),
        ("shared", "`shared` is a group on 2 clusters (`prod`, `staging`): name the cluster\n"
                   f"Usage: `/lag <group> [cluster] [--here]` {HELP}"),
        ("billing staging", "no consumer group `billing` on cluster `staging`; it is on `prod`\n"
                            f"Usage: `/lag <group> [cluster] [--here]` {HELP}"),
        ("billing prd", "no cluster named `prd` (clusters: `prod`, `staging`); did you mean `prod`?\n"
                        f"Usage: `/lag <group> [cluster] [--here]` {HELP}"),
        ("slience", "no consumer group `slience` on any cluster; nothing with a similar name "
                    f"(or did you mean `/lag silence`?)\nUsage: `/lag <group> [cluster] [--here]` {HELP}"),
        ("top 0", f"top shows 1 to 50 groups, not 0\nUsage: `/lag top [n] [--here]` {HELP}"),
    ],
    ids=["unknown-group", "ambiguous-group", "group-elsewhere", "unknown-cluster", "mistyped-command", "bad-top"],
)  # fmt: skip
def test_bad_input_is_an_ephemeral_usage_reply_and_checks_nothing(text: str, message: str) -> None:
    deps = Deps()

    reply = run(text, deps)

    assert reply.public is False
    assert reply.text == message
    assert texts(reply) == [message]
    assert not [c for c in deps.calls if c[0] == "check_group"]
    assert_within_limits(reply)


def test_nothing_known_yet() -> None:
    reply = run("orders-consumer", Deps(groups={}))

    assert reply.text == (
        "no consumer groups are known yet: the first scheduled check has not finished\n"
        f"Usage: `/lag <group> [cluster] [--here]` {HELP}"
    )


# ---------------------------------------------------------------------------------------------------
# /lag top
# ---------------------------------------------------------------------------------------------------


def top_verdicts() -> list[GroupVerdict]:
    return [
        verdict("calm", severity=Severity.OK, lag_seconds=1.0, lag=3),
        verdict("warned-late", severity=Severity.WARN, lag_seconds=900.0, lag=10),
        verdict("critical-slight", severity=Severity.CRITICAL, lag_seconds=30.0, lag=600_000),
        verdict("paged", cluster="staging", severity=Severity.PAGE, lag_seconds=5.0, lag=2_500_000),
        verdict("critical-far", severity=Severity.CRITICAL, lag_seconds=3_600.0, lag=500_001),
        verdict("warned-unknown", severity=Severity.WARN, lag_seconds=None, lag=None, status=Status.ERR),
    ]


def test_top_orders_by_severity_then_lag_seconds_and_marks_silences() -> None:
    # Within WARN, the group whose lag is unknown (unreadable) ranks before the one known to be 15 min behind.
    deps = Deps(verdicts=top_verdicts())
    deps.silences.silence("prod", "critical-far", until=T0 + 1_800, reason="", by=USER, now=T0 - 10)

    reply = run("top 5", deps)

    assert deps.calls == [("latest_summaries",)]
    assert reply.public is False
    assert texts(reply) == ["*Worst 5 of 6 group(s)* at the last scheduled check, by severity then lag in seconds"]
    assert table_cells(reply) == [
        ["group", "cluster", "severity", "status", "lag", "behind", "trend", "silenced"],
        ["paged", "staging", "PAGE", "OK", "2.5 M", "5 s", "steady", "-"],
        ["critical-far", "prod", "CRITICAL", "OK", "500,001", "60 min", "steady", "30 min left"],
        ["critical-slight", "prod", "CRITICAL", "OK", "600,000", "30 s", "steady", "-"],
        ["warned-unknown", "prod", "WARN", "ERR", "-", "-", "steady", "-"],
        ["warned-late", "prod", "WARN", "OK", "10", "15 min", "steady", "-"],
    ]
    assert reply.text.splitlines() == [
        "1. PAGE `paged` (`staging`): consuming, lag 2.5 M, 5 s behind",
        "2. CRITICAL `critical-far` (`prod`): consuming, lag 500,001, 60 min behind",
        "3. CRITICAL `critical-slight` (`prod`): consuming, lag 600,000, 30 s behind",
        "4. WARN `warned-unknown` (`prod`): unreadable, lag -, - behind",
        "5. WARN `warned-late` (`prod`): consuming, lag 10, 15 min behind",
    ]
    assert_within_limits(reply)


def test_top_defaults_to_ten_and_here_posts_in_the_channel() -> None:
    deps = Deps(verdicts=[verdict(f"g{i:02d}", lag_seconds=float(i)) for i in range(30)])

    reply = run("top --here", deps)

    assert reply.public is True
    assert [row[0] for row in table_cells(reply)[1:]] == [f"g{i:02d}" for i in range(29, 19, -1)]


def test_top_before_the_first_check() -> None:
    reply = run("top", Deps())

    assert reply.text == "No groups checked yet: the first scheduled check has not finished."
    assert [b["type"] for b in reply.blocks] == ["section"]


# ---------------------------------------------------------------------------------------------------
# /lag silence and /lag unsilence
# ---------------------------------------------------------------------------------------------------


def test_silence_stores_the_silence_and_confirms_it_in_the_channel() -> None:
    deps = Deps()

    reply = run("silence orders-consumer 2h deploy of v2.1, ping @me", deps)

    [stored] = deps.silences.all_active(T0)
    assert (stored.cluster, stored.group, stored.until, stored.reason, stored.by, stored.created_at) == (
        "prod", "orders-consumer", T0 + 7_200, "deploy of v2.1, ping @me", USER, T0,
    )  # fmt: skip
    assert reply.public is True
    assert reply.text == (
        ":no_bell: <@U0ONCALL> silenced `orders-consumer` on prod for 2 h, "
        "until <!date^1700007200^{date_short_pretty} {time}|2023-11-15 00:13 UTC>: "
        "no new incidents open for it until then. Reason: deploy of v2.1, ping @me"
    )
    assert_within_limits(reply)


def test_silence_on_a_named_cluster_without_a_reason() -> None:
    deps = Deps()

    reply = run("silence shared 45m --cluster staging", deps)

    assert deps.silences.active("staging", "shared", T0) is not None
    assert deps.silences.active("prod", "shared", T0) is None
    assert reply.text.endswith("no new incidents open for it until then. No reason given.")
    assert "for 45 min" in reply.text


def test_silence_of_an_unknown_group_stores_nothing() -> None:
    deps = Deps()

    reply = run("silence billng 2h", deps)

    assert reply.text == (
        "no consumer group `billng` on any cluster; closest: `billing`\n"
        f"Usage: `/lag silence <group> <duration> [--cluster NAME] [reason]` {HELP}"
    )
    assert reply.public is False
    assert deps.silences.all_active(T0) == []


def test_silence_with_a_bad_duration_stores_nothing() -> None:
    deps = Deps()

    reply = run("silence billing 10d", deps)

    assert reply.text == (
        "a silence lasts 60 s to 7 d; '10d' is 10 d\n"
        f"Usage: `/lag silence <group> <duration> [--cluster NAME] [reason]` {HELP}"
    )
    assert deps.silences.all_active(T0) == []
    assert deps.calls == []


def test_unsilence_lifts_the_silence() -> None:
    deps = Deps()
    run("silence billing 2h", deps)

    reply = run("unsilence billing", deps, now=T0 + 60)

    assert deps.silences.active("prod", "billing", T0 + 60) is None
    assert reply.public is True
    assert reply.text == ":bell: <@U0ONCALL> lifted the silence of `billing` on prod: incidents open again."


def test_unsilence_of_a_group_not_silenced() -> None:
    reply = run("unsilence billing", Deps())

    assert reply.public is False
    assert reply.text == "`billing` on prod is not silenced: nothing to lift."


def test_unsilence_of_a_silenced_group_that_has_since_vanished() -> None:
    deps = Deps()
    deps.silences.silence("prod", "gone-consumer", until=T0 + 600, reason="", by=USER, now=T0)

    reply = run("unsilence gone-consumer", deps)

    assert reply.text == ":bell: <@U0ONCALL> lifted the silence of `gone-consumer` on prod: incidents open again."
    assert deps.silences.all_active(T0) == []


# ---------------------------------------------------------------------------------------------------
# /lag digest, /lag help, /lag audit, /lag remediate
# ---------------------------------------------------------------------------------------------------


def test_digest_asks_the_app_to_post_it_in_this_channel() -> None:
    deps = Deps()

    reply = run("digest", deps)

    assert deps.calls == [("post_digest", CHANNEL)]
    assert reply.text == "Posting the digest in <#C0ALERTS>."
    assert reply.public is False


@pytest.mark.parametrize("text", ["help", "", "  HELP "])
def test_help_lists_every_subcommand_one_line_each(text: str) -> None:
    reply = run(text, Deps())

    assert reply.public is False
    assert reply.text.splitlines() == [
        "*`/lag` commands* (a group named like a command: `/lag show <group>`)",
        "`/lag <group> [cluster] [--here]`: a fresh check of one group: headline, per-partition table, likely causes "
        "(`--here` posts it in the channel)",
        "`/lag top [n] [--here]`: the worst groups of the last scheduled check, by severity then lag in seconds "
        "(10 by default, at most 50)",
        "`/lag silence <group> <duration> [--cluster NAME] [reason]`: no new incidents for the group until the "
        "silence expires (60 s to 7 d: 30m, 2h, 1d)",
        "`/lag unsilence <group> [--cluster NAME]`: lift a silence before it expires",
        "`/lag digest`: the digest now: in this channel where a digest is configured, else to you alone",
        "`/lag audit <group> [--cluster NAME]`: what was done to the group and by whom",
        "`/lag remediate <group> <action> [args] [--cluster NAME]`: propose a remediation for the group, "
        "for an approver to approve (approvers only)",
        "`/lag report [days] [--here]`: repeat offenders: per group, incidents, time in trouble, time to resolve, "
        "causes, what fixed it",
        "`/lag history <group> [days] [--cluster NAME] [--here]`: a group's days: peak lag, time in trouble, "
        "incidents, and its recurring patterns",
        "`/lag thresholds <group> [days] [--cluster NAME]`: thresholds proposed from the group's own history, "
        "backtested (approvers only; changes nothing)",
        "`/lag help`: this list",
    ]
    assert_within_limits(reply)


def test_digest_before_it_exists_is_not_available_yet() -> None:
    deps = Deps(digest_ready=False)

    reply = run("digest", deps)

    assert deps.calls == [("post_digest", CHANNEL)]
    assert reply.text == "`/lag digest` is not available yet in this lagbot."


def test_audit_and_remediate_before_they_exist_are_not_available_yet() -> None:
    deps = Deps()

    audit = run("audit billing", deps)
    remediate = run("remediate billing scale 4", deps)

    assert audit.text == "`/lag audit` is not available yet in this lagbot."
    assert remediate.text == "`/lag remediate` is not available yet in this lagbot."
    assert deps.calls == [
        ("known_groups",),
        ("audit", "prod", "billing"),
        ("known_groups",),
        ("remediate", "prod", "billing", "scale", USER, ("4",)),
    ]


def test_audit_and_remediate_replies_come_from_the_caller() -> None:
    deps = Deps(audit_reply=Reply("audit of billing"), remediate_reply=Reply("plan: restart", public=True))

    assert run("audit billing", deps) == Reply("audit of billing")
    assert run("remediate shared restart --cluster staging", deps) == Reply("plan: restart", public=True)
    assert deps.calls[-1] == ("remediate", "staging", "shared", "restart", USER, ())


def test_audit_of_an_unknown_group_never_reaches_the_caller() -> None:
    deps = Deps(audit_reply=Reply("audit"))

    reply = run("audit nobody", deps)

    assert reply.text.startswith("no consumer group `nobody` on any cluster")
    assert reply.text.endswith(f"Usage: `/lag audit <group> [--cluster NAME]` {HELP}")
    assert deps.calls == [("known_groups",)]


# ---------------------------------------------------------------------------------------------------
# Never a stack trace
# ---------------------------------------------------------------------------------------------------


def test_an_unexpected_error_is_a_short_reply_and_a_logged_traceback(caplog: pytest.LogCaptureFixture) -> None:
    deps = Deps(check_raises=RuntimeError("secret://password@host is down"))

    with caplog.at_level(logging.ERROR, logger="lagbot.slack.commands"):
        reply = run("orders-consumer", deps)

    [record] = caplog.records
    error_id = record.__dict__["error_id"]
    assert reply.text == f"Something went wrong with this command; it is logged as `{error_id}`."
    assert reply.public is False
    assert "secret" not in str(reply.to_response()) and "Traceback" not in str(reply.to_response())
    assert record.getMessage() == "slash command failed"
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
    assert (record.__dict__["command_text"], record.__dict__["user"], record.__dict__["channel"]) == (
        "orders-consumer", USER, CHANNEL,
    )  # fmt: skip
    assert len(error_id) == 12
    assert_within_limits(reply)


def test_respond_safely_passes_replies_through_and_turns_command_errors_into_usage() -> None:
    assert respond_safely(lambda: Reply("fine")) == Reply("fine")
    reply = respond_safely(lambda: handle(parse("silence"), Deps(), user=USER, channel=CHANNEL, now=T0))
    assert reply.text.startswith("missing <group>\nUsage: `/lag silence")


def test_each_error_gets_its_own_id(caplog: pytest.LogCaptureFixture) -> None:
    deps = Deps(check_raises=KeyError("x"))
    with caplog.at_level(logging.ERROR, logger="lagbot.slack.commands"):
        first, second = run("orders-consumer", deps), run("orders-consumer", deps)
    assert first.text != second.text
    assert [r.__dict__["error_id"] in first.text + second.text for r in caplog.records] == [True, True]


# ---------------------------------------------------------------------------------------------------
# Slack's limits for any number of groups, partitions and causes
# ---------------------------------------------------------------------------------------------------

SIZES = [0, 1, 5_000]


def big_verdict(n: int, *, name: str = "orders-consumer") -> GroupVerdict:
    return verdict(
        name,
        severity=Severity.PAGE,
        lag=n * 1_000,
        lag_seconds=60.0,
        partitions=[partition(i, 0, 1_000 + i, topic="t" * 249) for i in range(n)],
        causes=[Cause("stuck_consumer", "because " + "x" * 4_000, 0.5, rank=i + 1) for i in range(n)],
    )


@pytest.mark.parametrize("n", SIZES)
def test_show_group_stays_within_limits(n: int) -> None:
    deps = Deps(fresh={("prod", "orders-consumer"): big_verdict(n)})
    deps.silences.silence("prod", "orders-consumer", until=T0 + 60, reason="r" * 300, by=USER, now=T0)

    reply = run("orders-consumer --here", deps)

    assert_within_limits(reply)
    assert len(table_cells(reply)) == min(n, 99) + 1


@pytest.mark.parametrize("n", SIZES)
def test_top_stays_within_limits(n: int) -> None:
    deps = Deps(verdicts=[verdict(f"group-{i}-" + "g" * 1_000, lag_seconds=float(i)) for i in range(n)])
    for i in range(n):
        deps.silences.silence("prod", f"group-{i}-" + "g" * 1_000, until=T0 + 60, reason="", by=USER, now=T0)

    reply = run(f"top {MAX_TOP}", deps)

    assert_within_limits(reply)
    if n:
        assert len(table_cells(reply)) == min(n, MAX_TOP) + 1


@pytest.mark.parametrize("n", SIZES)
def test_error_replies_stay_within_limits(n: int) -> None:
    names = [f"orders-{i}-" + "o" * 2_000 for i in range(n)]
    deps = Deps(groups={"prod": names, "staging": names})

    for text in ["orders-" + "o" * 2_000, "orders-0-" + "o" * 2_000, "x --cluster " + "c" * 3_000, "top 999"]:
        reply = run(text, deps)
        assert reply.public is False
        assert_within_limits(reply)


def test_long_names_and_reasons_stay_within_limits() -> None:
    group = "g" * 3_000
    deps = Deps(groups={"prod": [group]}, fresh={("prod", group): big_verdict(3, name=group)})

    for text in [group, f"silence {group} 1h " + "r" * 300, f"unsilence {group}", f"audit {group}"]:
        assert_within_limits(run(text, deps))


def test_commands_are_frozen_values() -> None:
    assert parse("top 3") == Top(3)
    assert hash(ShowGroup("a")) == hash(ShowGroup("a"))
    with pytest.raises(AttributeError):
        Silence("a", 60.0).group = "b"  # type: ignore[misc]
