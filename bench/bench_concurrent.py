"""Concurrent writers: total throughput of 4 processes writing one memory, against the commit floor and a directory.

```sh
.venv/bin/python bench/bench_concurrent.py                 # 10k files, 4 writers x 100 writes, 3 rounds
.venv/bin/python bench/bench_concurrent.py --writers 4 --writes 50 --rounds 2 --fsync
.venv/bin/python bench/bench_concurrent.py --threads       # writers as threads of one process
TMPDIR=/mnt/ext4 .venv/bin/python bench/bench_concurrent.py   # on another file system
```

Each writer is its own process with its own store handle and writes CAS edits of
random files out of its own share of the paths (no conflicts), as fast as it can.
All writers start together (a go file); throughput = all writes / (last writer
done - go); each write's own wall time gives p50 and p95 (medians over rounds).
CPU per write = the writers' CPU time from the go to their last write, over all
writes. Three contenders run in rotating order each round, with equal durability
(``--fsync``: the mount made durable, fsync on the others):

- ``git``: gitmem, every write one commit under the mount's writer lock;
- ``floor``: the commit floor (``bench/floor.py``): the same lock, creates,
  renames and fsyncs per write with precomputed bytes, one shared folder;
- ``dir``: the directory store (``bench/dirstore.py``), which keeps no history.

Every acknowledged write is checked on ``main`` at the end (nothing lost).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import bulk
from bench.dirstore import DirStore
from bench.floor import CommitFloor
from gitmem import GitFileStore
from gitmem.fileformat import DEFAULT_FORMAT, encode_text


def writer(kind: str, base: str, wid: int, writers: int, writes: int, files: int, fsync: bool, go: str) -> None:
    rng = random.Random(wid * 7919 + int.from_bytes(os.urandom(4), "big"))
    corpus = bulk.Corpus(seed=rng.randrange(1 << 30))
    paths = [bulk.layout_path(i) for i in range(files) if i % writers == wid]
    if kind == "dir":
        d = DirStore(os.path.join(base, "dir"), fsync=fsync)
        read, write = d.read, d.write
    elif kind == "floor":
        floor = CommitFloor(os.path.join(base, "floor"))
        floor.fsync = fsync

        def read(p: str) -> object:
            return type("V", (), {"version": p})()

        def write(p: str, text: str, *, expected: object) -> str:
            floor.write()
            floor.tidy()
            return p
    else:
        s = GitFileStore.open(os.path.join(base, "git")).sync
        read, write = s.read, s.write
    versions = {p: read(p).version for p in rng.sample(paths, min(len(paths), writes))}
    chosen = list(versions)
    # Both stores validate a write with the same code, whose first call imports its parsers
    # (~30 ms of CPU): done before the go, so a fresh process's start-up is not timed.
    encode_text(corpus.fresh(), DEFAULT_FORMAT)
    while not os.path.exists(go):
        time.sleep(0.0005)
    cpu = time.process_time()
    took = []
    for n in range(writes):
        p = chosen[n % len(chosen)]
        text = corpus.fresh()
        t = time.perf_counter()
        versions[p] = write(p, text, expected=versions[p])
        took.append(time.perf_counter() - t)
    if kind == "git":
        with open(f"{go}.acked", "a") as out:  # what was acknowledged: checked on main at the end
            out.write("".join(f"{p} {v}\n" for p, v in versions.items()))
    with open(f"{go}.lat", "a") as out:  # one line per writer: its writes' latencies (one write() call each)
        out.write(" ".join(f"{x:.6f}" for x in took) + "\n")
    if threading.current_thread() is not threading.main_thread():
        return
    with open(f"{go}.cpu", "a") as out:  # this process's CPU seconds for its writes (and others' it committed)
        out.write(f"{time.process_time() - cpu}\n")


def latencies(go: str) -> tuple[float, float]:
    """p50 and p95 of one write's wall time (ms), over every writer's writes."""
    with open(f"{go}.lat") as fh:
        took = sorted(float(x) for line in fh for x in line.split())
    return took[len(took) // 2] * 1e3, took[min(len(took) - 1, int(len(took) * 0.95))] * 1e3


def one(
    kind: str, base: str, writers: int, writes: int, files: int, fsync: bool, threads: bool = False
) -> tuple[float, float, float, float]:
    """Total writes per second, CPU milliseconds per write (all writers' CPU from the go), write p50 and p95 (ms)."""
    go = os.path.join(base, f"go-{kind}-{time.monotonic_ns()}")
    if threads:
        failed: list[BaseException] = []

        def run(w: int) -> None:
            try:
                writer(kind, base, w, writers, writes, files, fsync, go)
            except BaseException as exc:
                failed.append(exc)

        workers = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
        for t in workers:
            t.start()
        time.sleep(0.5)
        with open(go, "w"):
            pass
        started, cpu = time.perf_counter(), time.process_time()
        for t in workers:
            t.join()
        if failed:
            raise SystemExit(f"a {kind} writer failed: {failed[0]!r}")
        elapsed = time.perf_counter() - started
        return writers * writes / elapsed, (time.process_time() - cpu) * 1e3 / (writers * writes), *latencies(go)
    ctx = mp.get_context("fork")
    procs = [
        ctx.Process(target=writer, args=(kind, base, w, writers, writes, files, fsync, go)) for w in range(writers)
    ]
    for p in procs:
        p.start()
    time.sleep(0.5)  # every writer has opened its store and read its versions
    with open(go, "w"):
        pass
    started = time.perf_counter()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"a {kind} writer failed ({p.exitcode})")
    elapsed = time.perf_counter() - started
    with open(f"{go}.cpu") as fh:
        cpu = sum(float(line) for line in fh)
    return writers * writes / elapsed, cpu * 1e3 / (writers * writes), *latencies(go)


def _lost(base: str) -> int:
    """Acknowledged writes whose version is not what ``main`` holds (each path has one writer, last write wins)."""
    store = GitFileStore.open(os.path.join(base, "git")).sync
    last: dict[str, str] = {}
    for name in sorted(os.listdir(base)):
        if name.endswith(".acked"):
            with open(os.path.join(base, name)) as fh:
                for line in fh:
                    path, version = line.split()
                    last[path] = version
    return sum(1 for path, version in last.items() if store.read(path).version != version)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--writes", type=int, default=100, help="writes per writer per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fsync", action="store_true")
    parser.add_argument("--threads", action="store_true", help="writers are threads of one process")
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="gitmem-bench-conc-")
    try:
        GitFileStore.init(os.path.join(base, "git"), durable=args.fsync)
        bulk.import_files(os.path.join(base, "git"), bulk.files(args.files))
        bulk.write_directory(os.path.join(base, "dir", "files"), bulk.files(args.files))
        kinds = ["git", "floor", "dir"]
        rates: dict[str, list[float]] = {k: [] for k in kinds}
        cpus: dict[str, list[float]] = {k: [] for k in kinds}
        p50s: dict[str, list[float]] = {k: [] for k in kinds}
        p95s: dict[str, list[float]] = {k: [] for k in kinds}
        for r in range(args.rounds):
            for kind in kinds[r % len(kinds) :] + kinds[: r % len(kinds)]:
                rate, cpu, p50, p95 = one(kind, base, args.writers, args.writes, args.files, args.fsync, args.threads)
                rates[kind].append(rate)
                cpus[kind].append(cpu)
                p50s[kind].append(p50)
                p95s[kind].append(p95)
        packs = len([n for n in os.listdir(os.path.join(base, "git", "objects", "pack")) if n.endswith(".idx")])
        print(
            f"# {args.writers} {'threads' if args.threads else 'processes'} x {args.writes} writes, {args.rounds} rounds, "
            f"fsync={args.fsync}, "
            f"load {os.getloadavg()[0]:.1f}; packs at the end: {packs}"
        )
        dir_rate, floor_rate = statistics.median(rates["dir"]), statistics.median(rates["floor"])
        for kind in kinds:
            each = ", ".join(f"{x:.0f}" for x in rates[kind])
            med = statistics.median(rates[kind])
            cpu = statistics.median(cpus[kind])
            print(
                f"{kind:7} writes/s median {med:7.0f}  ({each})  vs floor {med / floor_rate:.2f}x,"
                f" vs dir store {med / dir_rate:.2f}x;"
                f"  CPU per write {cpu:.2f} ms; write p50 {statistics.median(p50s[kind]):.1f} ms,"
                f" p95 {statistics.median(p95s[kind]):.1f} ms"
            )
        lost = _lost(base)
        print(f"acknowledged writes missing from main: {lost}")
        if lost:
            return 1
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
