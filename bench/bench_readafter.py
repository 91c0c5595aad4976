"""The agent's edit loop: is a read right after a write as fast as on a plain directory?

```sh
.venv/bin/python bench/bench_readafter.py --files 1000 10000 --rounds 300
.venv/bin/python bench/bench_readafter.py --files 1000 --rounds 100 --dir /mnt/ext4   # another file system
```

An agent edits memory as read, write, read another file, write. For each
``--files`` size a memory is built the way an agent builds one, by single-file
commits through the store (nested folders three levels deep, as
:func:`bench.bulk.layout_path`), and a :class:`bench.dirstore.DirStore` gets the
same files. The live pack count (:func:`gitmem.git.packwrite.pack_count`) and the
index files in ``objects/pack`` (live packs plus folded ones not yet deleted) are
sampled every 50 writes of the build. Then, per round, on both stores in random
order (so the machine's load hits both alike): a write of a random file; a read
of another random file (*read after write*); a write and a read of that same file
(*read of the file just written*); each read made in the writing process and by
a reader process that has the store open and is told what to read over a pipe
(what another agent sees). The write's own time is reported too, and a read in
the reader process with no write since its last read (the floor). Last, the write
alone on one memory, the mechanism switched on and off write by write (two copies
of a memory sit in different folders, and on some file systems a create's cost
depends on the folder).

Each size is measured on two copies of the memory in the same rounds: one as
gitmem runs (``git``), one with :attr:`gitmem.git.repo.GitRepo.written` switched
off in the writer and the reader (``git-off``: every read of a new head makes
libgit2 list ``objects/pack`` and open the new pack), so the mechanism's gain
is measured on and off in one run.

Times are CPU time of the calling thread (user + system: it counts the
syscalls, not the wait for a CPU on a shared machine), with wall time beside;
the ratio to the directory store of the same run is the result.
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
from bench.dirstore import DirStore
from gitmem import GitFileStore
from gitmem.git import packwrite

Sample = tuple[float, float]  # (cpu, wall) seconds


def index_files(path: str) -> int:
    return len([n for n in os.listdir(os.path.join(path, "objects", "pack")) if n.endswith(".idx")])


def open_store(kind: str, path: str) -> object:
    """``git``: gitmem; ``git-off``: gitmem keeping nothing it wrote or read from new packs; ``dir``: the baseline."""
    if kind == "dir":
        return DirStore(path)
    store = GitFileStore.open(path).sync
    store.repo.written.enabled = kind == "git"
    return store


def timed(call: object, *args: object, **kwargs: object) -> Sample:
    c0, t0 = time.thread_time(), time.perf_counter()
    call(*args, **kwargs)  # type: ignore[operator]
    return time.thread_time() - c0, time.perf_counter() - t0


def reader_main(kind: str, path: str) -> int:
    """The reader process: one path per line in, ``cpu wall`` of its read out."""
    store = open_store(kind, path)
    store.read(bulk.layout_path(0))  # type: ignore[attr-defined]
    print("ready", flush=True)
    for line in sys.stdin:
        cpu, wall = timed(store.read, line.strip())  # type: ignore[attr-defined]
        print(f"{cpu} {wall}", flush=True)
    return 0


class Reader:
    def __init__(self, kind: str, path: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--reader", kind, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def read(self, path: str) -> Sample:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(path + "\n")
        self.proc.stdin.flush()
        cpu, wall = self.proc.stdout.readline().split()
        return float(cpu), float(wall)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def build(base: str, files: int) -> tuple[str, str, list[int], list[int], float]:
    """A git memory and a directory store of ``files`` notes, each git file its own commit."""
    git_path, dir_path = os.path.join(base, f"m{files}.git"), os.path.join(base, f"d{files}")
    GitFileStore.init(git_path)
    store = GitFileStore.open(git_path).sync
    plain = DirStore(dir_path)
    corpus = bulk.Corpus(seed=6)
    live: list[int] = []
    listed: list[int] = []
    started = time.perf_counter()
    for i in range(files):
        text = corpus.text(i)
        store.write(bulk.layout_path(i), text, expected=None)
        plain.write(bulk.layout_path(i), text, expected=None)
        if i % 50 == 49:
            live.append(packwrite.pack_count(git_path))
            listed.append(index_files(git_path))
    return git_path, dir_path, live, listed, time.perf_counter() - started


def measure(git_path: str, dir_path: str, files: int, rounds: int, seed: int) -> dict[str, dict[str, list[Sample]]]:
    rng = random.Random(seed)
    corpus = bulk.Corpus(seed=seed)
    paths = [bulk.layout_path(i) for i in range(files)]
    off_path = git_path[: -len(".git")] + "-off.git"  # its own copy: the other store's packs must not mix in
    shutil.copytree(git_path, off_path)
    where = {"git": git_path, "git-off": off_path, "dir": dir_path}
    stores = {kind: open_store(kind, path) for kind, path in where.items()}
    readers = {kind: Reader(kind, path) for kind, path in where.items()}
    names = ("write", "after write, same process", "after write, other process")
    names += ("just written, same process", "just written, other process", "no write between, other process")
    out: dict[str, dict[str, list[Sample]]] = {name: {k: [] for k in stores} for name in names}
    out["write, one memory"] = {"git": [], "git-off": [], "dir": out["write"]["dir"]}
    try:
        for _ in range(rounds):
            a, b, c = rng.choice(paths), rng.choice(paths), rng.choice(paths)
            text_a, text_c = corpus.fresh(), corpus.fresh()
            for kind in rng.sample(list(stores), len(stores)):
                store: object = stores[kind]
                s = out["write"][kind]
                s.append(timed(store.write, a, text_a, expected=store.read(a).version))  # type: ignore[attr-defined]
                out["after write, same process"][kind].append(timed(store.read, b))  # type: ignore[attr-defined]
                store.write(c, text_c, expected=store.read(c).version)  # type: ignore[attr-defined]
                out["just written, other process"][kind].append(readers[kind].read(c))
                out["just written, same process"][kind].append(timed(store.read, c))  # type: ignore[attr-defined]
                store.write(a, corpus.fresh(), expected=store.read(a).version)  # type: ignore[attr-defined]
                out["after write, other process"][kind].append(readers[kind].read(b))
                out["no write between, other process"][kind].append(readers[kind].read(b))
    finally:
        for reader in readers.values():
            reader.close()
    shutil.rmtree(off_path, ignore_errors=True)
    # The writer's own cost, on one memory: the same store with what it keeps (and the copy it
    # leaves for readers) switched on and off write by write, in random order.
    git = stores["git"]
    for _ in range(rounds):
        for on in rng.sample([True, False], 2):
            git.repo.written.enabled = on  # type: ignore[attr-defined]
            a = rng.choice(paths)
            version = git.read(a).version  # type: ignore[attr-defined]
            sample = timed(git.write, a, corpus.fresh(), expected=version)  # type: ignore[attr-defined]
            out["write, one memory"]["git" if on else "git-off"].append(sample)
    git.repo.written.enabled = True  # type: ignore[attr-defined]
    return out


def report(files: int, out: dict[str, dict[str, list[Sample]]]) -> None:
    """Medians of CPU time (wall beside) and their ratios: to the directory store, and written kept on / off."""
    print(f"| {files} files, µs CPU (wall) | gitmem | directory | ratio | gitmem, written kept off | on / off |")
    print("|---|---|---|---|---|---|")
    for name, by in out.items():
        m = {k: [statistics.median(s[i] for s in v) * 1e6 for i in (0, 1)] for k, v in by.items()}
        g, d, o = m["git"], m["dir"], m["git-off"]
        print(
            f"| {name} | {g[0]:.0f} ({g[1]:.0f}) | {d[0]:.0f} ({d[1]:.0f}) | **{g[0] / d[0]:.2f}x** ({g[1] / d[1]:.2f}x) "
            f"| {o[0]:.0f} ({o[1]:.0f}) | {g[0] / o[0]:.2f}x ({g[1] / o[1]:.2f}x) |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--files", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--dir", help="build the memories under this folder (another file system)")
    parser.add_argument("--reader", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reader:
        return reader_main(*args.reader)
    base = tempfile.mkdtemp(prefix="gitmem-bench-readafter-", dir=args.dir)
    try:
        for files in args.files:
            git_path, dir_path, live, listed, took = build(base, files)
            print(
                f"# {files} single-file commits in {took:.0f} s; live packs during the build: max {max(live)}, "
                f"median {statistics.median(live)}; index files: max {max(listed)}, median {statistics.median(listed)}; "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            out = measure(git_path, dir_path, files, args.rounds, seed=files)
            live_after = packwrite.pack_count(git_path)
            report(files, out)
            print(f"# live packs after the rounds: {live_after}; load {os.getloadavg()[0]:.1f}", flush=True)
            fsck = subprocess.run(["git", "--git-dir", git_path, "fsck", "--strict"], capture_output=True)
            print(f"# git fsck --strict: {'clean' if fsck.returncode == 0 else 'FAILED'}")
            shutil.rmtree(git_path, ignore_errors=True)
            shutil.rmtree(dir_path, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
