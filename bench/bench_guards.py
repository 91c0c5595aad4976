"""What the hardening guards cost: the loose-object guard and the bounded regex engine.

Two comparisons, each against its baseline in the same run, interleaved sample by
sample so background load hits both alike:

- **objects**: reading every blob of a memory through a guarded pygit2 handle
  (:func:`gitmem.git.loose.open_repository`) against a plain one, when the blobs
  are loose (the guard inflates them itself) and when they are packed (the guard
  only checks that no loose file exists). Also ``store.search`` (a scan that reads
  every file) with and without the guard.
- **regex**: one search's line checks with the bounded ``regex`` matcher
  (:func:`gitmem.grep.compile_pattern`) against Python's ``re`` on the same lines.

Usage::

    .venv/bin/python bench/bench_guards.py            # 5,000 files, 15 rounds
    .venv/bin/python bench/bench_guards.py --quick    # 1,000 files, 5 rounds

It prints p50 per round and the ratio guarded / plain.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pygit2

from bench import bulk
from gitmem import GitFileStore
from gitmem.git import repo as git_repo
from gitmem.git.loose import open_repository
from gitmem.grep import compile_pattern, split_lines


def _interleave(rounds: int, a: Callable[[], object], b: Callable[[], object]) -> tuple[float, float]:
    """p50 seconds of ``a`` and of ``b``, run alternately (the first round of each is a warm-up)."""
    ta: list[float] = []
    tb: list[float] = []
    for i in range(rounds + 1):
        for fn, out in ((a, ta), (b, tb)) if i % 2 == 0 else ((b, tb), (a, ta)):
            start = time.perf_counter()
            fn()
            if i:
                out.append(time.perf_counter() - start)
    return statistics.median(ta), statistics.median(tb)


def _report(name: str, guarded: float, plain: float, unit: str = "ms") -> None:
    print(
        f"{name:52} guarded {guarded * 1e3:9.2f} {unit}   plain {plain * 1e3:9.2f} {unit}   ratio {guarded / plain:5.2f}x"
    )


def bench_objects(work: Path, files: int, rounds: int) -> None:
    path = str(work / "m.git")
    GitFileStore.init(path)
    items = list(bulk.files(files))
    bulk.import_files(path, items)  # packed blobs
    oids = [str(pygit2.Repository(path).revparse_single(f"main:{p}").id) for p, _ in items]

    def read_all(repo: pygit2.Repository) -> None:
        for oid in oids:
            repo[oid].read_raw()

    # fresh handles each round, so libgit2's caches start cold for both
    packed = _interleave(rounds, lambda: read_all(open_repository(path)), lambda: read_all(pygit2.Repository(path)))
    _report(f"read {files} packed blobs", *packed)

    loose_repo = pygit2.Repository(path)
    loose = [str(loose_repo.create_blob(data + b"\nloose copy\n")) for _, data in items]
    oids[:] = loose
    result = _interleave(rounds, lambda: read_all(open_repository(path)), lambda: read_all(pygit2.Repository(path)))
    _report(f"read {files} loose blobs", *result)

    store = GitFileStore.open(path).sync
    plain_open = git_repo.open_repository

    def search(guarded: bool) -> None:
        git_repo.open_repository = plain_open if guarded else _plain  # type: ignore[assignment]
        try:
            store.repo._local.repo = None  # reopen with the chosen handle
            store.search("deadline", path="topic-000/")
        finally:
            git_repo.open_repository = plain_open

    result = _interleave(rounds, lambda: search(True), lambda: search(False))
    _report("store.search scan of topic-000/ (packed)", *result)


def _plain(path: str, **_: object) -> pygit2.Repository:
    return pygit2.Repository(path, pygit2.enums.RepositoryOpenFlag.NO_SEARCH)


def bench_regex(files: int, rounds: int) -> None:
    lines = [line for _, data in bulk.files(files) for line in split_lines(data.decode())]
    for pattern in (r"dead\w+ne", r"(?:user|agent) \w+", r"^- .*review$"):
        compiled = re.compile(pattern, re.IGNORECASE)

        def bounded(pattern: str = pattern) -> None:
            test = compile_pattern(pattern, regex=True).test
            for line in lines:
                test(line)

        def plain(search: Callable[[str], object] = compiled.search) -> None:
            for line in lines:
                search(line)

        result = _interleave(rounds, bounded, plain)
        _report(f"check {len(lines)} lines against {pattern!r}", *result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    files, rounds = (1000, 5) if args.quick else (5000, 15)
    load = subprocess.run(["cat", "/proc/loadavg"], capture_output=True, text=True).stdout.split()[:3]
    print(
        f"files={files} rounds={rounds} load={' '.join(load)} pygit2={pygit2.__version__} libgit2={pygit2.LIBGIT2_VERSION}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        bench_objects(Path(tmp), files, rounds)
    bench_regex(files, rounds)


if __name__ == "__main__":
    main()
