"""A scenario corpus built live on Apache Kafka with real producers and consumers, graded on what lagbot says.

Each scenario (scenarios.py) sets up a topic and a consumer group in a known situation and keeps it going while
`lagbot check --json` runs on it twice at once, as a user runs it: with its default sampling (4 samples, 5 s
apart) and with `--samples 4 --every 3`. Each run is graded on three things: the group's status, the primary
cause (rank 1, or none) and the remediation that cause offers. A sampling that cannot decide a scenario says why
and is shown, not graded. Scenarios run AT_ONCE at a time (each on its own topic and group): all twenty at once,
with two `lagbot check` processes each, loaded two shared cores so much that workloads stopped being what they say
(consumers of a healthy group missed their heartbeats and churned, a reader fell behind its rate).

`python -m tests.support.corpus` (`make corpus`) starts Apache Kafka and prints the table;
tests/engine/test_scenario_corpus.py asserts every row.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tests.support.corpus.checks import CheckRun
from tests.support.corpus.scenarios import SCENARIOS, Expected, Scenario, Undecidable


@dataclass(frozen=True)
class Sampling:
    name: str
    flags: tuple[str, ...]


DEFAULT = Sampling("default (4 x 5 s)", ())
SHORT = Sampling("--samples 4 --every 3", ("--samples", "4", "--every", "3"))
SAMPLINGS = (DEFAULT, SHORT)
AT_ONCE = 5
"""Scenarios built and checked at the same time."""
SCENARIO_TIMEOUT = 240.0
"""Seconds one scenario may take at most, its setup, both checks and its teardown."""


@dataclass(frozen=True)
class Graded:
    scenario: str
    sampling: str
    expected: Expected | Undecidable
    status: str
    cause: str | None
    remediation: str | None
    group: dict[str, Any]
    """The group's object of `lagbot check --json` (for more assertions on a row)."""

    @property
    def graded(self) -> bool:
        return isinstance(self.expected, Expected)

    @property
    def right(self) -> bool:
        e = self.expected
        if not isinstance(e, Expected):
            return True
        status = self.status if e.status is None else e.status.name
        return (self.status, self.cause, self.remediation) == (status, e.cause, e.remediation)


def grade(bootstrap: str, scenario: Scenario, topic: str, group: str) -> list[Graded]:
    """Build the scenario, run both samplings on it at once, grade each."""
    with scenario.setup(bootstrap, topic, group):
        running = [(sampling, CheckRun(bootstrap, group, sampling.flags)) for sampling in SAMPLINGS]
        results = [(sampling, check.outcome()) for sampling, check in running]
    rows = []
    for sampling, found in results:
        primary = found["causes"][0] if found["causes"] else None
        expected = scenario.expected if sampling is DEFAULT or scenario.short is None else scenario.short
        rows.append(
            Graded(
                scenario.name,
                sampling.name,
                expected,
                found["status"],
                primary["kind"] if primary else None,
                primary["remediation"] if primary else None,
                found,
            )
        )
    return rows


def run_all(bootstrap: str, scenarios: tuple[Scenario, ...] = SCENARIOS) -> list[Graded]:
    """Every scenario, AT_ONCE at a time, each on its own topic and group; rows in the corpus' order."""
    stamp = f"{int(time.time())}-{time.monotonic_ns() % 100_000}"
    with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
        futures = [
            pool.submit(grade, bootstrap, s, f"corpus-{stamp}-{i}", f"corpus-group-{stamp}-{i}")
            for i, s in enumerate(scenarios)
        ]
        return [row for future in futures for row in future.result(timeout=SCENARIO_TIMEOUT)]


def table(rows: list[Graded]) -> str:
    """The corpus' table: one line per scenario and sampling, then the score and the reasons for what is not graded."""
    head = f"{'scenario':30} {'sampling':22} {'lag':>7} {'status':6} {'primary cause':18} {'remediation':11} graded"
    lines = [head, "-" * len(head)]
    notes: list[str] = []
    for r in rows:
        if isinstance(r.expected, Expected):
            verdict = "right" if r.right else f"WRONG (expected {_said(r.expected)})"
            if r.expected.status is None:
                notes.append(f"  {r.scenario}, {r.sampling}: status not decidable: {r.expected.why}")
                verdict += f", status not graded [{len(notes)}]"
        else:
            notes.append(f"  {r.scenario}, {r.sampling}: not decidable: {r.expected.why}")
            verdict = f"not decidable [{len(notes)}]"
        lines.append(
            f"{r.scenario:30} {r.sampling:22} {_lag(r):>7} {r.status:6} {r.cause or '-':18} {r.remediation or '-':11} "
            f"{verdict}"
        )
    for sampling in SAMPLINGS:
        mine = [r for r in rows if r.sampling == sampling.name and r.graded]
        lines.append(f"{sampling.name}: {sum(r.right for r in mine)} of {len(mine)} right")
    return "\n".join([*lines, *(f"[{i + 1}]{note[1:]}" for i, note in enumerate(notes))])


def _lag(row: Graded) -> str:
    lag = row.group.get("total_lag")
    return "-" if lag is None else f"{lag:,}"


def _said(e: Expected) -> str:
    return f"{'any status' if e.status is None else e.status.name} {e.cause or '-'} {e.remediation or '-'}"
