"""The README and docs/ cannot rot: every shell command they show is one that runs, and every file they name exists.

Each line of a ```sh block is, by its first word: a `lagbot` command, parsed by lagbot's own command line (its
command, options and values must be accepted) and, when it needs neither Slack nor a cluster, run; a `make` target of
the Makefile; an install (`python3 -m venv`, `pip install`), whose extras must be pyproject.toml's; or one of the
commands that need what this machine has not (`export` of a secret, `docker`, `kubectl`, `venv-pack`), listed in
`NEEDS` with what they need. Any other command fails the test, so a new one is sorted here.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from lagbot.cli.main import command_line
from lagbot.cli.parsing import UsageError

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NEEDS = {
    "export": "a Slack workspace (its tokens)",
    "docker": "a container engine",
    "kubectl": "a Kubernetes cluster",
}
PLACEHOLDERS = {"PORT": "9092", "G": "orders"}


def shell_lines(path: Path) -> list[str]:
    """The commands of a document's sh blocks: comments dropped, continuation lines joined."""
    lines, inside = [], False
    for raw in path.read_text().splitlines():
        stripped = raw.strip()
        if stripped.startswith("```"):
            inside = stripped in ("```sh", "```bash", "```shell", "```console") if not inside else False
            continue
        if inside:
            lines.append(raw)
    joined = "\n".join(lines).replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(" ".join(shlex.quote(w) for w in words))
    return commands


def steps(command: str) -> list[list[str]]:
    """A command line cut at `&&` and `|` into its commands' words."""
    out: list[list[str]] = [[]]
    for word in shlex.split(command):
        if word in ("&&", "|"):
            out.append([])
        else:
            out[-1].append(PLACEHOLDERS.get(word, word))
    return [words for words in out if words]


ALL = [(path.relative_to(ROOT).as_posix(), command) for path in DOCS for command in shell_lines(path)]


def make_targets() -> set[str]:
    return set(re.findall(r"^([a-zA-Z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))


def extras() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def lagbot_argv(words: list[str]) -> list[str] | None:
    program = Path(words[0]).name
    return words[1:] if program == "lagbot" else None


def optional_forms(argv: list[str]) -> list[list[str]]:
    """`[--json]` in a doc means with and without it."""
    if not any(w.startswith("[") and w.endswith("]") for w in argv):
        return [argv]
    without = [w for w in argv if not (w.startswith("[") and w.endswith("]"))]
    with_it = [w.strip("[]") for w in argv]
    return [without, with_it]


@pytest.mark.parametrize(("doc", "command"), ALL, ids=[f"{d}: {c[:60]}" for d, c in ALL])
def test_every_command_in_the_docs_runs_or_says_what_it_needs(doc: str, command: str) -> None:
    for words in steps(command):
        argv = lagbot_argv(words)
        if argv is not None:
            for form in optional_forms(argv):
                try:
                    command_line().parse_args(form)
                except UsageError as exc:
                    pytest.fail(f"{doc}: `{command}`: lagbot refuses it: {exc}")
        elif words[0] == "make":
            assert words[1] in make_targets(), f"{doc}: no make target {words[1]!r}"
        elif words[0] in ("python", "python3") and words[1:3] == ["-m", "venv"]:
            continue
        elif Path(words[0]).name == "pip" and words[1] == "install":
            for target in words[2:]:
                found = re.fullmatch(r"\.?\[([\w,-]+)\]", target)
                if found:
                    assert set(found.group(1).split(",")) <= extras(), f"{doc}: unknown extra in {target}"
        elif words[0] in NEEDS or Path(words[0]).name in ("venv-pack", "jq"):
            continue
        else:
            pytest.fail(f"{doc}: `{command}`: sort `{words[0]}` here (runs, or needs what?)")


def test_the_commands_that_need_neither_slack_nor_a_cluster_run() -> None:
    """`lagbot policy validate` on the shipped policy, and every command's --help, as the docs show them."""
    ran = 0
    for _, command in ALL:
        for words in steps(command):
            argv = lagbot_argv(words)
            if argv is None:
                continue
            done = subprocess.run(
                [sys.executable, "-m", "lagbot.cli.main", *argv[:1], "--help"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert (done.returncode, done.stderr) == (0, ""), command
            ran += 1
    assert ran >= 10
    policy = ROOT / "policies" / "lagbot" / "policies" / "default.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "lagbot.cli.main", "policy", "validate", str(policy)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"{policy}: valid: 0 rules (and the default)\n"), done.stderr


PATH = re.compile(r"`((?:tests|bench|docs|deploy|tools|bot|remediations|policies|examples)/[\w./-]+)`")
TEST_FILE = re.compile(r"`(test_[\w]+\.py)`")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_file_the_docs_name_exists(doc: Path) -> None:
    text = doc.read_text()
    missing = [p for p in PATH.findall(text) if not (ROOT / p.rstrip(".")).exists()]
    tests = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    missing += [name for name in TEST_FILE.findall(text) if name not in tests]
    assert missing == []
