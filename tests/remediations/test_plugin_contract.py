"""Adding a remediation is one package and one registry line (docs/remediations.md, "Adding a remediation").

The test does exactly what the page says, in a copy of the tree: it writes the page's `pause` package, adds the one line
to the registry, checks that nothing else differs (the tests included), runs the registry's own tests there unchanged,
and runs the copy's lagbot (tests/support/plugin_probe.py) on a real redis-server and the Slack emulator: the new
remediation is in the policy schema, in `/lag remediate`, in `lagbot policy explain`, proposed for the cause it
answers (its `answers` module, through the service's join, as `lagbot check` shows it too), approved, run and
verified by the service.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from lagbot.devkit.embedded import EmbeddedRedis
from tests.support.tree import ROOT, source_roots

PAGE = ROOT / "docs" / "remediations.md"
PACKAGE = Path("remediations/lagbot/remediations/pause")
REGISTRY = Path("remediations/lagbot/remediations/packages.py")
PLANS = "test_remediation_plans.py"


def recipe_files() -> dict[str, str]:
    """The files of the `pause` package as the page gives them: each "`pause/<file>`:" line and the block after."""
    section = PAGE.read_text().split("## Adding a remediation", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"^`pause/(\w+\.py)`:\n\n```python\n(.*?)```$", section, flags=re.M | re.S)
    return dict(found)


def add_pause(copy: Path) -> None:
    """The page's two steps, in the copy."""
    for name, text in recipe_files().items():
        (copy / PACKAGE).mkdir(exist_ok=True)
        (copy / PACKAGE / name).write_text(text)
    registry = copy / REGISTRY
    source = registry.read_text()
    registry.write_text(source.replace('    "reset_offsets",\n', '    "reset_offsets",\n    "pause",\n', 1))


def differences(left: Path, right: Path, below: Path = Path()) -> list[str]:
    """The files (relative paths) that differ between two trees, or are in one only; caches left out."""
    compared = filecmp.dircmp(left, right, ignore=["__pycache__"])
    found = [str(below / name) for name in compared.left_only + compared.right_only + compared.diff_files]
    for name in compared.common_dirs:
        found += differences(left / name, right / name, below / name)
    return sorted(found)


def test_the_page_gives_the_whole_package() -> None:
    assert sorted(recipe_files()) == ["__init__.py", "answers.py", "remediation.py", "wording.py"]


def test_a_throwaway_remediation_is_one_package_and_one_line_and_reaches_every_part(
    tmp_path: Path, redis_server: EmbeddedRedis
) -> None:
    copy = tmp_path / "tree"
    folders = [*source_roots(), ROOT / "tests"]
    for folder in folders:
        shutil.copytree(folder, copy / folder.name, ignore=shutil.ignore_patterns("__pycache__", ".hypothesis"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    add_pause(copy)

    changed = [d for f in folders for d in differences(f, copy / f.name, Path(f.name))]
    assert changed == sorted([str(PACKAGE), str(REGISTRY)]), "files touched to add a remediation"
    before = (ROOT / REGISTRY).read_text().splitlines()
    after = (copy / REGISTRY).read_text().splitlines()
    assert [line for line in after if line not in before] == ['    "pause",'] and len(after) == len(before) + 1

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(copy / r.name) for r in source_roots())}
    # The registry's own tests, unchanged, pass with the new remediation registered: no list of names to extend.
    pinned = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(Path("tests/remediations") / PLANS)],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    run = subprocess.run(
        [sys.executable, "-m", "tests.support.plugin_probe", redis_server.url],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)

    assert report["registry_file"] == str(copy / REGISTRY)
    assert report["pause_file"] == str(copy / PACKAGE / "remediation.py")
    assert report["names"] == ["restart", "scale", "drain", "reset_offsets", "pause"]
    # The policy schema: the rule's `remediations.pause:` section is the remediation's own Policy model.
    assert report["schema"] == {
        "model": "PausePolicy",
        "max_seconds": 45,
        "refused": [[["default", "remediations", "pause", "max_secs"], "Extra inputs are not permitted"]],
    }
    # `/lag remediate <group> pause [seconds]`: the remediation's own grammar.
    assert report["remediate"] == {
        "args": {"seconds": 40},
        "usage": "Usage: `/lag remediate <group> pause [seconds]`",
    }
    # `lagbot policy explain`: listed after the others, allowed here with what every remediation's policy carries.
    assert report["explain"] == [
        "  pause: allowed (low risk), 1 approval, no auto-approve, cooldown 30 min, proposals expire after 15 min"
    ]
    # The join (lagbot.service.remedies): the remedy of the cause its `answers` module names, and of no other; shown
    # so by `lagbot check`, in its lines and its JSON.
    assert report["join"] == {
        "rebalance_churn": "pause",
        "idle_members": None,
        "check_line": "  1. [rebalance_churn] members keep changing -> pause",
        "check_json": "pause",
    }
    # The service: proposed for the cause it addresses, approved, run, verified by its own `verify`.
    assert report["service"] == {
        "suggested": ["pause"],
        "summary": "Pause orders-consumer for 40 s",
        "skipped": [],
        "answer": ":white_check_mark: *Pause orders-consumer for 40 s* done: paused orders-consumer for 40 s",
        "state": "succeeded",
        "verified": ["resolved", "orders-consumer is no longer paused"],
    }
