"""What folding packs costs per write: in-process folds against ``git pack-objects`` folds, same run.

```sh
.venv/bin/python bench/fold_cost.py [--writes 600] [--rounds 2]
```

Each round makes ``--writes`` CAS writes to 50 files of a fresh memory twice,
once with small folds in-process (:mod:`gitmem.git.packfold`) and once with
every fold given to ``git pack-objects`` (``packfold.MAX_BYTES = 0``), in
alternating order. Prints per write: wall time, this process's CPU, the CPU of
git children (the folds' ``pack-objects``; a process's own CPU time leaves
them out), and per fold: packs folded and the fold's CPU and wall time.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gitmem import GitFileStore
from gitmem.git import packfold, packwrite


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def run(writes: int, in_process: bool) -> str:
    limit = packfold.MAX_BYTES
    packfold.MAX_BYTES = limit if in_process else 0
    folds: list[tuple[int, float, float]] = []
    compact = packwrite.compact

    def timed(*args: object) -> bool:
        sizes_before = len(os.listdir(os.path.join(str(args[0]), "objects", "pack")))
        cpu, wall = time.thread_time(), time.perf_counter()
        try:
            return compact(*args)  # type: ignore[arg-type]
        finally:
            folds.append((sizes_before, time.thread_time() - cpu, time.perf_counter() - wall))

    packwrite.compact = timed  # type: ignore[assignment]
    try:
        with tempfile.TemporaryDirectory(prefix="gitmem-fold-cost-") as tmp:
            store = GitFileStore.init(os.path.join(tmp, "m.git")).sync
            versions = {i: store.write(f"d{i % 7}/f{i}.md", f"x {i}\n" * 20, expected=None) for i in range(50)}
            folds.clear()
            children, own, wall = _cpu(resource.RUSAGE_CHILDREN), _cpu(resource.RUSAGE_SELF), time.perf_counter()
            for k in range(writes):
                i = k % 50
                versions[i] = store.write(f"d{i % 7}/f{i}.md", f"x {k}\n" * 20, expected=versions[i])
            wall = time.perf_counter() - wall
            own = _cpu(resource.RUSAGE_SELF) - own
            children = _cpu(resource.RUSAGE_CHILDREN) - children
    finally:
        packwrite.compact = compact
        packfold.MAX_BYTES = limit
    n = max(1, len(folds))
    fold_cpu = sum(f[1] for f in folds) / n * 1e3  # the folding thread's own CPU (git's child not included)
    fold_wall = sum(f[2] for f in folds) / n * 1e3
    return (
        f"{'in-process' if in_process else 'git       '}: per write wall {wall / writes * 1e3:.2f} ms, "
        f"own CPU {own / writes * 1e3:.2f} ms, git children CPU {children / writes * 1e3:.2f} ms, "
        f"total CPU {(own + children) / writes * 1e3:.2f} ms; {len(folds)} folds, each: thread CPU {fold_cpu:.1f} ms, "
        f"wall {fold_wall:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(f"# {args.writes} writes per run, load {os.getloadavg()[0]:.1f}")
    for r in range(args.rounds):
        for in_process in (True, False) if r % 2 == 0 else (False, True):
            print(run(args.writes, in_process), flush=True)
    print(f"# load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
