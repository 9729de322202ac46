"""The container image and the declared dependencies work as shipped.

No container engine runs here, so the Dockerfile is checked as text: a base pinned to the Debian release whose
archive has the JRE it installs, a numeric USER (Kubernetes' runAsNonRoot can only verify a number), and a
.dockerignore that keeps the virtualenv, the Kafka jars and the git history out of the build context.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

from tests.support.tree import package_folder

ROOT = Path(__file__).resolve().parents[2]

# Debian release -> the JRE packages its main archive ships (bookworm: 17; trixie dropped 17 for 21).
JRE_BY_RELEASE = {"bookworm": {"openjdk-17-jre-headless"}, "trixie": {"openjdk-21-jre-headless"}}


def instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction, continuation lines joined, comments dropped."""
    joined = dockerfile.replace("\\\n", " ")
    result = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), " ".join(rest.split())))
    return result


def test_every_stage_is_pinned_to_a_release_that_has_the_jre_it_installs() -> None:
    steps = instructions((ROOT / "Dockerfile").read_text())
    bases = [args.split()[0] for keyword, args in steps if keyword == "FROM"]
    assert bases == ["python:3.11-slim-bookworm", "python:3.11-slim-bookworm"]
    installs = " ".join(args for keyword, args in steps if keyword == "RUN" and "apt-get install" in args)
    wanted = {word for word in installs.split() if word.startswith("openjdk-")}
    assert wanted == {"openjdk-17-jre-headless"}
    assert wanted <= JRE_BY_RELEASE[bases[-1].rsplit("-", 1)[1]]


def test_the_image_runs_as_a_numeric_non_root_user_created_with_that_id() -> None:
    steps = instructions((ROOT / "Dockerfile").read_text())
    [user] = [args for keyword, args in steps if keyword == "USER"]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and gid.isdigit() and int(uid) > 0 and int(gid) > 0
    created = " ".join(args for keyword, args in steps if keyword == "RUN")
    assert f"--uid {uid}" in created and f"--gid {gid}" in created
    # The last instruction that matters for the runtime user comes after the install steps that need root.
    keywords = [keyword for keyword, _ in steps]
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k == "RUN")


def test_the_build_context_leaves_out_local_state() -> None:
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".git", ".venv", ".kafka", ".lagbot", "tests", "bench"} <= ignored
    copied = [args.split()[0] for keyword, args in instructions((ROOT / "Dockerfile").read_text()) if keyword == "COPY"]
    assert not any(source.rstrip("/") in ignored for source in copied if not source.startswith("--from"))


def dependencies(extra: str | None = None) -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return {req.name.lower(): req for req in map(Requirement, listed)}


def floor(req: Requirement) -> Version:
    [minimum] = [Version(spec.version) for spec in req.specifier if spec.operator == ">="]
    return minimum


def test_the_slack_sdk_floor_has_the_table_block_the_renderer_imports() -> None:
    # TableBlock (lagbot.slack.render's per-partition table) first shipped in slack-sdk 3.39.0.
    source = (package_folder("lagbot.slack") / "render.py").read_text()
    assert "TableBlock" in source
    assert floor(dependencies()["slack-sdk"]) >= Version("3.39.0")


def test_the_linters_have_upper_bounds_so_a_fresh_install_lints_the_same() -> None:
    dev = dependencies("dev")
    for tool in ("ruff", "mypy"):
        assert any(spec.operator == "<" for spec in dev[tool].specifier), tool
