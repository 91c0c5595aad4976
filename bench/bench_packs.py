"""Many writes on the pack write path: is the pack count bounded, and do reads stay as fast?

```sh
.venv/bin/python bench/bench_packs.py --writes 2000        # 10k-file memory, then 2000 writes
```

Builds a 10k-file memory, makes ``--writes`` CAS writes through the store (each
commit one small pack, folded in the background once ``MAX_PACKS`` were
written: in-process for small packs, else by ``git pack-objects --stdin-packs``),
sampling the pack count as it goes (live packs, and index files including folded
packs, which a later fold deletes once ``packwrite.GRACE_SECONDS`` passed). Then
compares reads on that memory against a copy fully packed by ``git gc`` (what a memory written with
loose objects and gc'd looks like, today's read path), alternating per sample:
a *fresh* read (a new store handle, its first read: opens every pack index it
needs) and a warm read (the same handle again).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import bulk
from gitmem import GitFileStore
from gitmem.git import packwrite
from gitmem.git import repo as gitrepo


def packs(path: str) -> int:
    """Every pack index in the folder: live packs and folded ones not yet deleted by a later fold."""
    return len([n for n in os.listdir(os.path.join(path, "objects", "pack")) if n.endswith(".idx")])


def read_times(
    path: str, packed: str, paths: list[str], rng: random.Random, n: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    fresh: dict[str, list[float]] = {"packs": [], "gc": []}
    warm: dict[str, list[float]] = {"packs": [], "gc": []}
    for _ in range(n):
        p = rng.choice(paths)
        for kind in rng.sample(["packs", "gc"], 2):
            s = GitFileStore.open(path if kind == "packs" else packed).sync
            t0 = time.perf_counter()
            s.read(p)
            t1 = time.perf_counter()
            s.read(rng.choice(paths))
            t2 = time.perf_counter()
            fresh[kind].append(t1 - t0)
            warm[kind].append(t2 - t1)
    return fresh, warm


def report(title: str, fresh: dict[str, list[float]], warm: dict[str, list[float]]) -> None:
    print(title)
    for label, series in (("fresh read (new handle)", fresh), ("warm read", warm)):
        a, b = statistics.median(series["packs"]) * 1000, statistics.median(series["gc"]) * 1000
        print(f"  {label:24} packs {a:.3f} ms, after git gc {b:.3f} ms: {a / b:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--progress", type=int, default=0, help="print the pack counts every N writes")
    parser.add_argument(
        "--settle",
        action="store_true",
        help="also read after the grace and one more fold (which deletes the folded packs)",
    )
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="gitmem-bench-packs-")
    try:
        path = os.path.join(base, "m.git")
        GitFileStore.init(path)
        bulk.import_files(path, bulk.files(args.files))
        store = GitFileStore.open(path).sync
        rng = random.Random(5)
        corpus = bulk.Corpus(seed=6)
        paths = [bulk.layout_path(i) for i in range(args.files)]
        counts: list[int] = []
        live: list[int] = []
        started = time.perf_counter()
        for n in range(args.writes):
            p = rng.choice(paths)
            store.write(p, corpus.fresh(), expected=store.read(p).version)
            if n % 10 == 0:
                counts.append(packs(path))
                live.append(packwrite.pack_count(path))
            if args.progress and n % args.progress == 0 and n:
                print(
                    f"  {n} writes, {time.perf_counter() - started:.0f} s: packs live {live[-1]}, "
                    f"index files {counts[-1]}, load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        took = time.perf_counter() - started
        store.repo.settle()
        packed = os.path.join(base, "gc.git")
        shutil.copytree(path, packed)
        subprocess.run(["git", "--git-dir", packed, "gc", "-q"], check=True)
        print(
            f"# {args.files} files, {args.writes} writes in {took:.1f} s ({took / args.writes * 1000:.1f} ms each), "
            f"MAX_PACKS={gitrepo.MAX_PACKS}, load {os.getloadavg()[0]:.1f}"
        )
        print(
            f"live packs during the writes: max {max(live)}, median {statistics.median(live)}, "
            f"at the end {packwrite.pack_count(path)}; index files (with folded packs not yet deleted): "
            f"max {max(counts)}, median {statistics.median(counts)}, at the end {packs(path)}"
        )
        report("right after the writes:", *read_times(path, packed, paths, rng, args.reads))
        if args.settle:
            time.sleep(packwrite.GRACE_SECONDS)
            store.repo.compact()
            print(
                f"after the grace and one more fold: live packs {packwrite.pack_count(path)}, index files {packs(path)}"
            )
            report("then:", *read_times(path, packed, paths, rng, args.reads))
        fsck = subprocess.run(["git", "--git-dir", path, "fsck", "--strict"], capture_output=True)
        print(f"git fsck --strict: {'clean' if fsck.returncode == 0 else 'FAILED'}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
