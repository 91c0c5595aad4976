"""Write latency tail with pack folds, for whichever gitmem is first on ``sys.path``.

A write that finds a fold due (every ``MAX_PACKS`` writes) folds before it
returns; it used to start the fold in a background thread. This times ``count``
CAS edits of random existing files in a copy of a 10k-file memory and prints
p50/p95/p99/max of wall time and p50 of the writing thread's CPU, each fold's
wall time (p50/max, in whichever thread ran it) and, over the
whole run, wall and *process* CPU per write (background threads and git children
included: a background fold's cost counted too) until every fold has finished.
Alternate two trees in one shell loop::

    .venv/bin/python bench/profile_write.py prep /tmp/pw        # once: the 10k-file memory
    for i in 1 2 3; do for t in /tmp/main-tree $PWD; do
        PYTHONPATH=$t .venv/bin/python bench/ab/foldtail.py /tmp/pw 1200
    done; done
"""

from __future__ import annotations

import gc
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time

from bench import bulk
from gitmem import GitFileStore
from gitmem.git import packwrite
from gitmem.git.repo import set_durable


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main(base: str, count: int, durable: bool) -> None:
    set_durable(durable)
    compact = packwrite.compact
    folds: list[float] = []  # each fold's wall time, in whichever thread ran it

    def counted(*args: object) -> bool:
        started = time.perf_counter()
        try:
            return compact(*args)  # type: ignore[arg-type]
        finally:
            folds.append(time.perf_counter() - started)

    packwrite.compact = counted  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "git")
        shutil.copytree(os.path.join(base, "git"), path, symlinks=True)
        store = GitFileStore.open(path).sync
        rng = random.Random(5)
        corpus = bulk.Corpus(seed=5)
        paths = [bulk.layout_path(i) for i in range(10_000)]  # profile_write.py prep's layout
        wall: list[float] = []
        cpu: list[float] = []
        live: list[int] = []
        gc.collect()
        run_wall, run_cpu, reading = time.perf_counter(), _cpu(), 0.0
        for i in range(count):
            target = rng.choice(paths)
            r = time.perf_counter()
            version = store.read(target).version
            text = corpus.fresh()
            t, c = time.perf_counter(), time.thread_time()
            reading += t - r
            store.write(target, text, expected=version)
            cpu.append(time.thread_time() - c)
            wall.append(time.perf_counter() - t)
            if i % 7 == 0:
                live.append(packwrite.pack_count(path))
        getattr(store.repo, "settle", lambda: None)()  # a tree whose folds ran in the background
        run_wall, run_cpu = time.perf_counter() - run_wall - reading, _cpu() - run_cpu
    load = os.getloadavg()[0]
    import gitmem

    ms = [1000 * w for w in wall]
    print(f"{os.path.dirname(os.path.dirname(gitmem.__file__))}: ", end="")
    print(
        f"p50_ms={statistics.median(ms):.3f} p95_ms={_pct(ms, 95):.3f} p99_ms={_pct(ms, 99):.3f} "
        f"max_ms={max(ms):.1f} cpu_p50_ms={1000 * statistics.median(cpu):.3f} "
        f"run_wall_per_write_ms={1000 * run_wall / count:.3f} run_cpu_per_write_ms={1000 * run_cpu / count:.3f} "
        f"folds={len(folds)} fold_p50_ms={1000 * statistics.median(folds):.2f} "
        f"fold_max_ms={1000 * max(folds):.1f} max_live_packs={max(live)} load={load:.2f}"
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1200, "--durable" in sys.argv[3:])
