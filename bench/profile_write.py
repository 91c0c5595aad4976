"""Where one gitmem write goes: cProfile of the write path, and what it does to the disk.

```sh
.venv/bin/python bench/profile_write.py prep /tmp/pw             # a 10k-file memory + the same as a directory
.venv/bin/python bench/profile_write.py profile /tmp/pw 300      # cProfile of 300 writes, top functions
strace -f -c -o /tmp/pw.strace .venv/bin/python bench/profile_write.py write /tmp/pw 300 [--fsync]
.venv/bin/python bench/profile_write.py phases /tmp/pw 300 [--fsync]   # wall/CPU per step of a commit
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
import os
import pstats
import random
import subprocess
import sys
import time

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


def phases(base: str, n: int, *, fsync: bool) -> None:
    """Wall and CPU time of each step of a commit, done by hand as ``GitRepo.transact`` does it."""
    import pygit2

    from gitmem.git import repo as gitrepo
    from gitmem.git.refs import MAIN, swap_ref

    set_durable(fsync)
    g = gitrepo.GitRepo.open(os.path.join(base, "git"))
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    corpus = bulk.Corpus(seed=rng.randrange(1 << 30))
    paths = [bulk.layout_path(i) for i in range(FILES)]
    steps = ("lock", "read head", "blob", "trees", "commit", "ref CAS", "unlock")
    wall = dict.fromkeys(steps, 0.0)
    cpu = dict.fromkeys(steps, 0.0)
    marks: list[tuple[float, float]] = []

    def mark() -> None:
        marks.append((time.perf_counter(), time.thread_time()))

    for _ in range(n):
        p = rng.choice(paths)
        data = corpus.fresh().encode()
        marks.clear()
        mark()
        with g.lock.hold():
            mark()
            repo = g.fresh()
            head = g.head()
            snap = gitrepo.Snapshot(repo, head)
            mark()
            blob = snap.write_blob(data)
            mark()
            tree = gitrepo._set_path(repo, snap.tree, p.split("/"), blob, p)
            mark()
            sig = pygit2.Signature("bench", "bench@example.invalid")
            commit = repo.create_commit(None, sig, sig, "bench write\n", tree, [pygit2.Oid(hex=head)])
            mark()
            assert swap_ref(repo, g.path, MAIN, head, str(commit), message="bench")
            mark()
        mark()
        for i, step in enumerate(steps):
            wall[step] += marks[i + 1][0] - marks[i][0]
            cpu[step] += marks[i + 1][1] - marks[i][1]
    total_w, total_c = sum(wall.values()), sum(cpu.values())
    print(f"{'step':10} {'wall us':>8} {'cpu us':>8}  (mean of {n}, fsync={fsync})")
    for step in steps:
        print(f"{step:10} {wall[step] / n * 1e6:8.0f} {cpu[step] / n * 1e6:8.0f}")
    print(f"{'total':10} {total_w / n * 1e6:8.0f} {total_c / n * 1e6:8.0f}")


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
        phases(base, n, fsync=fsync)
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
