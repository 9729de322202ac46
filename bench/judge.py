"""Benchmark: the judging half of a check cycle (`store.windows` + `judge`) at 2,000 groups x 50 partitions x 30
samples, in process, on synthetic windows (no broker): what `Checker.evaluate` does besides asking the cluster.

Histories (--history):
- moving: offsets move every sample; committed offsets are far behind, so lag in seconds is a lower bound;
- still: committed offsets never move: STOP in a third of the groups (Empty), STALL in the others, half of those
  with two members (every owned partition is a candidate of the sibling rule);
- either with `+index`: four time-index points per partition, as `lagbot run` asks by default.

`--tree DIR` judges with the lagbot of another source tree (e.g. `git archive` of an earlier commit), so the code
before and after a change can be run alternately on the same histories. `--digest` prints a hash of the verdicts'
`repr` (causes and reasons included): equal hashes, equal verdicts.

    .venv/bin/python bench/judge.py [--history moving|still|moving+index|still+index] [--passes 3] [--tree DIR]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GROUPS, PARTITIONS, SAMPLES, GROUPS_PER_TOPIC = 2_000, 50, 30, 20
HORIZONS = (3600.0, 900.0, 300.0, 60.0)


def use_tree(tree: Path) -> None:
    """Import `lagbot` from `tree` instead of the installed one (its three roots, or an older tree's bot/)."""
    if (tree / "bot" / "lagbot").is_dir():
        sys.path[:0] = [str(tree.resolve() / root) for root in ("bot", "remediations", "policies")]
        return
    link = Path(tempfile.mkdtemp(prefix="lagbot-tree-"))
    (link / "lagbot").symlink_to(tree.resolve() / "bot")
    sys.path.insert(0, str(link))


def build(history: str) -> tuple[Any, Any, Any, float, Any]:
    """The store with full windows, the newest snapshot, the settings, `now` and the time index's points (or None)."""
    from lagbot.core.config import build_settings
    from lagbot.core.model import ClusterSnapshot, GroupSnapshot, GroupState, Member
    from lagbot.engine.timeindex import IndexPoint
    from lagbot.engine.window import MemoryWindowStore

    still = history.startswith("still")
    store = MemoryWindowStore(samples=SAMPLES)
    topics = [f"topic-{i}" for i in range(GROUPS // GROUPS_PER_TOPIC)]
    snapshot: Any = None
    for n in range(SAMPLES):
        groups, log_end = {}, {}
        for g in range(GROUPS):
            topic = topics[g // GROUPS_PER_TOPIC]
            committed = {(topic, p): 1_000_000 + (0 if still else n * 10) + p for p in range(PARTITIONS)}
            state, members = GroupState.STABLE, ()
            if still and g % 3 == 0:
                state = GroupState.EMPTY
            elif still and g % 3 == 1:
                members = tuple(
                    Member(f"m{k}", f"c{k}", "h", tuple((topic, p) for p in range(k, PARTITIONS, 2))) for k in (0, 1)
                )
            groups[f"g{g}"] = GroupSnapshot(f"g{g}", state, members, committed, generation=1)
        for topic in topics:
            for p in range(PARTITIONS):
                log_end[(topic, p)] = 2_000_000 + n * 20 + p
        snapshot = ClusterSnapshot("c", 1000.0 + n * 60, groups, log_end, {})
        store.append(snapshot)
    settings = build_settings({"clusters": [{"name": "c", "bootstrap_servers": "127.0.0.1:1"}]}, source="bench")
    now = snapshot.taken_at + 5.0
    points = None
    if history.endswith("+index"):
        points = {
            (t, p): tuple(
                IndexPoint(now - h, end - int(h * 0.4) if h < 3600 else (None if p % 5 == 0 else 1_000_000 + p - 30), h)
                for h in HORIZONS
            )
            for (t, p), end in snapshot.log_end.items()
        }
    return store, snapshot, settings, now, points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--history", default="moving", choices=["moving", "still", "moving+index", "still+index"])
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--tree", type=Path, help="judge with the lagbot of this source tree")
    parser.add_argument("--digest", action="store_true", help="print a hash of the verdicts")
    args = parser.parse_args()
    if args.tree is not None:
        use_tree(args.tree)
    from lagbot.engine.check import judge, tune_gc

    tune_gc()
    store, snapshot, settings, now, points = build(args.history)
    names = sorted(snapshot.groups)
    walls, windows_s, cpus = [], [], []
    for _ in range(args.passes):
        gc.collect()
        cpu, started = time.process_time(), time.perf_counter()
        windows = store.windows("c", names)
        read = time.perf_counter()
        verdicts = judge(snapshot, windows, settings, now=now, history=points)
        walls.append(time.perf_counter() - started)
        windows_s.append(read - started)
        cpus.append(time.process_time() - cpu)
        del windows, verdicts
    median = statistics.median
    source = "installed" if args.tree is None else args.tree.name
    print(
        f"{source} {args.history}: windows + judge {median(walls):.2f} s median (windows {median(windows_s):.2f} s), "
        f"CPU {median(cpus):.2f} s, passes {[round(w, 2) for w in walls]}; load {os.getloadavg()[0]:.1f}"
    )
    if args.digest:
        text = repr(judge(snapshot, store.windows("c", names), settings, now=now, history=points))
        print(f"verdicts sha256 {hashlib.sha256(text.encode()).hexdigest()}")


if __name__ == "__main__":
    main()
