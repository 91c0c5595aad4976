"""The tree step of a batch that changes several entries of one folder: this tree's ``set_paths`` against another's.

::

    git archive main gitmem | tar -x -C /tmp/main-tree
    .venv/bin/python bench/ab/batchsplice.py /tmp/main-tree [--records 2000] [--rounds 600]

Both modules start from the same record mount (``--records`` records in namespace
``alice``: 256 fan-out folders and the ``last-id`` marker) with a warm tree cache,
and apply the same batches, alternately:

- ``record add``: a new record file in ``alice/<2 hex>/`` and the marker's new text
  (two entries of ``alice/`` change: a folder's id and the marker's);
- ``rename``: a record moved from one fan-out folder to another (two folders of
  ``alice/`` change, one loses a file, one gains it).

Every resulting tree id must be the same for both; p50 thread CPU per ``set_paths``,
three alternating rounds.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

import pygit2

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from bench.bench_records import Corpus, seed_git
from gitmem import Root
from gitmem.git import treeedit
from gitmem.records.rules import IdGenerator, marker_path, record_path


def _module(tree: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("other_trees", os.path.join(tree, "gitmem/git/treeedit.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _batches(ids: list[str], n: int, kind: str, seed: int) -> list[list[tuple[str, str | None]]]:
    """The same ``n`` batches for both trees (record ids are made from the clock, so once)."""
    rng = random.Random(seed)
    gen = IdGenerator()
    left = list(ids)
    out: list[list[tuple[str, str | None]]] = []
    for i in range(n):
        if kind == "record add":
            rid = gen.next()
            out.append(
                [(record_path("alice", rid), f"{rng.getrandbits(160):040x}"), (marker_path("alice"), f"{i:040x}")]
            )
        else:
            gone = left.pop(rng.randrange(len(left)))
            out.append(
                [(record_path("alice", gone), None), (record_path("alice", gen.next()), f"{rng.getrandbits(160):040x}")]
            )
    return out


def _run(mod: ModuleType, repo: pygit2.Repository, batches: list[list[tuple[str, str | None]]]) -> tuple[float, str]:
    pending, cache = mod.PendingObjects(), mod.TreeCache()

    def read_tree(oid: str) -> bytes:
        found: bytes | None = pending.raw(oid)
        return found if found is not None else bytes(repo[oid].read_raw())

    start = str(repo[repo.head.target].peel(pygit2.Commit).tree_id)
    tree = mod.set_paths(read_tree, pending, start, [(marker_path("alice"), "0" * 40)], cache)  # warm: every
    for edits in batches:  # folder a batch touches is parsed once, as in a long-running writer
        mod.set_paths(read_tree, pending, tree, [(p, None) for p, _ in edits], cache)
    times: list[float] = []
    for edits in batches:
        started = time.thread_time()
        tree = mod.set_paths(read_tree, pending, tree, edits, cache)
        times.append(time.thread_time() - started)
    return statistics.median(times) * 1e6, tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other")
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=600)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gitmem-batchsplice-"))
    try:
        root = Root(tmp / "root")
        ids = seed_git(root, "facts", "alice", args.records, Corpus(random.Random(3)))
        repo = pygit2.Repository(root.mount("facts", kind="record").sync.path)
        other = _module(args.other)
        for kind in ("record add", "rename"):
            got: dict[str, list[float]] = {"other": [], "this": []}
            for seed in range(3):
                batches = _batches(ids, args.rounds, kind, seed)
                ours = _run(treeedit, repo, batches)
                theirs = _run(other, repo, batches)
                assert ours[1] == theirs[1], "the two trees' set_paths made different trees"
                got["this"].append(ours[0])
                got["other"].append(theirs[0])
            print(
                f"{kind}: set_paths CPU p50 us, {args.other}: {' '.join(f'{x:.0f}' for x in got['other'])}; "
                f"this tree: {' '.join(f'{x:.0f}' for x in got['this'])}"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
