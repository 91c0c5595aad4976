"""Where one gitmem write goes: cProfile of the write path, and what it does to the disk.

```sh
.venv/bin/python bench/profile_write.py prep /tmp/pw             # a 10k-file memory + the same as a directory
.venv/bin/python bench/profile_write.py profile /tmp/pw 300      # cProfile of 300 writes, top functions
strace -f -c -o /tmp/pw.strace .venv/bin/python bench/profile_write.py write /tmp/pw 300 [--fsync]
.venv/bin/python bench/profile_write.py phases /tmp/pw 300 [--fsync] [--new]  # wall/CPU per step (--new: add files)
.venv/bin/python bench/profile_write.py refs /tmp/pw 100            # the ref CAS: libgit2 vs by hand
.venv/bin/python bench/profile_write.py files /tmp/pw 50 [--fsync]  # files created per write (inotify-free count)
```

``write N`` does N CAS writes of random existing files and nothing else, so an
``strace -c`` of ``write 300`` minus one of ``write 0`` is what the writes cost in
system calls (printed per write by ``syscalls``). ``--dir`` runs the same writes
through the directory store (``bench/dirstore.py``) for the baseline's counts.
"""

from __future__ import annotations

import cProfile
import importlib
import os
import pstats
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import bulk
from bench.dirstore import DirStore
from gitmem import GitFileStore
from gitmem.git.repo import set_durable

FILES = 10_000


def prep(base: str) -> None:
    git_path, dir_path = os.path.join(base, "git"), os.path.join(base, "dir")
    GitFileStore.init(git_path)
    bulk.import_files(git_path, bulk.files(FILES))
    os.makedirs(dir_path, exist_ok=True)
    bulk.write_directory(os.path.join(dir_path, "files"), bulk.files(FILES))


def writes(base: str, n: int, *, fsync: bool, use_dir: bool, seed: int | None = None) -> float:
    seed = seed if seed is not None else int.from_bytes(os.urandom(4), "big")  # fresh texts: never a no-op write
    rng = random.Random(seed)
    corpus = bulk.Corpus(seed=seed)
    paths = [bulk.layout_path(i) for i in range(FILES)]
    if use_dir:
        d = DirStore(os.path.join(base, "dir"), fsync=fsync)
        started = time.perf_counter()
        for _ in range(n):
            p = rng.choice(paths)
            d.write(p, corpus.fresh(), expected=d.read(p).version)
        return time.perf_counter() - started
    set_durable(fsync)
    store = GitFileStore.open(os.path.join(base, "git")).sync
    started = time.perf_counter()
    for _ in range(n):
        p = rng.choice(paths)
        store.write(p, corpus.fresh(), expected=store.read(p).version)
    return time.perf_counter() - started


def phases(base: str, n: int, *, fsync: bool, new: bool = False) -> None:
    """Wall and CPU time of each step of ``store.write``, measured inside the real write path.

    Each step is a function of the write path wrapped with a timer (so the
    numbers include the wrappers' ~1 µs each); ``rest`` is what the store does
    around them (validation, the group-commit queue, error translation).
    """
    from contextlib import contextmanager

    from gitmem.git import batch as gitbatch
    from gitmem.git import packwrite
    from gitmem.git import repo as gitrepo
    from gitmem.git.locks import WriterLock

    set_durable(fsync)
    store = GitFileStore.open(os.path.join(base, "git")).sync
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    corpus = bulk.Corpus(seed=rng.randrange(1 << 30))
    paths = [bulk.layout_path(i) for i in range(FILES)]
    steps = (
        "lock",
        "read head ref",
        "snapshot",
        "decide (read, blob)",
        "trees",
        "commit object",
        "pack encode",
        "pack files",
        "ref update",
        "pack count",
        "unlock",
        "fold start/wait",
        "rest",
    )
    wall = dict.fromkeys(steps, 0.0)
    cpu = dict.fromkeys(steps, 0.0)

    def clock() -> tuple[float, float]:
        return time.perf_counter(), time.thread_time()

    writing = [False]  # steps also run by the read before each write (the head) count only inside writes

    def add(step: str, since: tuple[float, float]) -> None:
        if not writing[0]:
            return
        w, c = clock()
        wall[step] += w - since[0]
        cpu[step] += c - since[1]

    def timed(step: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kw: Any) -> Any:
            t = clock()
            try:
                return fn(*args, **kw)
            finally:
                add(step, t)

        return wrapper

    original_hold = WriterLock.hold

    @contextmanager
    def hold(self: WriterLock, *args: Any, **kw: Any) -> Iterator[Any]:
        t = clock()
        with original_hold(self, *args, **kw) as held:
            add("lock", t)
            try:
                yield held
            finally:
                t = clock()
        add("unlock", t)

    WriterLock.hold = hold  # type: ignore[method-assign]
    if hasattr(gitrepo.GitRepo, "_head_in"):  # a round reads main with the handle it just refreshed
        gitrepo.GitRepo._head_in = timed("read head ref", gitrepo.GitRepo._head_in)  # type: ignore[attr-defined]
    else:
        gitrepo.GitRepo.head = timed("read head ref", gitrepo.GitRepo.head)  # type: ignore[method-assign]
    original_snapshot_init = gitrepo.Snapshot.__init__
    gitrepo.Snapshot.__init__ = timed("snapshot", original_snapshot_init)  # type: ignore[method-assign]
    gitbatch.decide = timed("decide (read, blob)", gitbatch.decide)
    gitrepo.GitRepo._pack_trees = timed("trees", gitrepo.GitRepo._pack_trees)  # type: ignore[method-assign]
    original_commit_bytes = packwrite.commit_bytes
    signer = gitrepo if hasattr(gitrepo, "_signed") else importlib.import_module("gitmem.git.writeround")
    signer._signed = timed("commit object", signer._signed)  # type: ignore[attr-defined]  # the round's module since the split
    packwrite.commit_bytes = timed("commit object", original_commit_bytes)
    packwrite.pack_files = timed("pack encode", packwrite.pack_files)
    original_write_pack = packwrite.write_pack

    def write_pack(*args: Any, **kw: Any) -> str:
        t = clock()
        encode_before = cpu["pack encode"], wall["pack encode"]
        try:
            return original_write_pack(*args, **kw)
        finally:
            add("pack files", t)
            wall["pack files"] -= wall["pack encode"] - encode_before[1]
            cpu["pack files"] -= cpu["pack encode"] - encode_before[0]

    packwrite.write_pack = write_pack
    gitrepo.GitRepo._cas = timed("ref update", gitrepo.GitRepo._cas)  # type: ignore[method-assign]
    gitrepo.GitRepo._count_pack = timed("pack count", gitrepo.GitRepo._count_pack)  # type: ignore[method-assign]
    gitrepo.GitRepo._fold_once = timed("fold", gitrepo.GitRepo._fold_once)  # type: ignore[method-assign]
    total_w = total_c = 0.0
    for i in range(n):
        if new:  # a file added to an existing folder (no expected version: it must not exist)
            p, version = f"{rng.choice(paths).rsplit('/', 1)[0]}/added-{os.getpid()}-{i}.md", None
        else:
            p = rng.choice(paths)
            version = store.read(p).version
        text = corpus.fresh()
        writing[0] = True
        t = clock()
        store.write(p, text, expected=version)
        w, c = clock()
        writing[0] = False
        total_w += w - t[0]
        total_c += c - t[1]
    wall["rest"] = total_w - sum(wall.values())
    cpu["rest"] = total_c - sum(cpu.values())
    print(f"{'step':20} {'wall us':>8} {'cpu us':>8}  (mean of {n} writes, fsync={fsync}, new={new})")
    for step in steps:
        print(f"{step:20} {wall[step] / n * 1e6:8.0f} {cpu[step] / n * 1e6:8.0f}")
    print(f"{'total':20} {total_w / n * 1e6:8.0f} {total_c / n * 1e6:8.0f}")


def refs(base: str, n: int) -> None:
    """The ref CAS alone: libgit2's transaction against git's lock protocol by hand, alternating rounds."""
    import statistics

    import pygit2

    from gitmem.git.refs import MAIN, swap_loose_ref, swap_ref

    path = os.path.join(base, "git")
    repo = pygit2.Repository(path)
    head = str(repo.references[MAIN].target)
    parent = str(repo[head].peel(pygit2.Commit).parent_ids[0])

    def libgit2(old: str, new: str) -> None:
        assert swap_ref(repo, path, MAIN, old, new, message="bench")

    def by_hand(old: str, new: str) -> None:
        assert swap_loose_ref(path, MAIN, old, new, durable=False)

    for _ in range(3):
        for name, fn in (("libgit2 transaction", libgit2), ("by hand (swap_loose_ref)", by_hand)):
            took = []
            a, b = head, parent
            for _ in range(n):
                t0 = time.perf_counter()
                fn(a, b)
                took.append(time.perf_counter() - t0)
                a, b = b, a
            print(f"{name:26} p50 {statistics.median(took) * 1e6:7.0f} us")  # n even: main is back at head


def count_files(base: str) -> int:
    total = 0
    for _folder, _dirs, names in os.walk(base):
        total += len(names)
    return total


def main(argv: list[str]) -> int:
    cmd, base = argv[0], argv[1]
    n = int(argv[2]) if len(argv) > 2 else 300
    fsync, use_dir = "--fsync" in argv, "--dir" in argv
    if cmd == "prep":
        prep(base)
    elif cmd == "write":
        took = writes(base, n, fsync=fsync, use_dir=use_dir)
        print(f"{n} writes in {took * 1000:.1f} ms ({took / max(n, 1) * 1e6:.0f} us each)")
    elif cmd == "profile":
        prof = cProfile.Profile()
        prof.enable()
        writes(base, n, fsync=fsync, use_dir=use_dir)
        prof.disable()
        stats = pstats.Stats(prof)
        stats.sort_stats("tottime").print_stats(25)
    elif cmd == "refs":
        refs(base, n if n % 2 == 0 else n + 1)
    elif cmd == "phases":
        phases(base, n, fsync=fsync, new="--new" in argv)
    elif cmd == "files":
        sub = os.path.join(base, "dir" if use_dir else "git")
        before = count_files(sub)
        writes(base, n, fsync=fsync, use_dir=use_dir)
        print(f"files in the store: +{(count_files(sub) - before) / n:.2f} per write (net, after {n} writes)")
    elif cmd == "syscalls":
        flags = [f for f in argv[3:] if f.startswith("--")]
        counts: dict[int, dict[str, int]] = {}
        for k in (0, n):
            out = f"{base}.strace.{k}"
            subprocess.run(
                ["strace", "-f", "-c", "-o", out, sys.executable, __file__, "write", base, str(k), *flags],
                check=True,
                capture_output=True,
            )
            counts[k] = parse_strace(out)
        per = {name: (counts[n].get(name, 0) - counts[0].get(name, 0)) / n for name in counts[n]}
        total = sum(per.values())
        print(f"system calls per write: {total:.1f}")
        for name, c in sorted(per.items(), key=lambda kv: -kv[1])[:14]:
            if c >= 0.5:
                print(f"  {name:16} {c:6.1f}")
    return 0


def parse_strace(path: str) -> dict[str, int]:
    found: dict[str, int] = {}
    with open(path) as fh:
        for line in fh:
            parts = line.split()
            if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
                calls = parts[3]
                if calls.isdigit():
                    found[parts[-1]] = int(calls)
    return found


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
