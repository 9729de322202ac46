"""The layers of the `lagbot` package, read off the tree, and a check that imports only go down.

`lagbot` is one namespace package whose parts live in bot/lagbot/, remediations/lagbot/remediations/ and
policies/lagbot/policies/ (tests/support/tree.py): a file's path below its root is its import name. From
the bottom: the foundation (core), the engine that judges lag, the remediations, the policies that allow them, the
running service, Slack, the assembled `lagbot run` process, the command line, the dev kit, and on top the `lagbot`
command's entry point, which dispatches to all of them. A module may import its own layer and the layers below;
every import counts, also one inside a function or under TYPE_CHECKING. The layers are written once, as
import-linter contracts in pyproject.toml, which also see relative imports, Slack's libraries and cycles in a layer.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import lagbot
from tests.support.tree import ROOT, module_name, source_files, source_roots

CONTRACTS = {
    c["id"]: c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
}
"""The layer contracts, written once: pyproject.toml's [tool.importlinter] (run by `make lint` and below)."""

LAYERS = (
    *reversed(CONTRACTS["layers"]["layers"]),
    "lagbot.cli.main",  # the entry point: `lagbot demo` reaches the dev kit from here
)

# Imports that go up today, each with its reason (in pyproject.toml); the check fails on any other, and on one that is
# gone. The configuration file's schema holds the drain's and the executors' settings, which their remediation owns;
# those modules import nothing above the foundation (checked below).
ALLOWED_UP = {
    tuple(line.split(" -> ")): "pyproject.toml"
    for line in CONTRACTS["layers"]["ignore_imports"]
    if not line.startswith("lagbot.cli.main ")
}
SETTINGS_MODULES = tuple(sorted(imported for _importer, imported in ALLOWED_UP))


def sources() -> dict[str, Path]:
    return {module_name(p): p for p in source_files()}


def imported(path: Path) -> set[str]:
    """Every `lagbot` module this file imports, anywhere in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("lagbot"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lagbot"):
            assert node.level == 0, f"{path}: relative import"
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def layer(module: str) -> int:
    """The index of the most specific layer the module belongs to (-1: the package's own __init__)."""
    best, best_len = -1, -1
    for index, prefix in enumerate(LAYERS):
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
            best, best_len = index, len(prefix)
    return best


def upward_imports() -> dict[tuple[str, str], str]:
    modules = sources()
    found = {}
    for name, path in modules.items():
        for target in imported(path):
            if target not in modules:
                continue  # `from lagbot.x import name` also yields lagbot.x.name: only modules count
            if layer(target) > layer(name):
                found[(name, target)] = f"{LAYERS[layer(name)]} imports {LAYERS[layer(target)]}"
    return found


def test_the_import_contracts_hold() -> None:
    """import-linter's reading of every import, relative ones too: layers, Slack's libraries, no cycle in a layer."""
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Contracts: 3 kept, 0 broken." in run.stdout


def test_every_module_is_in_a_layer() -> None:
    unplaced = [name for name in sources() if layer(name) < 0 and name != "lagbot"]
    assert unplaced == []


def test_imports_only_go_down() -> None:
    found = upward_imports()
    assert sorted(set(found) - set(ALLOWED_UP)) == [], "imports that go up a layer"
    assert sorted(set(ALLOWED_UP) - set(found)) == [], "allowed upward imports that no longer exist: remove them"


@pytest.mark.parametrize("module", SETTINGS_MODULES)
def test_settings_modules_import_only_the_foundation(module: str) -> None:
    targets = {t for t in imported(sources()[module]) if t in sources()}
    assert sorted(t for t in targets if layer(t) > 0 and not t.startswith(module.rsplit(".", 1)[0])) == []


def test_the_tree_is_the_import_tree() -> None:
    """The installed modules are the files under the roots, by the same names: nothing maps one to the other."""
    installed = {
        info.name
        for info in pkgutil.walk_packages(lagbot.__path__, "lagbot.")
        if not info.name.startswith("lagbot.devkit.static")
    }
    assert installed | {"lagbot"} == set(sources()) | {"lagbot"}
    for name, path in sources().items():
        if name != "lagbot":
            spec = importlib.util.find_spec(name)
            assert spec is not None and spec.origin == str(path), name
    assert not hasattr(lagbot, "__file__") or lagbot.__file__ is None, "lagbot is a namespace package (PEP 420)"


def test_a_root_folder_is_no_package_of_its_own() -> None:
    """From the repository root, `import remediations.base` finds nothing instead of a second copy of the module."""
    for root in source_roots():
        assert not (root / "__init__.py").exists()
        assert sorted(p.name for p in root.iterdir() if p.name != "__pycache__") == ["lagbot"]


def test_the_readme_layout_names_every_package_folder_and_nothing_else() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Layout", 1)[1].split("```", 2)[1]
    named = {line.split()[0].rstrip("/") for line in block.splitlines() if line and not line.startswith(" ")}
    named.discard("bench")  # the last line lists the other folders together
    layers = {p.name for p in (ROOT / "bot" / "lagbot").iterdir() if (p / "__init__.py").exists()}
    folders = {"bot/lagbot/" + name for name in layers}
    assert named == folders | {"remediations/lagbot/remediations", "policies/lagbot/policies", "tests"}
    assert [p for p in ("bench", "docs", "deploy", "tools") if not (ROOT / p).is_dir()] == []


def test_no_test_module_imports_another_test_module() -> None:
    """Shared helpers live in helper modules (tests/support/bot_process.py, faults.py, *_rig.py, ...)."""
    offenders = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[-1].startswith("test_"):
                offenders.append(f"{path.relative_to(ROOT)} imports {node.module}")
    assert offenders == []


def test_the_tests_mirror_the_packages() -> None:
    """One test folder per layer package (tests/engine/ tests lagbot.engine, ...), plus tests/deploy/ for the image,
    manifests and wheel and tests/support/ for the shared rigs; test modules live only in those folders (and this
    one at the top), and the support folder holds no tests."""
    layers = {name.removeprefix("lagbot.") for name in LAYERS if name.count(".") == 1}
    folders = {p.name for p in (ROOT / "tests").iterdir() if (p / "__init__.py").exists()}
    assert folders == layers | {"deploy", "support"}
    for layer in layers:
        assert sorted((ROOT / "tests" / layer).glob("test_*.py")), f"tests/{layer}/ has no tests"
    stray = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("test_*.py")
        if p.parent.name not in folders - {"support"} and p.parent != ROOT / "tests"
    ]
    assert stray == []
    assert sorted(p.name for p in (ROOT / "tests").glob("test_*.py")) == ["test_layers.py"]
