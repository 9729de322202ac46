"""Fuzzing the configuration and policy loaders: whatever the file holds, a valid result or a clear error.

Generated documents (YAML text, and mappings shaped like a real config or policy with wrong, odd and
missing values) go through the loaders as `lagbot run` and `lagbot policy validate` call them. The only
acceptable outcomes are a Settings / Policy, or ConfigError / PolicyError whose message names the file;
any other exception is a bug.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lagbot.core.config import ConfigError, load_settings
from lagbot.policies.loader import PolicyError, load_policy

EXAMPLES = 1_000
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

ODD_VALUES = [
    *("1s", "0s", "-5m", "30d", "1h", "abc", ".*", "(", "U0ABC", "S0ABC", "#alerts", "C0AB", "24:00", "25:61"),
    *("Europe/Paris", "Mars/Olympus", "kafka:__consumer_offsets", "/etc", "local[*]", ""),
]
ODD_DOCUMENTS = [
    *("a: 2001-13-45\n", "a: [\n", "- 1\n- 2\n", "? [a, b]\n: c\n", "a: &x [*x]\n", "!!python/object:os.system x"),
    *("a: b: c\n", "\t\ta: 1", "a: !!binary AAA=\n", "[" * 200, "x: 1e999\n", "1: 2\n"),
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(ODD_VALUES),
)


def values(depth: int = 3) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(st.one_of(st.text(max_size=12), st.integers(), st.booleans()), inner, max_size=4),
        ),
        max_leaves=depth * 4,
    )


def shaped(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A mapping with some of `fields` (each a strategy) and maybe a stray key."""
    return st.fixed_dictionaries({}, optional={**fields, "stray": values()})


CLUSTER = shaped(
    {
        "name": st.one_of(st.just("prod"), scalars),
        "bootstrap_servers": st.one_of(st.just("127.0.0.1:9092"), scalars),
        "check_interval": scalars,
        "groups": st.one_of(shaped({"include": values(), "exclude": values()}), scalars),
        "kafka": values(),
    }
)
CONFIG = shaped(
    {
        "clusters": st.one_of(st.lists(CLUSTER, max_size=3), scalars),
        "window": st.one_of(shaped({"samples": scalars, "ttl": scalars}), scalars),
        "thresholds": values(),
        "evaluation": values(),
        "redis_url": scalars,
        "slack": st.one_of(
            shaped({"api_url": scalars, "default_channel": scalars, "routes": values(), "command_limits": values()}),
            scalars,
        ),
        "incidents": values(),
        "http": values(),
        "leader": values(),
        "policy_file": scalars,
        "digest": values(),
        "executors": values(),
        "drain": values(),
    }
)
RULE = shaped(
    {
        "name": scalars,
        "match": st.one_of(shaped({"cluster": scalars, "group": scalars}), scalars),
        "channel": scalars,
        "approvers": st.one_of(shaped({"users": values(), "usergroups": values()}), scalars),
        "silencers": st.one_of(shaped({"users": values(), "usergroups": values()}), scalars),
        "remediations": st.one_of(
            shaped(
                {
                    "restart": values(),
                    "scale": values(),
                    "reset_offsets": values(),
                    "drain": st.one_of(shaped({"sinks": shaped({"paths": values(), "topics": scalars})}), values()),
                }
            ),
            scalars,
        ),
        "maintenance": st.one_of(
            st.lists(shaped({"days": values(), "start": scalars, "end": scalars, "timezone": scalars})), scalars
        ),
        "dry_run": scalars,
        "thresholds": values(),
        "workload": values(),
        "verification": values(),
    }
)
POLICY = shaped({"version": scalars, "rules": st.one_of(st.lists(RULE, max_size=3), scalars), "default": RULE})

texts = st.one_of(
    st.text(max_size=200),
    st.sampled_from(ODD_DOCUMENTS),
)


def written(tmp_path: Path, name: str, document: Any) -> Path:
    path = tmp_path / name
    if isinstance(document, str):
        path.write_text(document, encoding="utf-8", errors="surrogatepass")
    else:
        path.write_text(yaml.safe_dump(document, allow_unicode=True))
    return path


def assert_clear(error: Exception, path: Path) -> None:
    text = str(error)
    assert str(path) in text and "Traceback" not in text, text


@FUZZ
@given(document=st.one_of(CONFIG, texts))
def test_the_config_loader_gives_settings_or_a_clear_error(tmp_path: Path, document: Any) -> None:
    path = written(tmp_path, "lagbot.yaml", document)
    try:
        load_settings(path)
    except ConfigError as exc:
        assert_clear(exc, path)


@FUZZ
@given(document=st.one_of(POLICY, texts))
def test_the_policy_loader_gives_a_policy_or_a_clear_error(tmp_path: Path, document: Any) -> None:
    path = written(tmp_path, "policy.yaml", document)
    try:
        load_policy(path)
    except PolicyError as exc:
        assert_clear(exc, path)
