"""The `/lag` subcommands are a registry (lagbot.slack.subcommands): every command has one entry naming its grammar,
parser, handler and permission, and a subcommand added the way docs/development.md says ("A slash command") is
parsed, handled, listed by `/lag help` and guarded by its permission with nothing else changed."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator

import pytest
import redis
from slack_sdk import WebClient

from lagbot.core.config import CommandLimits
from lagbot.policies.approvers import ApproverDirectory, MemoryUsergroupCache
from lagbot.policies.model import Policy
from lagbot.service.audit import AuditLog
from lagbot.service.silences import MemorySilenceStore
from lagbot.slack import subcommands
from lagbot.slack.command_parse import Command, CommandError, NamesGroup, Token, parse_unsilence
from lagbot.slack.commands import CommandDeps, Reply, text_reply
from lagbot.slack.guard import CommandGuard
from lagbot.slack.subcommands import SUBCOMMANDS, Caller, Permission, Subcommand, parse, run_command

APPROVER, STRANGER, CHANNEL, NOW = "U0APPROVE1", "U0STRANGE1", "C0LAGBOT01", 1_800_000_000.0


def test_every_command_has_exactly_one_entry_and_every_entry_is_complete() -> None:
    kinds = [s.kind for s in SUBCOMMANDS.values()]
    assert sorted(k.__name__ for k in kinds) == sorted(k.__name__ for k in typing.get_args(Command))
    assert len(set(kinds)) == len(kinds)
    for name, s in SUBCOMMANDS.items():
        assert s.name == name and s.usage().startswith("/lag") and s.summary()
        if s.permission is not Permission.ANYONE:  # the guard asks the rule of the group it names
            assert {"group", "cluster"} <= {f.name for f in dataclasses.fields(s.kind)}, name
    assert {n: s.permission for n, s in SUBCOMMANDS.items() if s.permission is not Permission.ANYONE} == {
        "silence": Permission.SILENCERS,
        "unsilence": Permission.SILENCERS,
        "remediate": Permission.APPROVERS,
        "thresholds": Permission.APPROVERS,
    }


@dataclasses.dataclass(frozen=True, slots=True)
class Pause:
    """A throwaway command: `/lag pause <group> [--cluster NAME]`."""

    group: str
    cluster: str | None = None


def parse_pause(tokens: list[Token], text: str) -> Pause:
    named = parse_unsilence(tokens, text)  # the same arguments: one group and --cluster
    return Pause(named.group, named.cluster)


def handle_pause(command: Pause, deps: CommandDeps, caller: Caller) -> Reply:
    if command.group not in deps.known_groups().get(command.cluster or "prod", ()):
        raise CommandError(f"no group {command.group}")
    return text_reply(f"{caller.user} paused {command.group} at {caller.now:.0f}", public=True)


PAUSE = Subcommand(
    "pause", Pause, lambda: "/lag pause <group>", lambda: "pause a group", parse_pause, handle_pause,
    Permission.APPROVERS,
)  # fmt: skip


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """PAUSE added as docs/development.md says: one registry entry (the `Command` union is for type checking)."""
    monkeypatch.setattr(subcommands, "_ENTRIES", (*subcommands._ENTRIES, PAUSE))
    monkeypatch.setitem(subcommands.SUBCOMMANDS, "pause", PAUSE)
    monkeypatch.setitem(subcommands._BY_KIND, Pause, PAUSE)
    yield


class Deps:
    """The part of CommandDeps the throwaway command and the guard use."""

    silences = MemorySilenceStore()

    def known_groups(self) -> dict[str, list[str]]:
        return {"prod": ["orders"]}


def test_a_registered_subcommand_is_parsed_handled_and_listed_by_help(registered: None) -> None:
    deps = typing.cast(CommandDeps, Deps())
    assert parse("pause orders") == Pause("orders")
    assert parse("PAUSE `orders` --cluster prod") == Pause("orders", "prod")
    answer = run_command("pause orders", deps, user=APPROVER, channel=CHANNEL, now=NOW)
    assert (answer.text, answer.public) == (f"{APPROVER} paused orders at {NOW:.0f}", True)
    wrong = run_command("pause", deps, user=APPROVER, channel=CHANNEL, now=NOW)
    assert wrong.text == "missing <group>\nUsage: `/lag pause <group>` (`/lag help` lists every command)"
    unknown = run_command("pause nosuch", deps, user=APPROVER, channel=CHANNEL, now=NOW)
    assert unknown.text == "no group nosuch\nUsage: `/lag pause <group>` (`/lag help` lists every command)"
    helped = run_command("help", deps, user=APPROVER, channel=CHANNEL, now=NOW)
    assert helped.text.splitlines()[-1] == "`/lag pause <group>`: pause a group"
    assert isinstance(Pause("orders"), NamesGroup)


@pytest.mark.integration
def test_the_guard_asks_a_registered_subcommand_s_permission(registered: None, redis_client: redis.Redis) -> None:
    policy = Policy.model_validate({"default": {"approvers": {"users": [APPROVER]}}})
    guard = CommandGuard(
        client=redis_client,
        policy=policy,
        directory=ApproverDirectory(WebClient(token="unused"), cache=MemoryUsergroupCache()),
        audit=AuditLog(redis_client),
        limits=CommandLimits(),
        digest_channels=(),
    )
    deps = typing.cast(CommandDeps, Deps())

    refused = guard.run("pause orders", deps, user=STRANGER, channel=CHANNEL, now=NOW)
    assert "pause" in refused.text and "default" in refused.text and "paused" not in refused.text
    [entry] = AuditLog(redis_client).latest("prod", "orders", 5)
    assert (entry.event, entry.user, entry.action) == ("refused", STRANGER, "pause")
    allowed = guard.run("pause orders", deps, user=APPROVER, channel=CHANNEL, now=NOW)
    assert allowed.text == f"{APPROVER} paused orders at {NOW:.0f}"
