"""The source tree as the tests read it: the roots of the `lagbot` namespace package, named once in pyproject.toml.

Each root (bot/, remediations/, policies/) holds its part of `lagbot`, so a module's path below its root is its
import name: bot/lagbot/engine/rules.py is lagbot.engine.rules.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def source_roots() -> tuple[Path, ...]:
    """The folders the wheel takes `lagbot` from and the editable install puts on sys.path (pyproject.toml)."""
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    return tuple(ROOT / name for name in wheel["sources"])


def module_name(path: Path) -> str:
    """The import name of a source file under one of the roots."""
    for root in source_roots():
        if path.is_relative_to(root):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            return ".".join(parts)
    raise ValueError(f"{path} is under no source root")


def source_files() -> list[Path]:
    """Every product module, sorted."""
    return sorted(p for root in source_roots() for p in (root / "lagbot").rglob("*.py") if "__pycache__" not in p.parts)


def package_folder(package: str) -> Path:
    """The folder of a `lagbot` package (`lagbot.policies` -> policies/lagbot/policies)."""
    parts = package.split(".")
    for root in source_roots():
        folder = root.joinpath(*parts)
        if (folder / "__init__.py").exists():
            return folder
    raise ValueError(f"no folder holds {package}")
