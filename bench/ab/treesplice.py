"""The tree step of a write that adds a file: this tree's ``packwrite.set_path`` against another's, in one process.

::

    .venv/bin/python bench/profile_write.py prep /tmp/pw
    git archive main gitmem | tar -x -C /tmp/main-tree
    .venv/bin/python bench/ab/treesplice.py /tmp/pw /tmp/main-tree

Both modules start from the same 10k-file memory with a warm tree cache (every
folder touched once, as in a long-running writer) and add the same files: into a
random existing 50-file folder ("folder") and as ``scratch/NNN/N.md`` ("fanout": the
plain-write rows of the session and record benchmarks). Every resulting tree id
must be the same for both; p50 thread CPU per ``set_path``, three alternating rounds.
"""

from __future__ import annotations

import importlib.util
import os
import random
import statistics
import sys
import time
from types import ModuleType

import pygit2

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from bench import bulk
from gitmem.git import packwrite


def _module(tree: str) -> ModuleType:
    # The tree edits live in treeedit.py since it was split out of packwrite.py.
    name = "treeedit.py" if os.path.exists(os.path.join(tree, "gitmem/git/treeedit.py")) else "packwrite.py"
    spec = importlib.util.spec_from_file_location("other_trees", os.path.join(tree, "gitmem/git", name))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(mod: ModuleType, repo: pygit2.Repository, n: int, kind: str, seed: int) -> tuple[float, str]:
    rng = random.Random(seed)
    folders = sorted({bulk.layout_path(i).rsplit("/", 1)[0] for i in range(10_000)})
    pending, cache = mod.PendingObjects(), mod.TreeCache()

    def read_tree(oid: str) -> bytes:
        found: bytes | None = pending.raw(oid)
        return found if found is not None else bytes(repo[oid].read_raw())

    tree = str(repo[repo.head.target].peel(pygit2.Commit).tree_id)
    for folder in folders:  # warm: every folder parsed once
        mod.set_path(read_tree, pending, tree, [*folder.split("/"), "warm.md"], None, folder, cache)
    times: list[float] = []
    for i in range(n):
        path = f"scratch/{i % 251:03d}/{i}.md" if kind == "fanout" else f"{rng.choice(folders)}/added-{i}.md"
        blob = f"{rng.getrandbits(160):040x}"
        started = time.thread_time()
        tree = mod.set_path(read_tree, pending, tree, path.split("/"), blob, path, cache)
        times.append(time.thread_time() - started)
    return statistics.median(times) * 1e6, tree


def main(base: str, other_tree: str) -> None:
    repo = pygit2.Repository(os.path.join(base, "git"))
    other = _module(other_tree)
    for kind in ("folder", "fanout"):
        got: dict[str, list[float]] = {"other": [], "this": []}
        for seed in range(3):
            ours = _run(packwrite, repo, 600, kind, seed)
            theirs = _run(other, repo, 600, kind, seed)
            assert ours[1] == theirs[1], "the two trees' set_path made different trees"
            got["this"].append(ours[0])
            got["other"].append(theirs[0])
        print(
            f"{kind}: set_path CPU p50 us, {other_tree}: {' '.join(f'{x:.0f}' for x in got['other'])}; "
            f"this tree: {' '.join(f'{x:.0f}' for x in got['this'])}"
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
