"""The correctness proof of the `/lag` parser: numbered cases, each with what it tests and the exact outcome.

Good inputs give the exact command; bad inputs give the exact message the user sees (the problem, then
the usage line of the command they meant). Add a case with every bug fixed. Resolution of names against
the known groups (`resolve_group`) has its own table below.
"""

from __future__ import annotations

import pytest

from lagbot.slack.command_parse import (
    Audit,
    Command,
    CommandError,
    Digest,
    Help,
    Remediate,
    ShowGroup,
    Silence,
    Top,
    Unsilence,
    resolve_group,
)
from lagbot.slack.subcommands import parse

HELP = "(`/lag help` lists every command)"
SHOW = f"Usage: `/lag <group> [cluster] [--here]` {HELP}"
TOP = f"Usage: `/lag top [n] [--here]` {HELP}"
SILENCE = f"Usage: `/lag silence <group> <duration> [--cluster NAME] [reason]` {HELP}"
UNSILENCE = f"Usage: `/lag unsilence <group> [--cluster NAME]` {HELP}"
DIGEST = f"Usage: `/lag digest` {HELP}"
HELP_USAGE = f"Usage: `/lag help` {HELP}"
AUDIT = f"Usage: `/lag audit <group> [--cluster NAME]` {HELP}"
REMEDIATE = f"Usage: `/lag remediate <group> <action> [args] [--cluster NAME]` {HELP}"

GOOD: list[tuple[int, str, str, Command]] = [
    # (case, what it tests, text as Slack sends it, expected command)
    (1, "empty text is help", "", Help()),
    (2, "blank text is help", "   ", Help()),
    (3, "help", "help", Help()),
    (4, "a bare group: ephemeral, any cluster", "orders-consumer", ShowGroup("orders-consumer")),
    (5, "group and cluster", "orders-consumer prod", ShowGroup("orders-consumer", "prod")),
    (6, "--here posts in the channel", "orders-consumer prod --here", ShowGroup("orders-consumer", "prod", True)),
    (7, "--here may come first", "--here orders-consumer", ShowGroup("orders-consumer", None, True)),
    (8, "--cluster is the same as the positional cluster", "orders --cluster prod", ShowGroup("orders", "prod")),
    (9, "--cluster=NAME form", "orders --cluster=prod", ShowGroup("orders", "prod")),
    (10, "same cluster twice is not a conflict", "orders prod --cluster prod", ShowGroup("orders", "prod")),
    (11, "show: a group named like a command", "show top", ShowGroup("top")),
    (12, "show with cluster and --here", "show help staging --here", ShowGroup("help", "staging", True)),
    (13, "subcommands are case-insensitive", "TOP", Top()),
    (14, "group names keep their case", "Orders-Consumer", ShowGroup("Orders-Consumer")),
    (15, "top defaults to 10", "top", Top(10)),
    (16, "top n", "top 5", Top(5)),
    (17, "top lower bound", "top 1", Top(1)),
    (18, "top upper bound", "top 50", Top(50)),
    (19, "top --here", "top 3 --here", Top(3, public=True)),
    (20, "silence with a reason, kept word for word", "silence orders 2h deploy  of v2.1",
     Silence("orders", 7200.0, "deploy  of v2.1")),
    (21, "silence without a reason", "silence orders 30m", Silence("orders", 1800.0, "")),
    (22, "silence duration lower bound (1 min)", "silence orders 1m", Silence("orders", 60.0)),
    (23, "silence duration upper bound (7 d = 1 w)", "silence orders 1w", Silence("orders", 604800.0)),
    (24, "plain seconds, as parse_duration reads them", "silence orders 90", Silence("orders", 90.0)),
    (25, "fractional duration", "silence orders 1.5h", Silence("orders", 5400.0)),
    (26, "--cluster before the reason", "silence orders 2h --cluster prod db migration",
     Silence("orders", 7200.0, "db migration", "prod")),
    (27, "--cluster before the duration", "silence orders --cluster=prod 2h", Silence("orders", 7200.0, "", "prod")),
    (28, "options after the reason starts are reason text", "silence orders 2h see --cluster prod",
     Silence("orders", 7200.0, "see --cluster prod")),
    (29, "unsilence", "unsilence orders", Unsilence("orders")),
    (30, "unsilence on a cluster", "unsilence orders --cluster prod", Unsilence("orders", "prod")),
    (31, "digest", "digest", Digest()),
    (32, "audit (handled by the caller)", "audit orders", Audit("orders")),
    (33, "audit on a cluster", "audit orders --cluster prod", Audit("orders", "prod")),
    (34, "remediate (handled by the caller)", "remediate orders restart", Remediate("orders", "restart")),
    (35, "remediate with action arguments and a cluster", "remediate orders scale 4 --cluster=prod",
     Remediate("orders", "scale", ("4",), "prod")),
    (36, "Slack's escaping is undone (&lt; &gt; &amp;)", "a&amp;b&lt;c&gt;", ShowGroup("a&b<c>")),
    (37, "an auto-linked name is read back as typed", "<http://svc.orders|svc.orders> prod",
     ShowGroup("svc.orders", "prod")),
    (38, "backticks of a copied code span are dropped", "`orders-consumer` `prod`",
     ShowGroup("orders-consumer", "prod")),
    (39, "names with colons and unicode", "team:ünïcode", ShowGroup("team:ünïcode")),
    (40, "leading and trailing spaces, tabs", "\t silence  orders \t 10m  why \t", Silence("orders", 600.0, "why")),
    (41, "a reason of exactly 300 characters", "silence orders 1h " + "r" * 300, Silence("orders", 3600.0, "r" * 300)),
]  # fmt: skip

BAD: list[tuple[int, str, str, str]] = [
    # (case, what it tests, text, exact message)
    (101, "top 0 is below the bound", "top 0", f"top shows 1 to 50 groups, not 0\n{TOP}"),
    (102, "top 51 is above the bound", "top 51", f"top shows 1 to 50 groups, not 51\n{TOP}"),
    (103, "top of a word", "top many", f"'many' is not a number of groups\n{TOP}"),
    (104, "top of a negative number", "top -3", f"'-3' is not a number of groups\n{TOP}"),
    (105, "top of a fraction", "top 2.5", f"'2.5' is not a number of groups\n{TOP}"),
    (106, "top with two numbers", "top 5 6", f"unexpected '6'\n{TOP}"),
    (107, "silence without a group", "silence", f"missing <group>\n{SILENCE}"),
    (108, "silence without a duration", "silence orders", f"missing <duration>\n{SILENCE}"),
    (109, "silence with a word for a duration", "silence orders soon",
     f"'soon' is not a duration: use seconds (90) or a number with a unit (90s, 5m, 2h, 1d)\n{SILENCE}"),
    (110, "silence with a negative duration", "silence orders -2h",
     f"'-2h' is not a duration: use seconds (90) or a number with a unit (90s, 5m, 2h, 1d)\n{SILENCE}"),
    (111, "silence shorter than 1 min", "silence orders 30s", f"a silence lasts 60 s to 7 d; '30s' is 30 s\n{SILENCE}"),
    (112, "silence of 59 plain seconds", "silence orders 59", f"a silence lasts 60 s to 7 d; '59' is 59 s\n{SILENCE}"),
    (113, "silence longer than 7 d", "silence orders 8d", f"a silence lasts 60 s to 7 d; '8d' is 8 d\n{SILENCE}"),
    (114, "silence of zero", "silence orders 0m", f"a silence lasts 60 s to 7 d; '0m' is 0 s\n{SILENCE}"),
    (115, "a reason over 300 characters", "silence orders 1h " + "r" * 301,
     f"the reason is 301 characters; at most 300\n{SILENCE}"),
    (116, "--cluster without a value at the end", "silence orders 2h --cluster",
     f"--cluster needs a value, e.g. --cluster prod\n{SILENCE}"),
    (117, "--cluster followed by another option", "orders --cluster --here",
     f"--cluster needs a value, e.g. --cluster prod\n{SHOW}"),
    (118, "--cluster= with nothing", "unsilence orders --cluster=",
     f"--cluster needs a value, e.g. --cluster prod\n{UNSILENCE}"),
    (119, "unsilence without a group", "unsilence", f"missing <group>\n{UNSILENCE}"),
    (120, "unsilence of two groups", "unsilence orders billing", f"unexpected 'billing'\n{UNSILENCE}"),
    (121, "digest takes no arguments", "digest now", f"unexpected 'now'\n{DIGEST}"),
    (122, "help takes no arguments", "help silence", f"unexpected 'silence'\n{HELP_USAGE}"),
    (123, "show without a group", "show", f"missing <group>\n{SHOW}"),
    (124, "a third word after group and cluster", "orders prod extra", f"unexpected 'extra'\n{SHOW}"),
    (125, "a mistyped subcommand is hinted", "slience orders 2h",
     f"unexpected '2h' (or did you mean `/lag silence`?)\n{SHOW}"),
    (126, "an unknown option names the ones that exist", "orders --public",
     f"unknown option '--public'; options here: --cluster, --here\n{SHOW}"),
    (127, "an option where there are none", "digest --here",
     f"unknown option '--here'; this command takes no options\n{DIGEST}"),
    (128, "a flag with a value", "orders --here=yes", f"--here takes no value\n{SHOW}"),
    (129, "a flag twice", "top --here --here", f"--here is given twice\n{TOP}"),
    (130, "two different clusters", "orders prod --cluster staging",
     f"two clusters given: 'prod' and --cluster 'staging'\n{SHOW}"),
    (131, "audit without a group", "audit", f"missing <group>\n{AUDIT}"),
    (132, "remediate without an action", "remediate orders", f"missing <action>\n{REMEDIATE}"),
    (133, "remediate without anything", "remediate", f"missing <group>\n{REMEDIATE}"),
    (134, "user text in a message is escaped for Slack", "top <!channel>",
     f"'&lt;!channel&gt;' is not a number of groups\n{TOP}"),
    (135, "--cluster is not an option of top", "top --cluster prod",
     f"unknown option '--cluster'; options here: --here\n{TOP}"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "what", "text", "expected"), GOOD, ids=[f"{c[0]}-{c[1]}" for c in GOOD])
def test_parse_good(case: int, what: str, text: str, expected: Command) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(("case", "what", "text", "message"), BAD, ids=[f"{c[0]}-{c[1]}" for c in BAD])
def test_parse_bad(case: int, what: str, text: str, message: str) -> None:
    with pytest.raises(CommandError) as caught:
        parse(text)
    assert str(caught.value) == message
    assert caught.value.message == message


def test_case_numbers_are_unique() -> None:
    numbers = [c[0] for c in GOOD] + [c[0] for c in BAD]
    assert len(numbers) == len(set(numbers))


# ---------------------------------------------------------------------------------------------------
# Resolution of names against the groups that exist
# ---------------------------------------------------------------------------------------------------

KNOWN = {
    "prod": ["orders-consumer", "orders-audit", "billing", "shared"],
    "staging": ["orders-consumer-v2", "shared", "payments"],
    "empty": [],
}

RESOLVED: list[tuple[int, str, str, str | None, tuple[str, str]]] = [
    (201, "a group on one cluster", "billing", None, ("prod", "billing")),
    (202, "a group on the cluster named", "shared", "staging", ("staging", "shared")),
    (203, "the other cluster of a shared group", "shared", "prod", ("prod", "shared")),
]

UNRESOLVED: list[tuple[int, str, str, str | None, str]] = [
    (211, "an unknown group: the closest names, similar first, then containing it", "orders", None,
     "no consumer group `orders` on any cluster; closest: `orders-audit`, `orders-consumer`, `orders-consumer-v2`"),
    (212, "a typo", "biling", None, "no consumer group `biling` on any cluster; closest: `billing`"),
    (213, "nothing close", "zzz", None, "no consumer group `zzz` on any cluster; nothing with a similar name"),
    (214, "a group on several clusters without a cluster", "shared", None,
     "`shared` is a group on 2 clusters (`prod`, `staging`): name the cluster"),
    (215, "a group that is on another cluster", "payments", "prod",
     "no consumer group `payments` on cluster `prod`; it is on `staging`"),
    (216, "a group on another cluster than the one named", "orders-consumer", "staging",
     "no consumer group `orders-consumer` on cluster `staging`; it is on `prod`"),
    (221, "an unknown group on the cluster named: closest on that cluster only", "orders-consumer-v3", "staging",
     "no consumer group `orders-consumer-v3` on cluster `staging`; closest: `orders-consumer-v2`"),
    (217, "an unknown cluster", "billing", "prd",
     "no cluster named `prd` (clusters: `empty`, `prod`, `staging`); did you mean `prod`?"),
    (218, "an unknown cluster, nothing close", "billing", "qa",
     "no cluster named `qa` (clusters: `empty`, `prod`, `staging`)"),
    (219, "a cluster with no groups", "billing", "empty",
     "no consumer group `billing` on cluster `empty`; it is on `prod`"),
    (220, "names are escaped for Slack", "<!here>", None,
     "no consumer group `&lt;!here&gt;` on any cluster; nothing with a similar name"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "what", "group", "cluster", "expected"), RESOLVED, ids=[str(c[0]) for c in RESOLVED])
def test_resolve_good(case: int, what: str, group: str, cluster: str | None, expected: tuple[str, str]) -> None:
    assert resolve_group(group, cluster, KNOWN) == expected


@pytest.mark.parametrize(
    ("case", "what", "group", "cluster", "problem"), UNRESOLVED, ids=[str(c[0]) for c in UNRESOLVED]
)
def test_resolve_bad(case: int, what: str, group: str, cluster: str | None, problem: str) -> None:
    with pytest.raises(CommandError) as caught:
        resolve_group(group, cluster, KNOWN)
    assert caught.value.problem == problem
    assert caught.value.usage is None  # the handler adds the usage of the command that asked


@pytest.mark.parametrize("known", [{}, {"prod": []}, {"prod": [], "staging": []}])
def test_resolve_before_any_group_is_known(known: dict[str, list[str]]) -> None:
    with pytest.raises(CommandError) as caught:
        resolve_group("orders", None, known)
    assert caught.value.problem == "no consumer groups are known yet: the first scheduled check has not finished"


def test_resolve_among_5000_groups_lists_at_most_five() -> None:
    known = {"prod": [f"orders-{i}" for i in range(5_000)]}
    with pytest.raises(CommandError) as caught:
        resolve_group("orders", None, known)
    assert caught.value.problem.count("`orders-") == 5
