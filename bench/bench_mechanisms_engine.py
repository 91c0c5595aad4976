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
- ``diff``: :func:`gitmem.git.history.diff`'s own path for plain edits (only the
  folders that changed are read) against libgit2's tree diff for every diff, timed
  on the diff of the last commit (one file edited) of a memory of ``size`` files.
- ``trailers``: :func:`gitmem.provenance.parse_trailers`' split of a message shaped
  as gitmem writes it (``_plain_trailers``) against git's rules for every message,
  timed on ``log`` of the last 500 commits (of 600: the memory's size does not enter).
- ``proposal``: :func:`gitmem.git.review.proposal_head` (the loose ref file read by
  hand, and that a run has no proposal remembered with the ``stat`` of
  ``packed-refs``) against libgit2's read of the ref, timed on a run's read (every
  read of a run's view asks) without a proposal and with one.
- ``absent``: the same, with only the memory of an absent proposal switched off
  (the loose ref file still read by hand first).

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
from gitmem import GitFileStore, Origin, provenance
from gitmem.git import control, engine, history, packfold
from gitmem.git import review as git_review
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


_diff = history.diff


def library_diff(repo: GitRepo, fmt: Any, a: str, b: str | None = None, path: str | None = None, *, head: str | None = None) -> Any:
    """Every diff by libgit2's tree diff (what ``history.diff`` does for renames and modes)."""
    exact, prefix = history._path_filter(path, fmt)
    r = repo.fresh()
    old = r[history.resolve(repo, a)].peel(pygit2.Commit).tree
    new = r[(head or repo.head()) if b is None else history.resolve(repo, b)].peel(pygit2.Commit).tree
    return history._libgit2_diff(old, new, exact, prefix)


def proposal_head_library(git: GitRepo, run: str) -> str | None:
    """The proposal's head as libgit2 reads the ref: no ref file read by hand, no memory of an absence."""
    return git.ref_target(git_review.proposal_ref(run))


def proposal_head_unremembered(git: GitRepo, run: str) -> str | None:
    """The loose ref file read by hand, then libgit2: no memory of an absence."""
    ref = git_review.proposal_ref(run)
    head = git_review.read_ref_file(os.path.join(git.path, *ref.split("/")))
    return head if head is not None else git.ref_target(ref)


SWITCHES: dict[str, list[tuple[Any, str, Any]]] = {
    "walk": [(history, "walk", walker_walk)],
    "fold": [(packfold, "fold", lambda *a, **k: None)],
    "blob": [(GitRepo, "blob", library_blob)],
    "packcheck": [(GitRepo, "fresh", fresh_checking_packs)],
    "diff": [(history, "diff", library_diff)],
    "trailers": [(provenance, "_plain_trailers", lambda message: None)],
    "proposal": [(git_review, "proposal_head", proposal_head_library)],
    "absent": [(git_review, "proposal_head", proposal_head_unremembered)],
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


def bench_diff(base: str, size: int, rounds: int, rng: random.Random) -> dict[bool, list[Sample]]:
    """``diff`` of the last commit (one file edited) of a memory of ``size`` files."""
    path, paths = memory(base, size, "diff")
    store = GitFileStore.open(path).sync
    target = paths[size // 2]
    store.write(target, "edited\n" + store.read(target).text, expected=store.read(target).version)
    head = store.log(limit=1)[0].commit

    def call() -> object:
        return store.diff(head + "~1", head)

    with off("diff", True):
        expect = call()
    assert call() == expect and len(expect) == 1
    out = alternate("diff", rounds, call, rng)
    shutil.rmtree(path, ignore_errors=True)
    return out


def bench_trailers(base: str, commits: int, rounds: int, rng: random.Random) -> dict[bool, list[Sample]]:
    """``log`` of the last 500 of ``commits`` store writes: each commit's message parsed."""
    path = os.path.join(base, f"trailers{commits}.git")
    build_history(path, commits)
    store = GitFileStore.open(path).sync

    def call() -> object:
        return store.log(limit=500)

    with off("trailers", True):
        expect = call()
    assert call() == expect
    out = alternate("trailers", rounds, call, rng)
    shutil.rmtree(path, ignore_errors=True)
    return out


def bench_proposal(name: str, base: str, size: int, rounds: int, rng: random.Random) -> dict[str, dict[bool, list[Sample]]]:
    """A read by a run with no proposal (refs packed, as after a gc), and by one with a loose proposal ref."""
    path, paths = memory(base, size, "proposal")
    store = GitFileStore.open(path).sync
    for i in range(5):  # other runs' proposals, packed with main
        store.proposing(f"run-{i}").write(f"drafts/{i}.md", "draft\n", expected=None)
    store.gc()
    store.proposing("writer-1").write("drafts/w.md", "draft\n", expected=None)  # a loose proposal ref
    views = {"a run's read, no proposal": store.for_run("reader-1"), "a run's read, its proposal": store.for_run("writer-1")}
    out: dict[str, dict[bool, list[Sample]]] = {what: {True: [], False: []} for what in views}
    for _ in range(rounds):
        for what, view in views.items():
            for on in rng.sample([True, False], 2):
                p = rng.choice(paths)
                with off(name, not on):
                    out[what][on].append(timed(lambda p=p, view=view: view.read(p)))
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
            if "diff" in args.only:
                report("diff", size, "diff of the last commit", bench_diff(base, size, args.rounds, rng))
            if "trailers" in args.only:
                out = bench_trailers(base, 600, max(args.rounds // 4, 5), rng)  # log's cost is per commit shown
                report("trailers", size, "log, last 500 commits", out)
            for name in ("proposal", "absent"):
                if name in args.only:
                    for what, out in bench_proposal(name, base, size, args.rounds * 5, rng).items():
                        report(name, size, what, out)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
