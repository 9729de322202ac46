"""The Spark Connect master: accepted as `drain.master: sc://HOST:PORT`, refused with a message naming what is wrong."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lagbot.remediations.drain.connect import task_root
from lagbot.remediations.drain.params import DrainParams
from lagbot.remediations.drain.preflight import java_problem
from lagbot.remediations.drain.settings import DrainSettings, check_master, is_connect, is_local


@pytest.mark.parametrize(
    "master",
    ["sc://lagbot-spark-connect:15002", "sc://127.0.0.1:15002", "sc://spark.example.com", "sc://h:1/;use_ssl=true"],
)
def test_a_connect_server_is_a_master_that_is_neither_local_nor_submitted(master: str) -> None:
    assert check_master(master) == master
    assert is_connect(master) and not is_local(master)
    assert DrainSettings(master=master).master == master


@pytest.mark.parametrize("master", ["sc://", "sc://host:0", "sc://host:123456", "sc://host name:15002", "sc:/host:1"])
def test_a_malformed_connect_url_is_named(master: str) -> None:
    with pytest.raises(ValidationError) as raised:
        DrainSettings(master=master)
    assert f"{master!r} is not a Spark master lagbot can use" in str(raised.value)
    assert "a Spark Connect server sc://HOST:PORT" in str(raised.value)


def test_spark_writer_is_refused_with_a_connect_master_in_settings_and_in_params() -> None:
    with pytest.raises(ValidationError) as raised:
        DrainSettings(master="sc://connect:15002", writer="spark")
    assert "drain.writer spark cannot be used with the Spark Connect master sc://connect:15002" in str(raised.value)
    with pytest.raises(ValidationError, match=r"drain\.writer spark cannot be used"):
        DrainParams(sink="/drains", master="sc://connect:15002", writer="spark")
    assert DrainParams(sink="/drains", master="sc://connect:15002", writer="auto").writer == "auto"
    assert DrainSettings(master="spark://m:7077", writer="spark").writer == "spark"


def test_a_connect_drain_needs_no_java_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", "/nonexistent")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert java_problem("sc://connect:15002") is None
    assert java_problem("local[2]") is not None and "Java 17" in str(java_problem("local[2]"))


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("/drains/parquet", "/drains/parquet"),
        ("file:///drains/parquet", "/drains/parquet"),
        ("file:/drains/with%20space", "/drains/with space"),
        ("s3://bucket/drains", "s3://bucket/drains"),
    ],
)
def test_the_tasks_open_the_sink_with_pyarrow(url: str, root: str) -> None:
    assert task_root(url) == root


def test_a_sink_pyarrow_cannot_open_is_named_with_what_works() -> None:
    with pytest.raises(ValueError, match=r"the tasks cannot open s3a://bucket/d with pyarrow .*s3://, gs://"):
        task_root("s3a://bucket/d")
