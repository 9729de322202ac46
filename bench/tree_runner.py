"""Run `lagbot` from another source tree (e.g. `git archive` of an earlier commit): `tree_runner.py TREE ARGS...`.

Trees from before the re-layout have top-level `bot`, `remediations` and `policies` packages; later trees installed
bot/ as `lagbot` with remediations/ and policies/ under it (setuptools' package-dir), which is mapped here by hand;
today's trees hold `lagbot` as a namespace package under the three roots, which go first on sys.path. Either way
nothing from the installed tree is imported instead.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _package(name: str, folder: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


def main() -> None:
    tree = Path(sys.argv[1]).resolve()
    sys.argv = ["lagbot", *sys.argv[2:]]
    if (tree / "bot" / "lagbot").is_dir():  # one namespace package under three roots
        sys.path[:0] = [str(tree / root) for root in ("bot", "remediations", "policies")]
        entry = "lagbot.cli.main"
    elif (tree / "bot" / "cli.py").exists():  # the flat layout
        sys.path.insert(0, str(tree))
        entry = "bot.cli"
    else:
        _package("lagbot", tree / "bot")
        _package("lagbot.remediations", tree / "remediations")
        _package("lagbot.policies", tree / "policies")
        entry = "lagbot.cli.main"
    importlib.import_module(entry).main()


if __name__ == "__main__":
    main()
