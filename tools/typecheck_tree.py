"""Lay out the sources under their installed name for mypy: build/typecheck/lagbot.

pyproject.toml installs bot/ as `lagbot`, remediations/ as `lagbot.remediations` and policies/ as
`lagbot.policies` (setuptools' package-dir). mypy finds modules by folder names only, so this links each entry of
bot/ and the two other folders into one `lagbot` folder (symbolic links: nothing is copied, errors point at the
sources through the links). Run from the project root; idempotent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "build" / "typecheck" / "lagbot"


def main() -> None:
    if TREE.exists():
        shutil.rmtree(TREE)
    TREE.mkdir(parents=True)
    for entry in sorted((ROOT / "bot").iterdir()):
        if entry.name != "__pycache__":
            (TREE / entry.name).symlink_to(entry)
    for folder in ("remediations", "policies"):
        (TREE / folder).symlink_to(ROOT / folder)


if __name__ == "__main__":
    main()
