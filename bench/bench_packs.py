"""Many writes on the pack write path: is the pack count bounded, and do reads stay as fast?

```sh
.venv/bin/python bench/bench_packs.py --writes 2000        # 10k-file memory, then 2000 writes
```

Builds a 10k-file memory, makes ``--writes`` CAS writes through the store (each
commit one small pack; the write that finds ``gitmem.git.engine.MAX_PACKS``
packs written since the last fold folds them, after letting the writer lock go
and before it returns), sampling the pack count as it goes (live packs, and
index files including folded packs, which a later fold deletes once
``packwrite.GRACE_SECONDS`` passed). Then compares reads on that memory against
a copy fully packed by ``git gc`` (the baseline: one pack, git's own layout),
alternating per sample, the same two files on both: a *fresh* read (a new store
handle, its first read: opens every pack index it needs) and a warm read (the
same handle again). Both are measured twice: in the writing process, where
libgit2 keeps the packs it already opened, and in a new reader process, which
has none of that (what another agent's process or a ``gitmem cat`` sees). With
``--snapshots``, the memory is also copied at every ``--progress`` point and
right after the last write (under the fold lock), as a reader finds it while
writes go on: the last fold's leftovers not yet deleted and the packs written
since it; each copy is read against its own ``git gc``'d copy in a new process.

Quick run::

    .venv/bin/python bench/bench_packs.py --files 2000 --writes 1500 --reads 30
"""

from __future__ import annotations

import argparse
import json
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
from gitmem import GitFileStore, SyncGitFileStore
from gitmem.git import engine, packwrite


def packs(path: str) -> int:
    """Every pack index in the folder: live packs and folded ones not yet deleted by a later fold."""
    return len([n for n in os.listdir(os.path.join(path, "objects", "pack")) if n.endswith(".idx")])


def read_times(
    path: str, packed: str, paths: list[str], rng: random.Random, n: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[float]]]:
    """:func:`read_samples` of the written memory (``"packs"``) and its gc'd copy (``"gc"``)."""
    return read_samples({"packs": path, "gc": packed}, paths, rng, n)


def read_samples(
    memories: dict[str, str], paths: list[str], rng: random.Random, n: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[float]]]:
    """``n`` samples of a fresh read (a new handle's first read) then a warm read (its second), on each memory.

    Every memory (label to path) reads the same two paths per sample, in random
    order. Returns wall times of the fresh reads, CPU times (this thread's) of
    the fresh reads and wall times of the warm reads, each by label.
    """
    fresh: dict[str, list[float]] = {label: [] for label in memories}
    cpu: dict[str, list[float]] = {label: [] for label in memories}
    warm: dict[str, list[float]] = {label: [] for label in memories}
    for _ in range(n):
        first, second = rng.choice(paths), rng.choice(paths)
        for label in rng.sample(list(memories), len(memories)):
            s = GitFileStore.open(memories[label]).sync
            c0, t0 = time.thread_time(), time.perf_counter()
            s.read(first)
            t1, c1 = time.perf_counter(), time.thread_time()
            s.read(second)
            t2 = time.perf_counter()
            fresh[label].append(t1 - t0)
            cpu[label].append(c1 - c0)
            warm[label].append(t2 - t1)
    return fresh, cpu, warm


def cold_read_times(
    path: str, packed: str, files: int, seed: int, n: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[float]]]:
    """:func:`read_times` in a new process: what another agent or a ``gitmem cat`` sees.

    libgit2 keeps the packs it opened for every handle of the writing process,
    so a fresh handle there is not a cold read; a reader process has none, on
    either memory.
    """
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--reader", path, packed, str(files), str(seed), str(n)],
        capture_output=True,
        text=True,
        check=True,
    )
    fresh, cpu, warm = json.loads(done.stdout)
    return fresh, cpu, warm


def snapshot(store: SyncGitFileStore, copy: str) -> tuple[str, int, int]:
    """The memory's folder as a reader finds it while writes go on, copied twice: ``copy.mid`` and ``copy`` (to gc).

    The fold lock keeps folds and their deletions out while it is copied.
    Returns ``copy``, the live packs and the index files.
    """
    with store.repo.fold_lock.hold("snapshot"):
        shutil.copytree(store.path, copy + ".mid")
    shutil.copytree(copy + ".mid", copy)
    return copy, packwrite.pack_count(copy), packs(copy)


def report(
    title: str, fresh: dict[str, list[float]], cpu: dict[str, list[float]], warm: dict[str, list[float]]
) -> None:
    print(title)
    for label, series in (("fresh read (new handle)", fresh), ("  its CPU time", cpu), ("warm read", warm)):
        a, b = statistics.median(series["packs"]) * 1000, statistics.median(series["gc"]) * 1000
        a95, b95 = (sorted(series[k])[int(0.95 * len(series[k]))] * 1000 for k in ("packs", "gc"))
        print(
            f"  {label:24} p50 packs {a:.3f} ms, after git gc {b:.3f} ms: {a / b:.2f}x  (p95 {a95:.3f} / {b95:.3f} ms)"
        )


def reads(title: str, path: str, packed: str, paths: list[str], rng: random.Random, n: int) -> None:
    report(f"{title} in the writing process:", *read_times(path, packed, paths, rng, n))
    report(f"{title} in a new reader process:", *cold_read_times(path, packed, len(paths), rng.randrange(1 << 30), n))


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
    parser.add_argument(
        "--snapshots",
        action="store_true",
        help="at every --progress point copy the memory as it is mid-burst; read each copy and its gc'd copy after",
    )
    parser.add_argument("--keep", help="write the memory (m.git) and its gc'd copy (gc.git) here and keep them")
    parser.add_argument("--reader", nargs=5, help=argparse.SUPPRESS)  # packs gc files seed n: the reader process
    args = parser.parse_args()
    if args.reader:
        path, packed, files, seed, n = args.reader
        paths = [bulk.layout_path(i) for i in range(int(files))]
        print(json.dumps(read_times(path, packed, paths, random.Random(int(seed)), int(n))))
        return 0
    base = args.keep or tempfile.mkdtemp(prefix="gitmem-bench-packs-")
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
        snapshots: list[tuple[str, int, int]] = []
        paused = 0.0  # spent copying snapshots, not writing
        started = time.perf_counter()
        for n in range(args.writes):
            p = rng.choice(paths)
            store.write(p, corpus.fresh(), expected=store.read(p).version)
            if n % 10 == 0:
                counts.append(packs(path))
                live.append(packwrite.pack_count(path))
            if args.progress and n % args.progress == 0 and n:
                if args.snapshots:
                    paused -= time.perf_counter()
                    snapshots.append(snapshot(store, os.path.join(base, f"at-{n}.git")))
                    paused += time.perf_counter()
                print(
                    f"  {n} writes, {time.perf_counter() - started:.0f} s: packs live {live[-1]}, "
                    f"index files {counts[-1]}, load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
        took = time.perf_counter() - started - paused
        snapshots.append(snapshot(store, os.path.join(base, "end.git")))
        packed = os.path.join(base, "gc.git")
        shutil.copytree(path, packed)
        subprocess.run(["git", "--git-dir", packed, "gc", "-q"], check=True)
        print(
            f"# {args.files} files, {args.writes} writes in {took:.1f} s ({took / args.writes * 1000:.1f} ms each), "
            f"MAX_PACKS={engine.MAX_PACKS}, load {os.getloadavg()[0]:.1f}"
        )
        print(
            f"live packs during the writes: max {max(live)}, median {statistics.median(live)}, "
            f"at the end {packwrite.pack_count(path)}; index files (with folded packs not yet deleted): "
            f"max {max(counts)}, median {statistics.median(counts)}, at the end {packs(path)}"
        )
        print(
            "copies taken while the writes went on (a fold's leftovers, the packs written since), in a new reader process:"
        )
        ratios: list[float] = []
        for copy, alive, listed in snapshots:
            subprocess.run(["git", "--git-dir", copy, "gc", "-q"], check=True)
            fresh, cpu, _ = cold_read_times(copy + ".mid", copy, len(paths), rng.randrange(1 << 30), args.reads)
            a, b = statistics.median(fresh["packs"]), statistics.median(fresh["gc"])
            ratios.append(a / b)
            print(
                f"  {os.path.basename(copy)[:-4]:9} live packs {alive:3}, index files {listed:3}: fresh read p50 "
                f"{a * 1000:.3f} ms, its gc'd copy {b * 1000:.3f} ms: {a / b:.2f}x "
                f"(CPU {statistics.median(cpu['packs']) / statistics.median(cpu['gc']):.2f}x)"
            )
            shutil.rmtree(copy, ignore_errors=True)
            shutil.rmtree(copy + ".mid", ignore_errors=True)
        print(f"  median over the copies: {statistics.median(ratios):.2f}x, most {max(ratios):.2f}x")
        reads("right after the writes,", path, packed, paths, rng, args.reads)
        if args.settle:
            time.sleep(packwrite.GRACE_SECONDS)
            store.repo.compact()
            print(
                f"after the grace and one more fold: live packs {packwrite.pack_count(path)}, index files {packs(path)}"
            )
            reads("then,", path, packed, paths, rng, args.reads)
        fsck = subprocess.run(["git", "--git-dir", path, "fsck", "--strict"], capture_output=True)
        print(f"git fsck --strict: {'clean' if fsck.returncode == 0 else 'FAILED'}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
