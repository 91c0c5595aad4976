"""Write latency tail with pack folds, for whichever gitmem is first on ``sys.path``.

A write that finds a fold due (every ``MAX_PACKS`` writes) folds before it
returns; it used to start the fold in a background thread. This times ``count``
CAS edits of random existing files in a copy of a 10k-file memory and prints
p50/p95/p99/max of wall time and p50 of the writing thread's CPU, each fold's
wall time (p50/max, in whichever thread ran it), the most live packs seen, and,
over the whole run, wall and *process* CPU per write (background threads and git
children included: a background fold's cost counted too) until every fold has
finished. With ``--procs N``, N processes write the same memory at once (each
``count`` writes; the numbers cover them all).
Alternate two trees in one shell loop::

    .venv/bin/python bench/profile_write.py prep /tmp/pw        # once: the 10k-file memory
    for i in 1 2 3; do for t in /tmp/main-tree $PWD; do
        PYTHONPATH=$t .venv/bin/python bench/ab/foldtail.py /tmp/pw 1200
    done; done
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import os
import random
import resource
import shutil
import statistics
import tempfile
import time
from typing import Any

from bench import bulk
from gitmem import GitFileStore, MemoryStoreError
from gitmem.git import packwrite
from gitmem.git.repo import set_durable


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _writes(path: str, count: int, seed: int) -> tuple[list[float], list[float], list[int], list[float]]:
    """``count`` CAS edits of random files: each write's wall and thread CPU, live packs every 7th, each fold's wall."""
    compact = packwrite.compact
    folds: list[float] = []  # each fold's wall time, in whichever thread ran it

    def counted(*args: object) -> bool:
        started = time.perf_counter()
        try:
            return compact(*args)  # type: ignore[arg-type]
        finally:
            folds.append(time.perf_counter() - started)

    packwrite.compact = counted  # type: ignore[assignment]
    store = GitFileStore.open(path).sync
    rng = random.Random(seed)
    corpus = bulk.Corpus(seed=seed)
    paths = [bulk.layout_path(i) for i in range(10_000)]  # profile_write.py prep's layout
    wall: list[float] = []
    cpu: list[float] = []
    live: list[int] = []
    gc.collect()
    for i in range(count):
        target = rng.choice(paths)
        version = store.read(target).version
        text = corpus.fresh()
        t, c = time.perf_counter(), time.thread_time()
        try:
            store.write(target, text, expected=version)
        except MemoryStoreError as exc:  # another process wrote it since our read (several writers)
            if exc.code != "version_mismatch":
                raise
        cpu.append(time.thread_time() - c)
        wall.append(time.perf_counter() - t)
        if i % 7 == 0:
            live.append(packwrite.pack_count(path))
    getattr(store.repo, "settle", lambda: None)()  # a tree whose folds ran in the background
    packwrite.compact = compact  # type: ignore[assignment]
    return wall, cpu, live, folds


def _worker(path: str, count: int, seed: int, out: Any) -> None:
    out.put(_writes(path, count, seed))


def main(base: str, count: int, durable: bool, procs: int) -> None:
    set_durable(durable)
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "git")
        shutil.copytree(os.path.join(base, "git"), path, symlinks=True)
        ctx = mp.get_context("fork")
        out = ctx.Queue()
        others = [ctx.Process(target=_worker, args=(path, count, 100 + k, out)) for k in range(procs - 1)]
        run_wall, run_cpu = time.perf_counter(), _cpu()
        for proc in others:
            proc.start()
        wall, cpu, live, folds = _writes(path, count, 5)
        for _ in others:
            w, c, lv, f = out.get()
            wall, cpu, live, folds = wall + w, cpu + c, live + lv, folds + f
        for proc in others:
            proc.join()
        run_wall, run_cpu = time.perf_counter() - run_wall, _cpu() - run_cpu
    load = os.getloadavg()[0]
    import gitmem

    ms = [1000 * w for w in wall]
    print(f"{os.path.dirname(os.path.dirname(gitmem.__file__))}: ", end="")
    print(
        f"procs={procs} p50_ms={statistics.median(ms):.3f} p95_ms={_pct(ms, 95):.3f} p99_ms={_pct(ms, 99):.3f} "
        f"max_ms={max(ms):.1f} cpu_p50_ms={1000 * statistics.median(cpu):.3f} "
        f"run_wall_per_write_ms={1000 * run_wall / len(ms):.3f} run_cpu_per_write_ms={1000 * run_cpu / len(ms):.3f} "
        f"folds={len(folds)} fold_p50_ms={1000 * statistics.median(folds):.2f} "
        f"fold_max_ms={1000 * max(folds):.1f} max_live_packs={max(live)} load={load:.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("base", help="a folder made by `bench/profile_write.py prep`")
    parser.add_argument("count", type=int, nargs="?", default=1200, help="writes per process")
    parser.add_argument("--durable", action="store_true")
    parser.add_argument("--procs", type=int, default=1, help="processes writing the same memory at once")
    args = parser.parse_args()
    main(args.base, args.count, args.durable, args.procs)
