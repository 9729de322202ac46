"""What each way of installing lagbot puts on disk: one fresh virtual environment per extra, measured in MB.

    .venv/bin/python bench/extras.py                      # every row below, from this checkout
    .venv/bin/python bench/extras.py --only base,drain    # some of them

Each row is `pip install '<checkout>[extras]'` (not editable: what a pip user gets) into a new venv under a temporary
folder, with pip's cache as it is (the figures are sizes, not times). Installed MB is the venv's size less an empty
venv's (pip and setuptools); the biggest distributions are listed beside it. Needs the network (PyPI) or a warm cache.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PathDistribution
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROWS = {
    "base": "",  # lagbot check and the Slack bot (lagbot run), no Spark
    "drain": "drain",  # + PySpark with its jars (local[*] or spark-submit; Java 17+)
    "drain-connect": "drain-connect",  # + the Spark Connect client only (no jars, no Java)
    "embedded": "embedded",  # + the demo's broker (Tansu) and redis-server
    "dev": "dev",  # everything `make install` puts in .venv
}


def size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


def site_packages(venv: Path) -> Path:
    return next(venv.glob("lib/python*/site-packages"))


def biggest(venv: Path, top: int = 4) -> list[tuple[str, float]]:
    """The largest installed distributions (name, MB), by the files their RECORD lists."""
    site = site_packages(venv)
    found = []
    for info in site.glob("*.dist-info"):
        dist = PathDistribution(info)
        total = sum((site / str(f)).stat().st_size for f in dist.files or () if (site / str(f)).is_file())
        found.append((dist.metadata["Name"], total / 1e6))
    return sorted(found, key=lambda item: -item[1])[:top]


def make_venv(path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)


def measure(extras: str, work: Path, empty: float) -> tuple[float, float, list[tuple[str, float]]]:
    venv = work / (extras or "base")
    make_venv(venv)
    target = f"{ROOT}[{extras}]" if extras else str(ROOT)
    began = time.monotonic()
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", target],
        check=True,
    )
    return size_mb(venv) - empty, time.monotonic() - began, biggest(venv)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated rows: " + ", ".join(ROWS))
    args = parser.parse_args()
    rows = [r for r in (args.only.split(",") if args.only else ROWS) if r in ROWS]
    with tempfile.TemporaryDirectory(prefix="lagbot-extras-") as folder:
        work = Path(folder)
        make_venv(work / "empty")
        empty = size_mb(work / "empty")
        print(f"{'install':<32} {'MB':>7} {'s':>6}  biggest")
        for row in rows:
            extras = ROWS[row]
            mb, seconds, top = measure(extras, work, empty)
            name = f"pip install 'lagbot[{extras}]'" if extras else "pip install lagbot"
            listed = ", ".join(f"{n} {m:.0f}" for n, m in top)
            print(f"{name:<32} {mb:7.0f} {seconds:6.0f}  {listed}", flush=True)


if __name__ == "__main__":
    main()
