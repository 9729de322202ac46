"""A remediation package names the causes it answers (its `answers` module: lagbot.remediations.packages); the service
joins causes to remediations in one place (lagbot.service.remedies), and the engine names no action: a cause carries
the facts that decide its remedy (`Fact`).

Each row is a branch of lagbot.engine.diagnose and lagbot.engine.burst, with the remedy the engine named for it before
it stopped naming actions; the engine's own tests check that each branch sets those facts (`remedy(cause)`).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from lagbot.core.model import Cause, CauseKind, Fact
from lagbot.remediations import packages, registry
from lagbot.service.remedies import remedies, remedy
from tests.support.tree import ROOT

CHURN, POISON, SLOW = Fact.CHURN_EXPLAINS, Fact.POISON, Fact.SLOW_OWNER
ONGOING, SCALABLE, UNTRUSTED = Fact.ONGOING, Fact.SCALABLE, Fact.RATES_UNTRUSTED


def cause(kind: CauseKind, *facts: Fact, rank: int = 1) -> Cause:
    return Cause(kind.value, "", 0.5, rank=rank, facts=frozenset(facts))


# (the cause, the remediation that answers it): one row per branch of the engine.
BRANCHES = [
    (cause(CauseKind.DATA_LOSS), "reset_offsets"),
    (cause(CauseKind.DATA_LOSS, CHURN), "reset_offsets"),
    (cause(CauseKind.RETENTION_RISK), "drain"),
    (cause(CauseKind.STUCK_CONSUMER), "restart"),
    # a record holds it (causes.poison_record), or a churn with a mechanism explains it: no restart
    (cause(CauseKind.STUCK_CONSUMER, POISON), None),
    (cause(CauseKind.STUCK_CONSUMER, CHURN), None),
    (cause(CauseKind.NO_ACTIVE_MEMBERS), "scale"),
    (cause(CauseKind.NO_ACTIVE_MEMBERS, CHURN), None),
    (cause(CauseKind.UNASSIGNED_PARTITIONS), "restart"),
    (cause(CauseKind.UNASSIGNED_PARTITIONS, CHURN), "restart"),
    (cause(CauseKind.HOT_PARTITION, SLOW), "restart"),
    (cause(CauseKind.HOT_PARTITION), "drain"),  # key skew, or no reason known
    (cause(CauseKind.HOT_PARTITION, SLOW, CHURN), "restart"),
    (cause(CauseKind.HOT_PARTITION, SLOW, POISON), None),  # the poisoned partition (explaining.poison_explains_hot)
    (cause(CauseKind.HOT_PARTITION, POISON), None),
    (cause(CauseKind.THROUGHPUT_DEFICIT), "scale"),
    (cause(CauseKind.THROUGHPUT_DEFICIT, CHURN), None),
    # rates measured across a membership change (explaining.rates_across_membership_change): nothing is sized from them
    (cause(CauseKind.THROUGHPUT_DEFICIT, UNTRUSTED), None),
    (cause(CauseKind.PARTITION_CEILING, UNTRUSTED), None),
    (cause(CauseKind.PARTITION_CEILING), "drain"),
    (cause(CauseKind.PARTITION_CEILING, CHURN), "drain"),
    # scale only while the burst goes on and a member can be added that owns a partition (diagnose, burst)
    (cause(CauseKind.PRODUCER_BURST, ONGOING, SCALABLE), "scale"),
    (cause(CauseKind.PRODUCER_BURST, ONGOING), None),
    (cause(CauseKind.PRODUCER_BURST, SCALABLE), None),
    (cause(CauseKind.PRODUCER_BURST, ONGOING, SCALABLE, CHURN), None),
    (cause(CauseKind.REBALANCE_CHURN), None),
    (cause(CauseKind.IDLE_MEMBERS), None),  # more members would idle too; fewer would not read faster
    (cause(CauseKind.IDLE_MEMBERS, SCALABLE), None),
]


@pytest.mark.parametrize(("cause", "named"), BRANCHES)
def test_the_join_answers_each_cause_as_the_engine_named_it(cause: Cause, named: str | None) -> None:
    assert remedy(cause) == named


def test_every_cause_kind_has_a_row_and_at_most_one_remediation_answers_each() -> None:
    assert {c.kind for c, _ in BRANCHES} == set(CauseKind)
    for c, _ in BRANCHES:
        assert len([a.name for a in packages.declared() if a.answers(c)]) <= 1, c


def test_each_remediation_addresses_the_kinds_it_answers() -> None:
    shipped = ("restart", "scale", "drain", "reset_offsets")
    assert {a.name: sorted(a.addresses) for a in packages.declared() if a.name in shipped} == {
        "restart": ["hot_partition", "stuck_consumer", "unassigned_partitions"],
        "scale": ["no_active_members", "producer_burst", "throughput_deficit"],
        "drain": ["hot_partition", "partition_ceiling", "retention_risk"],
        "reset_offsets": ["data_loss"],
    }
    assert [a.name for a in packages.declared()] == list(registry.names_in_order())  # one list: the registry's


def test_the_causes_remedies_most_likely_first_each_once() -> None:
    causes = [
        cause(CauseKind.IDLE_MEMBERS, rank=1),
        cause(CauseKind.STUCK_CONSUMER, rank=2),
        cause(CauseKind.THROUGHPUT_DEFICIT, rank=3),
        cause(CauseKind.UNASSIGNED_PARTITIONS, rank=4),
    ]
    assert remedies(causes) == ["restart", "scale"]


def test_which_remediations_settle_is_theirs() -> None:
    """A run that rebalances the group starts a settle period (lagbot.engine.agreement own_rebalance, settling)."""
    assert {name: registry.settles(name) for name in ("restart", "scale", "drain", "reset_offsets", "nothing")} == {
        "restart": True,
        "scale": True,
        "drain": False,
        "reset_offsets": False,
        "nothing": False,
    }


@pytest.mark.parametrize(
    "source",
    [
        'ADDRESSES = {"stuck_consumer"}\n',  # a set of strings, not a frozenset of CauseKind
        "from lagbot.core.model import CauseKind\nADDRESSES = frozenset({CauseKind.DATA_LOSS})\nanswers = True\n",
    ],
    ids=["not-cause-kinds", "answers-not-a-function"],
)
def test_a_malformed_answers_module_is_named(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "lagbot" / "remediations" / "broken"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "answers.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    import lagbot.remediations

    monkeypatch.setattr(lagbot.remediations, "__path__", [*lagbot.remediations.__path__, str(folder.parent)])
    monkeypatch.delitem(sys.modules, "lagbot.remediations.broken.answers", raising=False)
    monkeypatch.delitem(sys.modules, "lagbot.remediations.broken", raising=False)
    with pytest.raises(packages.AnswersError) as raised:
        packages.load("broken")
    assert str(raised.value) == (
        "lagbot.remediations.broken.answers: ADDRESSES must be a frozenset of CauseKind and `answers`, if given, "
        "a function of the cause"
    )


def test_a_package_without_an_answers_module_answers_nothing() -> None:
    assert packages.load("executors") == packages.Answers("executors", frozenset())


def test_no_layer_but_the_remediations_names_a_remediation() -> None:
    """The engine names no action, and the policies, the service and Slack take every name from the registry: no
    string in their code is a remediation's name (docs/remediations.md says so)."""
    names = set(registry.names())
    found = []
    for layer in ("bot/lagbot/engine", "policies/lagbot/policies", "bot/lagbot/service", "bot/lagbot/slack"):
        for path in sorted((ROOT / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and node.value in names:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert found == []


def test_each_answers_module_imports_only_the_model() -> None:
    """`lagbot check` reads them (lagbot.service.remedies) without loading a remediation, pydantic or Spark."""
    for package in packages.PACKAGES:
        path = ROOT / "remediations" / "lagbot" / "remediations" / package / "answers.py"
        imported = {
            node.module
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module is not None
        }
        assert imported <= {"__future__", "lagbot.core.model"}, package
        assert not [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Import)], package
