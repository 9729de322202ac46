"""Configuration: the YAML file, its defaults, durations, environment overrides and the error messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from lagbot.core.config import (
    ConfigError,
    Evaluation,
    GroupFilter,
    Level,
    Settings,
    Thresholds,
    load_settings,
    parse_duration,
)

MINIMAL = """\
clusters:
  - name: prod
    bootstrap_servers: kafka-1:9092,kafka-2:9092
"""

FULL = """\
clusters:
  - name: prod
    bootstrap_servers: kafka-1:9092
    kafka:
      security.protocol: SASL_SSL
      sasl.mechanism: PLAIN
      socket.keepalive.enable: true
      retries: 3
    groups:
      include: ["billing-.*", "orders"]
      exclude: ["billing-test"]
    check_interval: 90s
    request_timeout: 5
  - name: staging
    bootstrap_servers: kafka-staging:9092
window:
  samples: 20
  ttl: 2h
thresholds:
  warn:
    messages: 1000
    growing: true
    sustained_for: 5m
  critical:
    seconds: 10m
  page:
    doubling_within: 15m
    doubling_min_lag: 100
evaluation:
  min_samples: 4
  min_span: 30s
  diagnose_min_lag: 500
redis_url: redis://localhost:6379/0
"""


def write(tmp_path: Path, text: str, name: str = "lagbot.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_error(path: Path | None) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    return str(caught.value)


# ---------------------------------------------------------------------------------------------------
# A valid file, and the defaults
# ---------------------------------------------------------------------------------------------------


def test_a_full_valid_file_loads(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, FULL))
    prod, staging = settings.clusters
    assert prod.name == "prod"
    assert prod.bootstrap_servers == "kafka-1:9092"
    assert prod.kafka == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "socket.keepalive.enable": True,
        "retries": 3,
    }
    assert prod.client_config() == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "socket.keepalive.enable": True,
        "retries": 3,
        "bootstrap.servers": "kafka-1:9092",
    }
    assert prod.groups == GroupFilter(include=["billing-.*", "orders"], exclude=["billing-test"])
    assert prod.check_interval == 90.0
    assert prod.request_timeout == 5.0
    assert staging.name == "staging"
    assert settings.cluster("staging") is staging
    assert settings.window.samples == 20
    assert settings.window.ttl == 7200.0
    assert settings.thresholds.warn == Level(messages=1000, growing=True, sustained_for=300.0)
    assert settings.thresholds.critical == Level(seconds=600.0)
    assert settings.thresholds.page == Level(doubling_within=900.0, doubling_min_lag=100)
    assert settings.evaluation == Evaluation(min_samples=4, min_span=30.0, diagnose_min_lag=500)
    assert settings.redis_url == "redis://localhost:6379/0"


def test_defaults(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, MINIMAL))
    (cluster,) = settings.clusters
    assert cluster.kafka == {}
    assert cluster.groups.include == [".*"]
    assert cluster.groups.exclude == []
    assert cluster.check_interval == 60.0
    assert cluster.request_timeout == 10.0
    assert cluster.client_config() == {"bootstrap.servers": "kafka-1:9092,kafka-2:9092"}
    assert settings.window.samples == 30
    assert settings.window.ttl == 86_400.0
    assert settings.thresholds == Thresholds()
    assert settings.thresholds.warn == Level(messages=50_000, growing=True, sustained_for=300.0)
    assert settings.thresholds.critical == Level(messages=500_000, doubling_within=600.0)
    assert settings.thresholds.page == Level(messages=2_000_000)
    assert settings.thresholds.critical.doubling_min_lag == 50_000
    assert settings.evaluation == Evaluation()
    assert (settings.evaluation.min_samples, settings.evaluation.min_span, settings.evaluation.diagnose_min_lag) == (
        3,
        10.0,
        1000,
    )
    assert settings.redis_url is None


def test_defaults_argument_is_overridden_by_the_file(tmp_path: Path) -> None:
    settings = load_settings(
        write(tmp_path, MINIMAL + "window:\n  samples: 12\n"), defaults={"redis_url": "redis://x:1/0"}
    )
    assert settings.redis_url == "redis://x:1/0"
    assert settings.window.samples == 12


def test_unknown_cluster_name_lists_the_configured_ones(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, FULL))
    with pytest.raises(ConfigError) as caught:
        settings.cluster("dev")
    assert str(caught.value) == "no cluster named 'dev'; configured: prod, staging"


# ---------------------------------------------------------------------------------------------------
# Durations
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("90s", 90.0),
        ("5m", 300.0),
        ("2h", 7200.0),
        ("1d", 86_400.0),
        ("1w", 604_800.0),
        ("250ms", 0.25),
        ("1.5m", 90.0),
        (" 5M ", 300.0),
        ("45", 45.0),
        (30, 30.0),
        (2.5, 2.5),
        (0, 0.0),
    ],
)
def test_parse_duration(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["soon", "5 minutes", "-5", "5x", "", -1, True, None, [5]])
def test_parse_duration_rejects(value: object) -> None:
    with pytest.raises(ValueError) as caught:
        parse_duration(value)
    assert str(caught.value) == (
        f"{value!r} is not a duration: use seconds (90) or a number with a unit (90s, 5m, 2h, 1d)"
    )


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90.0), ("5m", 300.0), ("2h", 7200.0), ("30", 30.0)])
def test_durations_in_the_file(tmp_path: Path, text: str, seconds: float) -> None:
    settings = load_settings(write(tmp_path, MINIMAL + f"    check_interval: {text}\nwindow:\n  ttl: {text}\n"))
    assert settings.clusters[0].check_interval == seconds
    assert settings.window.ttl == seconds


# ---------------------------------------------------------------------------------------------------
# Bad values: the message names the file, the field path and the problem
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            "    check_interval: soon\n",
            "clusters.0.check_interval: 'soon' is not a duration: use seconds (90) or a number with a unit "
            "(90s, 5m, 2h, 1d) (got 'soon')",
        ),
        ("    check_interval: 0\n", "clusters.0.check_interval: Input should be greater than 0 (got 0.0)"),
        (
            "    request_timeout: -5\n",
            "clusters.0.request_timeout: -5 is not a duration: use seconds (90) or a number with a unit "
            "(90s, 5m, 2h, 1d) (got -5)",
        ),
        ("window:\n  samples: 1\n", "window.samples: Input should be greater than or equal to 2 (got 1)"),
        (
            "window:\n  samples: many\n",
            "window.samples: Input should be a valid integer, unable to parse string as an integer (got 'many')",
        ),
        (
            "thresholds:\n  warn:\n    growing: true\n",
            "thresholds.warn: a level needs at least one of 'messages', 'seconds' or 'doubling_within'",
        ),
        (
            "evaluation:\n  min_samples: 1\n",
            "evaluation.min_samples: Input should be greater than or equal to 2 (got 1)",
        ),
    ],
)
def test_bad_value_names_file_field_and_problem(tmp_path: Path, extra: str, expected: str) -> None:
    path = write(tmp_path, MINIMAL + extra)
    assert load_error(path) == f"{path}: {expected}"


def test_bad_cluster_name(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.replace("name: prod", "name: prod east"))
    assert load_error(path) == (
        f"{path}: clusters.0.name: String should match pattern '^[A-Za-z0-9_.-]+$' (got 'prod east')"
    )


def test_several_problems_give_one_line_each(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "    check_interval: soon\nwindow:\n  samples: 1\n")
    lines = load_error(path).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{path}: clusters.0.check_interval: 'soon' is not a duration")
    assert lines[1] == f"{path}: window.samples: Input should be greater than or equal to 2 (got 1)"


def test_missing_required_field(tmp_path: Path) -> None:
    path = write(tmp_path, "clusters:\n  - name: prod\n")
    assert load_error(path) == f"{path}: clusters.0.bootstrap_servers: Field required"
    empty = write(tmp_path, "", name="empty.yaml")
    assert load_error(empty) == f"{empty}: clusters: Field required"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("windw:\n  samples: 5\n", "windw: Extra inputs are not permitted"),
        ("    bootstrap: kafka:9092\n", "clusters.0.bootstrap: Extra inputs are not permitted (got 'kafka:9092')"),
        ("window:\n  size: 5\n", "window.size: Extra inputs are not permitted (got 5)"),
        ("thresholds:\n  info:\n    messages: 5\n", "thresholds.info: Extra inputs are not permitted"),
    ],
)
def test_unknown_field_is_rejected_by_name(tmp_path: Path, extra: str, expected: str) -> None:
    path = write(tmp_path, MINIMAL + extra)
    assert load_error(path) == f"{path}: {expected}"


def test_duplicate_cluster_names(tmp_path: Path) -> None:
    text = MINIMAL + "  - name: prod\n    bootstrap_servers: other:9092\n  - name: dev\n    bootstrap_servers: d:9092\n"
    path = write(tmp_path, text)
    assert load_error(path) == f"{path}: clusters: cluster names must be unique; repeated: prod"


def test_bad_regex_in_group_filter(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "    groups:\n      include: ['billing-.*', '([']\n")
    assert load_error(path) == (
        f"{path}: clusters.0.groups.include: '([' is not a valid regular expression "
        "(unterminated character set at position 1)"
    )


def test_bootstrap_servers_cannot_be_passed_through_kafka(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "    kafka:\n      bootstrap.servers: elsewhere:9092\n")
    assert load_error(path) == (
        f"{path}: clusters.0.kafka: 'bootstrap.servers' cannot be set here: use the field 'bootstrap_servers'"
    )


# ---------------------------------------------------------------------------------------------------
# Unreadable files
# ---------------------------------------------------------------------------------------------------


def test_yaml_syntax_error_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "clusters: [\n  - name: prod\n")
    message = load_error(path)
    assert message.startswith(f"{path}: not valid YAML at line 2, column 3: ")
    assert len(message.splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "kind"), [("- prod\n- staging\n", "list"), ("just a string\n", "str"), ("42\n", "int")]
)
def test_a_file_that_is_not_a_mapping(tmp_path: Path, text: str, kind: str) -> None:
    path = write(tmp_path, text)
    assert load_error(path) == f"{path}: the configuration must be a mapping of settings, not a {kind}"


def test_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.yaml"
    assert load_error(path) == f"{path}: cannot read the configuration file: No such file or directory"


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    message = load_error(tmp_path)
    assert message.startswith(f"{tmp_path}: cannot read the configuration file: ")


# ---------------------------------------------------------------------------------------------------
# Environment overrides
# ---------------------------------------------------------------------------------------------------


def test_environment_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, MINIMAL + "window:\n  samples: 20\n  ttl: 1h\n")
    monkeypatch.setenv("LAGBOT_WINDOW__SAMPLES", "7")
    settings = load_settings(path)
    assert settings.window.samples == 7
    assert settings.window.ttl == 3600.0  # the rest of the mapping still comes from the file


def test_environment_sets_what_the_file_leaves_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAGBOT_REDIS_URL", "redis://cache:6379/1")
    monkeypatch.setenv("LAGBOT_EVALUATION__MIN_SPAN", "2m")
    settings = load_settings(write(tmp_path, MINIMAL))
    assert settings.redis_url == "redis://cache:6379/1"
    assert settings.evaluation.min_span == 120.0


def test_environment_gives_a_list_as_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAGBOT_CLUSTERS", '[{"name": "dev", "bootstrap_servers": "localhost:9092"}]')
    settings = load_settings(write(tmp_path, MINIMAL))
    assert [c.name for c in settings.clusters] == ["dev"]


def test_bad_environment_value_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, MINIMAL + "window:\n  samples: 20\n")
    monkeypatch.setenv("LAGBOT_WINDOW__SAMPLES", "1")
    assert load_error(path) == (
        "environment variable LAGBOT_WINDOW__SAMPLES: window.samples: Input should be greater than or equal to 2 "
        "(got '1')"
    )


def test_bad_environment_value_in_a_json_list_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAGBOT_CLUSTERS", '[{"name": "dev", "bootstrap_servers": "localhost:9092", "port": 1}]')
    assert load_error(write(tmp_path, MINIMAL)) == (
        "environment variable LAGBOT_CLUSTERS: clusters.0.port: Extra inputs are not permitted (got 1)"
    )


def test_bad_environment_value_set_in_lower_case_still_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Variable names are read case-insensitively (lagbot.core.config_env), so the message must name them too.
    monkeypatch.setenv("lagbot_window__samples", "1")
    assert load_error(write(tmp_path, MINIMAL)) == (
        "environment variable lagbot_window__samples: window.samples: Input should be greater than or equal to 2 "
        "(got '1')"
    )


def test_a_bad_file_value_next_to_a_good_environment_value_blames_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAGBOT_WINDOW__SAMPLES", "7")
    path = write(tmp_path, MINIMAL + "window:\n  ttl: forever\n")
    assert load_error(path).startswith(f"{path}: window.ttl: 'forever' is not a duration")


def test_settings_without_a_file_name_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_error(None) == "defaults: clusters: Field required"
    monkeypatch.setenv("LAGBOT_CLUSTERS", '[{"name": "dev", "bootstrap_servers": "localhost:9092"}]')
    settings = load_settings(None)
    assert isinstance(settings, Settings)
    assert settings.clusters[0].bootstrap_servers == "localhost:9092"


# ---------------------------------------------------------------------------------------------------
# GroupFilter
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("include", "exclude", "group", "watched"),
    [
        ([".*"], [], "anything", True),
        ([".*"], [], "", True),
        (["billing-.*"], [], "billing-eu", True),
        (["billing-.*"], [], "old-billing-eu", False),  # full match: not a search
        (["billing"], [], "billing-eu", False),  # full match: not a prefix
        (["billing", "orders-.*"], [], "orders-1", True),  # any include pattern
        (["billing-.*"], ["billing-test"], "billing-test", False),
        (["billing-.*"], ["billing-test"], "billing-test-2", True),  # exclude is a full match too
        (["billing-.*"], ["test"], "billing-test", True),  # "test" does not fully match it
        (["billing-.*"], [".*-test", "billing-tmp.*"], "billing-tmp-1", False),  # any exclude pattern
        ([], [], "billing", False),  # nothing included
    ],
)
def test_group_filter(include: list[str], exclude: list[str], group: str, watched: bool) -> None:
    assert GroupFilter(include=include, exclude=exclude).matches(group) is watched


def test_group_filter_default_watches_everything() -> None:
    assert GroupFilter().matches("any-group")
    assert GroupFilter().include == [".*"]


def test_the_shipped_example_configuration_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    from lagbot.core.config import load_settings

    example = Path(__file__).resolve().parents[2] / "examples" / "lagbot.yaml"
    settings = load_settings(example)
    assert [c.name for c in settings.clusters] == ["prod", "staging"]
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "from-the-environment")
    client = settings.clusters[0].client_config()
    assert (client["security.protocol"], client["sasl.password"]) == ("SASL_SSL", "from-the-environment")
    assert settings.clusters[0].check_interval == 60.0
    assert settings.thresholds.warn.sustained_for == 300.0
