"""`lagbot policy validate FILE...` and `lagbot policy explain CLUSTER GROUP [--policy FILE]`.

Exit codes: 0 valid (or explained); 4 an unreadable or invalid policy, every problem named on its own line
(raised as PolicyError, which `lagbot`'s main turns into exit code 4).
"""

from __future__ import annotations

import time
from pathlib import Path

from lagbot.policies import wording

# The arguments of both commands are declared in `lagbot`'s command tree (lagbot.cli.main).


def validate(*, files: list[Path]) -> int:
    """Validate policy files; every problem is named by file, rule and field (exit 4 if any file is invalid)."""
    from lagbot.policies.loader import (  # here, not at the top: `lagbot check` never pays for it
        PolicyError,
        load_policy,
    )

    problems = []
    for file in files:
        try:
            policy = load_policy(file)
        except PolicyError as exc:
            problems.append(str(exc))
            continue
        print(wording.policy_valid(str(file), len(policy.rules)))
    if problems:
        raise PolicyError("\n".join(problems))
    return 0


def explain(*, cluster: str, group: str, policy: Path | None) -> int:
    """Which rule applies to a group, and what it allows."""
    from lagbot.policies.explain import explain as explain_lines
    from lagbot.policies.loader import default_policy_path, load_policy

    loaded = load_policy(policy if policy is not None else default_policy_path())
    for line in explain_lines(loaded, cluster, group, now=time.time()):
        print(line)
    return 0
