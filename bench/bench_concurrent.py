"""Concurrent writers: total throughput of 4 processes writing one memory, gitmem vs the directory store.

```sh
.venv/bin/python bench/bench_concurrent.py                 # 10k files, 4 writers x 100 writes, 3 rounds
.venv/bin/python bench/bench_concurrent.py --writers 4 --writes 50 --rounds 2 --fsync
.venv/bin/python bench/bench_concurrent.py --threads --nogroup   # writers as threads of one process; + gitmem without group commit
```

Each writer is its own process with its own store handle and writes CAS edits of
random files out of its own share of the paths (no conflicts), as fast as it can.
All writers start together (a go file); throughput = all writes / (last writer
done - go); each write's own wall time gives p50 and p95 (medians over rounds).
CPU per write = the writers' CPU time from the go to their last write
(with processes, each writer's own ``process_time``; a writer that commits other
processes' requests is charged for them), over all writes. gitmem and the directory store (``bench/dirstore.py``) run in
alternating order each round, with equal durability (``--fsync``: fsync on both).
``--loose`` adds gitmem with loose objects (the write path before packs).
``--threads`` runs the writers as threads of one process (each with its own store
handle), where gitmem commits the writes that queue together (group commit);
``--nogroup`` adds gitmem with group commit turned off, for the same run;
``--nospool`` adds gitmem without the cross-process hand-off (``gitmem.git.spool``):
threads of one process still group, processes take the lock one round each.
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
from gitmem import GitFileStore
from gitmem.fileformat import DEFAULT_FORMAT, encode_text
from gitmem.git import repo as gitrepo
from gitmem.git.repo import GitRepo, set_durable


def writer(kind: str, base: str, wid: int, writers: int, writes: int, files: int, fsync: bool, go: str) -> None:
    rng = random.Random(wid * 7919 + int.from_bytes(os.urandom(4), "big"))
    corpus = bulk.Corpus(seed=rng.randrange(1 << 30))
    paths = [bulk.layout_path(i) for i in range(files) if i % writers == wid]
    GitRepo.pack_writes = kind != "loose"
    gitrepo.GROUP_COMMIT = kind != "nogroup"
    gitrepo.CROSS_PROCESS = kind not in ("nogroup", "nospool")
    set_durable(fsync)
    if kind == "dir":
        d = DirStore(os.path.join(base, "dir"), fsync=fsync)
        read, write = d.read, d.write
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


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--writes", type=int, default=100, help="writes per writer per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fsync", action="store_true")
    parser.add_argument("--loose", action="store_true")
    parser.add_argument("--threads", action="store_true", help="writers are threads of one process")
    parser.add_argument("--nogroup", action="store_true", help="add gitmem without group commit")
    parser.add_argument("--nospool", action="store_true", help="add gitmem without the cross-process group commit")
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="gitmem-bench-conc-")
    try:
        GitFileStore.init(os.path.join(base, "git"))
        bulk.import_files(os.path.join(base, "git"), bulk.files(args.files))
        bulk.write_directory(os.path.join(base, "dir", "files"), bulk.files(args.files))
        kinds = ["git", "dir"] + (["loose"] if args.loose else []) + (["nogroup"] if args.nogroup else []) + (
            ["nospool"] if args.nospool else []
        )
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
        dir_rate = statistics.median(rates["dir"])
        for kind in kinds:
            each = ", ".join(f"{x:.0f}" for x in rates[kind])
            med = statistics.median(rates[kind])
            cpu = statistics.median(cpus[kind])
            print(
                f"{kind:7} writes/s median {med:7.0f}  ({each})  vs dir store {med / dir_rate:.2f}x;"
                f"  CPU per write {cpu:.2f} ms; write p50 {statistics.median(p50s[kind]):.1f} ms,"
                f" p95 {statistics.median(p95s[kind]):.1f} ms"
            )
        git_rate = statistics.median(rates["git"])
        print(f"target gitmem >= dir store throughput: {'met' if git_rate >= dir_rate else 'NOT met'}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
