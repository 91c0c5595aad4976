"""CPU per sync write that adds a file, against one that edits a file, in a 10k-file memory.

For whichever gitmem is first on ``sys.path``; alternate two trees in one shell loop::

    .venv/bin/python bench/profile_write.py prep /tmp/pw        # once: the 10k-file memory
    for i in 1 2 3; do for t in /tmp/main-tree $PWD; do
        PYTHONPATH=$t .venv/bin/python bench/ab/addfile.py /tmp/pw 600
    done; done

Each run copies the memory (so both trees start from the same one) and does, in
turn, ``count`` writes of each kind: **fanout** adds ``scratch/NNN/N.md`` (251
folders, as the session and record benchmarks' plain-write row does), **folder** adds
a file to a random existing 50-file folder, **edit** rewrites a random existing
file (its version read beforehand, outside the timing). p50 of wall and thread CPU.
"""

from __future__ import annotations

import gc
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

from bench import bulk
from gitmem import GitFileStore
from gitmem.git.repo import set_durable


def main(base: str, count: int) -> None:
    set_durable(False)
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "git")
        shutil.copytree(os.path.join(base, "git"), path, symlinks=True)
        store = GitFileStore.open(path).sync
        rng = random.Random(5)
        corpus = bulk.Corpus(seed=5)
        paths = [bulk.layout_path(i) for i in range(10_000)]  # profile_write.py prep's layout
        kinds = ("fanout", "folder", "edit")
        wall: dict[str, list[float]] = {k: [] for k in kinds}
        cpu: dict[str, list[float]] = {k: [] for k in kinds}
        gc.collect()
        for i in range(count):
            for kind in kinds:
                version: str | None = None
                if kind == "fanout":
                    target = f"scratch/{i % 251:03d}/{i}.md"
                elif kind == "folder":
                    target = f"{rng.choice(paths).rsplit('/', 1)[0]}/added-{i}.md"
                else:
                    target = rng.choice(paths)
                    version = store.read(target).version
                text = corpus.fresh()
                t, c = time.perf_counter(), time.thread_time()
                store.write(target, text, expected=version)
                cpu[kind].append(time.thread_time() - c)
                wall[kind].append(time.perf_counter() - t)
        getattr(store.repo, "settle", lambda: None)()  # a tree whose folds ran in the background
    load = os.getloadavg()[0]
    import gitmem

    print(f"{os.path.dirname(os.path.dirname(gitmem.__file__))}: ", end="")
    print(
        " ".join(
            f"{k}_p50_ms={1000 * statistics.median(wall[k]):.3f} {k}_cpu_ms={1000 * statistics.median(cpu[k]):.3f}"
            for k in kinds
        )
        + f" load={load:.2f}"
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 600)
