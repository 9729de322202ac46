"""The wheel installs one top-level package, `lagbot`, with every module and data file under it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.tree import module_name, package_folder, source_files

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_holds_lagbot_only_with_every_source_and_data_file(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(tmp_path), str(ROOT)],
        check=True,
        timeout=300,
    )
    [wheel] = tmp_path.glob("lagbot-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"lagbot"}
    expected = {
        module_name(p).replace(".", "/") + ("/__init__.py" if p.name == "__init__.py" else ".py")
        for p in source_files()
    }
    expected |= {"lagbot/devkit/static/demo.html", "lagbot/policies/default.yaml"}
    examples = package_folder("lagbot.policies") / "examples"
    expected |= {f"lagbot/policies/examples/{p.name}" for p in examples.glob("*.yaml")}
    assert sorted(expected - names) == []
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "lagbot = lagbot.cli.main:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
