"""No pattern of the policy or the settings can hang lagbot on a name the cluster sends.

The report: the rule `group: "([a-z0-9]+-?)+-prod"` and a group named thirty `a`s and a `!` froze the whole process
(Python's backtracking `re` takes exponential time on it). Patterns now run on RE2 (linear time); what needs
backtracking is refused when the file is loaded, naming the field.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagbot.core import patterns
from lagbot.core.config import ConfigError, load_settings
from lagbot.policies.loader import PolicyError, load_policy

EVIL = "([a-z0-9]+-?)+-prod"
NESTED = ["(a+)+$", "(a|aa)+b", "(.*a){12}", "([a-z0-9]+-?)+-prod", "(\\w+\\s?)+z", "((a|b)*)*c"]
HOSTILE = st.text(alphabet="ab-!\n0", max_size=60) | st.builds(lambda n, tail: "a" * n + tail, st.integers(0, 200),
                                                                 st.sampled_from(["!", "-", "\n", ""]))  # fmt: skip


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_fuzz_the_reported_rule_judges_the_reported_name_in_a_child_that_ends(tmp_path: Path) -> None:
    """In a child process, so that before the fix the test fails (its deadline) instead of hanging the suite."""
    policy = write(tmp_path, "policy.yaml", f"default: {{}}\nrules:\n  - {{name: prod, match: {{group: '{EVIL}'}}}}\n")
    child = (
        "import sys\n"
        "from pathlib import Path\n"
        "from lagbot.policies.loader import load_policy\n"
        "policy = load_policy(Path(sys.argv[1]))\n"
        "names = ['a' * 30 + '!', 'a' * 5000 + '!', 'orders-eu-prod', 'orders-eu-prod!']\n"
        "print([getattr(policy.match('prod', n), 'name', None) for n in names])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child, str(policy)], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "['default', 'default', 'prod', 'default']"


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(NESTED), HOSTILE)
def test_fuzz_nested_quantifiers_match_like_python_on_short_names(pattern: str, name: str) -> None:
    """RE2 agrees with Python's `re` wherever Python finishes quickly (short names), and never backtracks."""
    import re

    if len(name) <= 12:
        assert patterns.fullmatch(pattern, name) == (re.fullmatch(pattern, name, re.DOTALL) is not None)
    else:
        patterns.fullmatch(pattern, name)  # linear: no deadline needed, and none given


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("(a)\\1", "invalid escape sequence: \\1"),
        ("(?=prod)prod-.*", "invalid perl operator: (?="),
        ("(?<!test-)orders", "invalid perl operator: (?<!"),
        ("a++", "bad repetition operator: ++"),
    ],
)
def test_a_backtracking_pattern_is_refused_at_load_naming_the_field(tmp_path: Path, pattern: str, problem: str) -> None:
    refusal = (
        f"{pattern!r} needs backtracking, which could hang lagbot on a hostile group name ({problem}); lagbot "
        "matches in linear time (RE2): no backreferences, lookarounds, possessive or atomic groups"
    )
    quoted = pattern.replace("'", "''")
    policy = write(tmp_path, "policy.yaml", f"default: {{}}\nrules:\n  - {{name: x, match: {{group: '{quoted}'}}}}\n")
    with pytest.raises(PolicyError) as error:
        load_policy(policy)
    assert str(error.value).splitlines() == [f"{policy}: rules[0] (name 'x'): match.group: {refusal} (got {pattern!r})"]

    config = write(
        tmp_path,
        "lagbot.yaml",
        f"clusters:\n  - name: prod\n    bootstrap_servers: k:9092\n    groups:\n      exclude: ['{quoted}']\n",
    )
    with pytest.raises(ConfigError) as caught:
        load_settings(config)
    assert str(caught.value) == f"{config}: clusters.0.groups.exclude: {refusal}"

    routes = write(
        tmp_path,
        "routes.yaml",
        "clusters:\n  - name: prod\n    bootstrap_servers: k:9092\n"
        f"slack:\n  routes:\n    - {{channel: '#lag', group: '{quoted}'}}\n",
    )
    with pytest.raises(ConfigError) as caught:
        load_settings(routes)
    assert str(caught.value) == f"{routes}: slack.routes.0.group: {refusal} (got {pattern!r})"


def test_dot_matches_a_newline_so_the_default_include_watches_every_name() -> None:
    """Kafka allows a newline in a group name; `include: [".*"]` (the default) must watch it."""
    from lagbot.core.config import GroupFilter

    assert GroupFilter().matches("orders\nconsumer")
    assert GroupFilter(include=["orders.*"]).matches("orders\n")
    assert not GroupFilter(include=[".*"], exclude=["orders.*"]).matches("orders\nx")
