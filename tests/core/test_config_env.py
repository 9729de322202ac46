"""Settings from environment variables (lagbot.core.config_env): paths, JSON, merging, what is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from lagbot.core.config import ConfigError, load_settings
from lagbot.core.config_env import EnvValueError, environment_values, merged


class Inner(BaseModel):
    size: int = 1
    names: list[str] = []
    labels: dict[str, str] = {}


class Outer(BaseModel):
    inner: Inner = Inner()
    maybe: Inner | None = None
    items: list[Inner] = []
    text_or_list: str | list[str] = ""
    count: int = 0
    where: Path | None = None


def values(**environ: str) -> dict[str, object]:
    return environment_values(Outer, "APP_", environ)


def test_a_path_is_the_name_after_the_prefix_lowered_and_split_at_double_underscores() -> None:
    assert values(APP_COUNT="7", APP_INNER__SIZE="3") == {"count": "7", "inner": {"size": "3"}}


def test_names_are_matched_whatever_their_case() -> None:
    assert values(app_inner__Size="3", App_Count="1") == {"inner": {"size": "3"}, "count": "1"}


def test_a_variable_of_no_setting_is_left_alone_but_an_unknown_field_inside_one_is_passed_on() -> None:
    assert values(APP_FLEET_DIR="/tmp", OTHER_COUNT="1", APP_INNER__COLOUR="red") == {"inner": {"colour": "red"}}


def test_models_lists_and_mappings_take_json() -> None:
    got = values(
        APP_INNER='{"size": 2, "names": ["a"]}',
        APP_MAYBE='{"size": 4}',
        APP_ITEMS='[{"size": 5}]',
        APP_INNER__LABELS='{"team": "core"}',
    )
    assert got == {
        "inner": {"size": 2, "names": ["a"], "labels": {"team": "core"}},
        "maybe": {"size": 4},
        "items": [{"size": 5}],
    }


def test_a_nested_variable_is_merged_into_a_json_mapping_of_its_parent_and_wins() -> None:
    assert values(APP_INNER='{"size": 2, "names": ["a"]}', APP_INNER__SIZE="9") == {
        "inner": {"size": "9", "names": ["a"]}
    }


def test_a_key_of_a_mapping_field_is_text_as_given() -> None:
    assert values(APP_INNER__LABELS__TEAM="5") == {"inner": {"labels": {"team": "5"}}}


def test_plain_fields_stay_text_for_the_model_to_validate() -> None:
    assert values(APP_COUNT="[1]", APP_WHERE="/var/lib") == {"count": "[1]", "where": "/var/lib"}


def test_a_field_that_takes_text_or_json_keeps_text_that_is_not_json() -> None:
    assert values(APP_TEXT_OR_LIST='["a", "b"]') == {"text_or_list": ["a", "b"]}
    assert values(APP_TEXT_OR_LIST="plain") == {"text_or_list": "plain"}


@pytest.mark.parametrize(
    ("variable", "field"), [("APP_ITEMS", "items"), ("APP_INNER", "inner"), ("APP_INNER__NAMES", "inner.names")]
)
def test_json_that_does_not_parse_names_the_variable_and_its_field(variable: str, field: str) -> None:
    with pytest.raises(EnvValueError) as caught:
        values(**{variable: "[oops"})
    assert str(caught.value) == f"environment variable {variable}: not valid JSON ({field} takes a JSON value)"


def test_an_empty_value_is_passed_as_it_is() -> None:
    assert values(APP_ITEMS="", APP_COUNT="") == {"items": "", "count": ""}


def test_merged_puts_the_second_mapping_over_the_first_key_by_key() -> None:
    base = {"a": {"x": 1, "y": {"p": 1}}, "b": [1], "c": 3}
    assert merged(base, {"a": {"y": {"q": 2}}, "b": [2]}) == {"a": {"x": 1, "y": {"p": 1, "q": 2}}, "b": [2], "c": 3}
    assert base == {"a": {"x": 1, "y": {"p": 1}}, "b": [1], "c": 3}  # not changed in place


def test_the_environment_over_a_json_mapping_over_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "lagbot.yaml"
    clusters = "clusters:\n  - name: prod\n    bootstrap_servers: k:9092\n"
    path.write_text(clusters + "window:\n  samples: 20\n  ttl: 1h\n", encoding="utf-8")
    monkeypatch.setenv("LAGBOT_WINDOW", '{"samples": 10}')
    monkeypatch.setenv("LAGBOT_WINDOW__TTL", "2h")
    monkeypatch.setenv("LAGBOT_DRAIN__SPARK_CONF__SPARK.EXECUTOR.MEMORY", "2g")
    settings = load_settings(path)
    assert (settings.window.samples, settings.window.ttl) == (10, 7200.0)
    assert settings.drain.spark_conf == {"spark.executor.memory": "2g"}
    assert [c.name for c in settings.clusters] == ["prod"]


def test_an_unknown_nested_setting_is_named_with_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "lagbot.yaml"
    path.write_text("clusters:\n  - name: prod\n    bootstrap_servers: k:9092\n", encoding="utf-8")
    monkeypatch.setenv("LAGBOT_WINDOW__SAMPLEZ", "10")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert str(caught.value) == (
        "environment variable LAGBOT_WINDOW__SAMPLEZ: window.samplez: Extra inputs are not permitted (got '10')"
    )
