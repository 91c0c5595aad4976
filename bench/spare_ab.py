"""Spare files on and off in one process, in alternating blocks: what the pool saves per write, and what it costs.

```sh
.venv/bin/python bench/profile_write.py prep /tmp/pw        # a 10k-file memory (and the same as a directory)
.venv/bin/python bench/spare_ab.py /tmp/pw 400 [--fsync]     # 400 CAS writes per side, blocks of 25 alternating
.venv/bin/python bench/spare_ab.py /tmp/fresh 400 --fresh 60 # a new 60-file memory and directory made first
```

Each block does 25 CAS writes of random existing files with
``gitmem.git.spares.ENABLED`` on or off; the sides alternate so both see the
same machine load. Per write it records wall time and the *writing thread's*
CPU time; per block it records the *process* CPU time, taken after the filler
thread has topped the pool back up (so the filler's inode allocations of that
block are inside it). The difference between process CPU and writer CPU is what
ran on other threads: the filler (and, with ``--fsync``, the fsync pool). So
the report says how much of the saving is latency moved to the filler thread
and how much is CPU no longer spent at all. The directory store's write in the
same run is printed for the ratio the targets use.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import bulk
from bench.dirstore import DirStore
from gitmem import GitFileStore
from gitmem.git import spares
from gitmem.git.repo import set_durable

FILES = 10_000
BLOCK = 25


def _settle(path: str) -> None:
    """Wait until the filler has done what it was asked (its CPU then belongs to the block just run)."""
    pool = spares._pools[path]
    deadline = time.monotonic() + 10
    while (spares._wanted or pool.filling.locked()) and time.monotonic() < deadline:
        time.sleep(0.001)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


_filler = {"cpu": 0.0, "wall": 0.0, "made": 0}


def _measured_fill(pool: spares._Pool, up_to: int, **kw: bool) -> int:
    """The pool's own fill, with the CPU and wall time it takes per spare recorded (runs in the filler thread)."""
    before = len(pool.names)
    c, w = time.thread_time(), time.perf_counter()
    try:
        return _original_fill(pool, up_to, **kw)
    finally:
        _filler["cpu"] += time.thread_time() - c
        _filler["wall"] += time.perf_counter() - w
        _filler["made"] += max(0, len(pool.names) - before)


_original_fill = spares._fill
spares._fill = _measured_fill


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base")
    parser.add_argument("writes", type=int)
    parser.add_argument("--fsync", action="store_true")
    parser.add_argument("--fresh", type=int, default=0, help="make a new memory of this many files in BASE first")
    args = parser.parse_args()
    set_durable(args.fsync)
    git_path = os.path.join(args.base, "git")
    count = FILES
    if args.fresh:
        count = args.fresh
        GitFileStore.init(git_path)
        bulk.import_files(git_path, bulk.files(count))
        bulk.write_directory(os.path.join(args.base, "dir", "files"), bulk.files(count))
    store = GitFileStore.open(git_path).sync
    path = store.repo.path
    folder = DirStore(os.path.join(args.base, "dir"), fsync=args.fsync)
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    corpus = bulk.Corpus(seed=rng.randrange(1 << 30))
    paths = [bulk.layout_path(i) for i in range(count)]
    wall: dict[str, list[float]] = {"spares": [], "create": [], "dir": []}
    thread_cpu: dict[str, list[float]] = {"spares": [], "create": [], "dir": []}
    process_cpu: dict[str, float] = {"spares": 0.0, "create": 0.0, "dir": 0.0}
    spares.fill(path)
    blocks = max(1, args.writes // BLOCK)
    for block in range(2 * blocks):
        for side in (("spares", "create") if block % 2 == 0 else ("create", "spares")):
            spares.ENABLED = side == "spares"
            _settle(path) if spares.ENABLED else None
            started = time.process_time()
            for _ in range(BLOCK // 2):
                p = rng.choice(paths)
                version = store.read(p).version
                text = corpus.fresh()
                w, c = time.perf_counter(), time.thread_time()
                store.write(p, text, expected=version)
                wall[side].append(time.perf_counter() - w)
                thread_cpu[side].append(time.thread_time() - c)
            if spares.ENABLED:
                _settle(path)
            process_cpu[side] += time.process_time() - started
        started = time.process_time()
        for _ in range(BLOCK // 2):
            p = rng.choice(paths)
            version = folder.read(p).version
            text = corpus.fresh()
            w, c = time.perf_counter(), time.thread_time()
            folder.write(p, text, expected=version)
            wall["dir"].append(time.perf_counter() - w)
            thread_cpu["dir"].append(time.thread_time() - c)
        process_cpu["dir"] += time.process_time() - started
    store.repo.settle()
    print(f"fsync={'on' if args.fsync else 'off'}  writes per side: {len(wall['spares'])}  load: {os.getloadavg()[0]:.2f}")
    print(f"{'':8} {'wall p50':>9} {'wall p95':>9} {'thread CPU p50':>15} {'process CPU/write':>18}  (µs)")
    for side in ("create", "spares", "dir"):
        n = len(wall[side])
        print(
            f"{side:8} {statistics.median(wall[side]) * 1e6:9.0f} {_pct(wall[side], 0.95) * 1e6:9.0f} "
            f"{statistics.median(thread_cpu[side]) * 1e6:15.0f} {process_cpu[side] / n * 1e6:18.0f}"
        )
    s, c, d = (statistics.median(wall[k]) for k in ("spares", "create", "dir"))
    print(f"spares/create wall p50: {s / c:.2f}x   gitmem/dir wall p50: create {c / d:.2f}x, spares {s / d:.2f}x")
    moved = process_cpu["spares"] / len(wall["spares"]) - statistics.mean(thread_cpu["spares"])
    print(f"CPU on other threads per write with spares (the filler, fsync pool): {moved * 1e6:.0f} µs")
    made = max(1, _filler["made"])
    print(
        f"filler: {_filler['made']} spares made, {_filler['cpu'] / made * 1e6:.0f} µs CPU and "
        f"{_filler['wall'] / made * 1e6:.0f} µs wall per spare"
    )


if __name__ == "__main__":
    main()
