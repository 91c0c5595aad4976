"""What each speed mechanism of the engine buys: on and off in one run, alternating, call by call.

```sh
.venv/bin/python bench/bench_mechanisms_engine.py --sizes 1000 10000
.venv/bin/python bench/bench_mechanisms_engine.py --sizes 1000 10000 --dir /mnt/ext4/x   # another file system
```

Each mechanism is switched off by replacing the one function that holds it
with the library's own way of doing the same (nothing in gitmem reads a switch):

- ``walk``: :func:`gitmem.git.walk.walk` (raw commit bytes from the odb) against
  pygit2's ``Walker`` (a ``Commit`` object per step), timed on ``log`` of one path
  across the whole history (a file edited every 10th commit of ``size`` store writes).
- ``fold``: :mod:`gitmem.git.packfold` against ``git pack-objects --stdin-packs``,
  timed on store writes (the mean: one write in 25 folds).
- ``blob``: the pack shortcut of :meth:`gitmem.git.repo.GitRepo.blob` against
  ``repo[oid].read_raw()``, timed on a store read with no write since.
- ``group``: group commit (:data:`gitmem.git.engine.GROUPING`) against each write
  committing alone, timed on store writes of one writer with no one waiting (what
  the queue costs a writer that never shares its group).
- ``packcheck``: the pack folder checked for planted entries where it is listed
  (:func:`gitmem.git.control.check_pack_folder`) against at every read, timed on a
  read of another file right after a write in the writing process.

Times are the calling thread's CPU time plus its ``git`` children's (wall beside); ``on / off`` is the result,
below 1 meaning the mechanism pays.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pygit2

from bench import bulk
from gitmem import GitFileStore, Origin
from gitmem.git import control, engine, history, packfold
from gitmem.git.repo import GitRepo
from gitmem.git.walk import RawCommit

Sample = tuple[float, float]


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(call: Callable[[], object]) -> Sample:
    """CPU of this thread plus of the child processes it waited for (a ``git`` it ran), and wall time."""
    c0, k0, t0 = time.thread_time(), children_cpu(), time.perf_counter()
    call()
    return time.thread_time() - c0 + children_cpu() - k0, time.perf_counter() - t0


def walker_walk(r: pygit2.Repository, start: str, hidden: set[str] | None = None) -> Iterator[RawCommit]:
    """The library's walk: pygit2's ``Walker`` in committer-time order, each commit's raw bytes handed on."""
    walker = r.walk(pygit2.Oid(hex=start), pygit2.enums.SortMode.TIME)
    for oid in hidden or ():
        walker.hide(pygit2.Oid(hex=oid))
    for commit in walker:
        yield RawCommit(str(commit.id), commit.read_raw())


def library_blob(self: GitRepo, oid: str) -> bytes:
    return bytes(self.repo[oid].read_raw())


_fresh = GitRepo.fresh


def fresh_checking_packs(self: GitRepo) -> Any:
    """The pack folder checked at every read, as before it was checked only where it is listed."""
    control.check_packs_of(self.path)
    return _fresh(self)


SWITCHES: dict[str, list[tuple[Any, str, Any]]] = {
    "walk": [(history, "walk", walker_walk)],
    "fold": [(packfold, "fold", lambda *a, **k: None)],
    "blob": [(GitRepo, "blob", library_blob)],
    "packcheck": [(GitRepo, "fresh", fresh_checking_packs)],
    "group": [(engine, "GROUPING", False)],
}


@contextlib.contextmanager
def off(name: str, is_off: bool) -> Iterator[None]:
    saved = [(where, attr, getattr(where, attr)) for where, attr, _ in SWITCHES[name]]
    if is_off:
        for where, attr, other in SWITCHES[name]:
            setattr(where, attr, other)
    try:
        yield
    finally:
        for where, attr, value in saved:
            setattr(where, attr, value)


def alternate(name: str, rounds: int, call: Callable[[], object], rng: random.Random) -> dict[bool, list[Sample]]:
    out: dict[bool, list[Sample]] = {True: [], False: []}
    for _ in range(rounds):
        for on in rng.sample([True, False], 2):
            with off(name, not on):
                out[on].append(timed(call))
    return out


def build_history(path: str, commits: int) -> str:
    """``commits`` store writes, ``notes/target.md`` every 10th: a history as gitmem writes it."""
    store = GitFileStore.init(path).sync
    versions: dict[str, str] = {}
    target = "notes/target.md"
    for i in range(commits):
        name = target if i % 10 == 0 else f"topic-{i % 37}/note-{i % 500}.md"
        origin = Origin(f"run-{i % 50}", f"agent-{i % 3}", f"call-{i}")
        versions[name] = store.write(name, f"note {i}\nline {i % 7}\n", expected=versions.get(name), origin=origin)
    return target


def bench_walk(base: str, size: int, rounds: int, rng: random.Random) -> dict[bool, list[Sample]]:
    path = os.path.join(base, f"walk{size}.git")
    target = build_history(path, size)
    store = GitFileStore.open(path).sync
    expect = len(store.log(target, limit=10**6))
    with off("walk", True):
        assert len(store.log(target, limit=10**6)) == expect
    out = alternate("walk", rounds, lambda: store.log(target, limit=10**6), rng)
    shutil.rmtree(path, ignore_errors=True)
    return out


def memory(base: str, size: int, name: str) -> tuple[str, list[str]]:
    path = os.path.join(base, f"{name}{size}.git")
    GitFileStore.init(path)
    bulk.import_files(path, bulk.files(size))
    return path, [bulk.layout_path(i) for i in range(size)]


def bench_writes(name: str, base: str, size: int, rounds: int, rng: random.Random) -> dict[bool, list[Sample]]:
    path, paths = memory(base, size, name)
    store = GitFileStore.open(path).sync
    corpus = bulk.Corpus(seed=size)
    out: dict[bool, list[Sample]] = {True: [], False: []}
    for _ in range(rounds):
        for on in rng.sample([True, False], 2):
            p = rng.choice(paths)
            version = store.read(p).version
            text = corpus.fresh()
            with off(name, not on):
                out[on].append(timed(functools.partial(store.write, p, text, expected=version)))
    shutil.rmtree(path, ignore_errors=True)
    return out


def bench_blob(base: str, size: int, rounds: int, rng: random.Random) -> dict[bool, list[Sample]]:
    path, paths = memory(base, size, "blob")
    store = GitFileStore.open(path).sync
    for p in paths[:50]:
        store.read(p)
    out: dict[bool, list[Sample]] = {True: [], False: []}
    for _ in range(rounds):
        for on in rng.sample([True, False], 2):
            p = rng.choice(paths)
            with off("blob", not on):
                out[on].append(timed(lambda p=p: store.read(p)))
    shutil.rmtree(path, ignore_errors=True)
    return out


def bench_packcheck(base: str, size: int, rounds: int, rng: random.Random) -> dict[bool, list[Sample]]:
    """A read of another file right after a write, in the writing process."""
    path, paths = memory(base, size, "packcheck")
    store = GitFileStore.open(path).sync
    corpus = bulk.Corpus(seed=size)
    out: dict[bool, list[Sample]] = {True: [], False: []}
    for _ in range(rounds):
        for on in rng.sample([True, False], 2):
            a, b = rng.choice(paths), rng.choice(paths)
            with off("packcheck", not on):
                store.write(a, corpus.fresh(), expected=store.read(a).version)
                out[on].append(timed(functools.partial(store.read, b)))
    shutil.rmtree(path, ignore_errors=True)
    return out


def report(name: str, size: int, what: str, out: dict[bool, list[Sample]], mean: bool = False) -> None:
    agg = statistics.fmean if mean else statistics.median
    on = [agg(s[i] for s in out[True]) * 1e3 for i in (0, 1)]
    no = [agg(s[i] for s in out[False]) * 1e3 for i in (0, 1)]
    print(
        f"| {name} | {size} | {what} ({'mean' if mean else 'median'}) | {on[0]:.3f} ({on[1]:.3f}) "
        f"| {no[0]:.3f} ({no[1]:.3f}) | **{on[0] / no[0]:.2f}x** ({on[1] / no[1]:.2f}x) | {os.getloadavg()[0]:.1f} |",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--only", nargs="+", default=list(SWITCHES), choices=list(SWITCHES))
    parser.add_argument("--rounds", type=int, default=200, help="write and read rounds (walk: 9)")
    parser.add_argument("--dir", help="build the memories under this folder (another file system)")
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="gitmem-bench-mech-", dir=args.dir)
    rng = random.Random(41)
    print("| mechanism | size | operation | on, ms CPU (wall) | off, ms CPU (wall) | on / off | load |")
    print("|---|---|---|---|---|---|---|", flush=True)
    try:
        for size in args.sizes:
            if "walk" in args.only:
                report("walk", size, "log of one path, whole history", bench_walk(base, size, 9, rng))
            if "fold" in args.only:
                out = bench_writes("fold", base, size, args.rounds, rng)
                report("fold", size, "write of one file", out)
                report("fold", size, "write of one file", out, mean=True)
            if "group" in args.only:
                out = bench_writes("group", base, size, args.rounds, rng)
                report("group", size, "write of one file, one writer", out)
                report("group", size, "write of one file, one writer", out, mean=True)
            if "blob" in args.only:
                report("blob", size, "read, no write since", bench_blob(base, size, args.rounds * 5, rng))
            if "packcheck" in args.only:
                report("packcheck", size, "read right after a write", bench_packcheck(base, size, args.rounds, rng))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
