"""`lagbot fleet`: the demo's consumer fleet driven from the command line, on Apache Kafka."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lagbot.cli.main import main
from lagbot.devkit.fleet import LocalExecutor
from lagbot.remediations.executors.config import LocalConfig
from tests.conftest import Kafka, Names

pytestmark = pytest.mark.integration


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "fleets"
    yield path
    LocalExecutor(LocalConfig(state_dir=path)).stop_all()


def lagbot(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_start_status_scale_stuck_restart_stop(
    capsys: pytest.CaptureFixture[str], kafka: Kafka, names: Names, state_dir: Path
) -> None:
    topic, group, fleet = names("topic"), names("group"), names("fleet")
    kafka.create_topic(topic, 2)
    where = ("--state-dir", str(state_dir))
    code, out, _ = lagbot(capsys, "fleet", "start", fleet, "-b", kafka.bootstrap, "-g", group, "-t", topic, *where)
    assert (code, out.strip()) == (0, f"fleet {fleet} started: 1 member(s) consuming as group {group}")

    code, out, _ = lagbot(capsys, "fleet", "scale", fleet, "2", *where)
    assert (code, out.strip()) == (0, f"scaled fleet {fleet} from 1 to 2 replicas")

    code, out, _ = lagbot(capsys, "fleet", "status", fleet, "--json", *where)
    members = json.loads(out)["members"]
    assert code == 0 and [m["client_id"] for m in members] == [f"{fleet}-0", f"{fleet}-1"]

    code, out, _ = lagbot(capsys, "fleet", "stuck", fleet, f"{fleet}-1", *where)
    assert code == 0 and "is now stuck" in out
    code, out, _ = lagbot(capsys, "fleet", "restart", fleet, "--member", f"{fleet}-1", *where)
    assert code == 0 and out.startswith(f"restarted {fleet}-1 (pid {members[1]['pid']} -> ")

    code, out, _ = lagbot(capsys, "fleet", "status", fleet, *where)
    assert code == 0 and out.splitlines()[0] == f"fleet {fleet}: 2 live member(s)"

    code, out, _ = lagbot(capsys, "fleet", "stop", fleet, *where)
    assert (code, out.strip()) == (0, f"fleet {fleet} stopped (2 member(s))")
    assert LocalExecutor(LocalConfig(state_dir=state_dir)).members(fleet) == []


def test_failures_and_bad_usage(capsys: pytest.CaptureFixture[str], state_dir: Path) -> None:
    where = ("--state-dir", str(state_dir))
    code, out, _ = lagbot(capsys, "fleet", "scale", "nothing-here", "2", *where)
    assert (code, out.strip()) == (1, "no fleet called nothing-here: start it first")
    code, _, err = lagbot(capsys, "fleet", "start", ".hidden", "-b", "127.0.0.1:1", "-g", "g", "-t", "t", *where)
    assert code == 4 and "name: String should match pattern" in err
    code, _, err = lagbot(capsys, "fleet", "scale", "x", "-3", *where)
    assert code == 4 and "-3" in err
    assert not state_dir.exists() or LocalExecutor(LocalConfig(state_dir=state_dir)).fleets() == []
