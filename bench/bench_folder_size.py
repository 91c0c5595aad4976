"""Does a write cost more in a big folder? Creates and edits in folders of 30 to 5,000 files, build against build.

```sh
git worktree add /tmp/before 1570ecd                  # any two checkouts of gitmem
.venv/bin/python bench/bench_folder_size.py --sizes 30 300 1000 5000 --rounds 300 before=/tmp/before after=.
.venv/bin/python bench/bench_folder_size.py --dir /mnt/ext4/NAME before=/tmp/before after=.   # another file system
```

A memory's folder is a git tree, and every write to a file in it makes a new
tree of the whole folder: a records namespace, a folder of notes an agent keeps
adding to. For each size, a memory holding one folder of that many files is
made in one commit (``apply``), and each build (``NAME=FOLDER``, a checkout whose
``gitmem`` is imported) gets a writer process of its own on its own copy. Per
round, the builds in random order: a new file created in the folder, then
deleted (so the folder keeps its size), and a file of it edited. Printed: the
p50 of the writer thread's CPU time per operation and each build's ratio to the
first build named.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.pipechild import PipeChild
from gitmem import GitFileStore
from gitmem.model import Edit

_CHILD = r"""
import os, sys, time
src, path = sys.argv[1:3]
sys.path.insert(0, src)
import gitmem
assert os.path.abspath(gitmem.__file__).startswith(os.path.abspath(src)), gitmem.__file__
store = gitmem.GitFileStore.open(path).sync
print("ready", flush=True)
for line in sys.stdin:
    op, name, text = line.split()
    if op == "create":
        c = time.thread_time(); version = store.write(name, text + "\n", expected=None); c = time.thread_time() - c
        store.delete(name, expected=version)
    else:
        version = store.read(name).version
        c = time.thread_time(); store.write(name, text + "\n", expected=version); c = time.thread_time() - c
    print(c, flush=True)
"""


def build(path: str, files: int) -> None:
    """One folder of ``files`` notes, in one commit."""
    GitFileStore.init(path)
    store = GitFileStore.open(path).sync
    store.apply([Edit(f"notes/n{i:05d}.md", f"note {i}\n", None) for i in range(files)])


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("builds", nargs="+", help="NAME=FOLDER: a checkout of gitmem")
    parser.add_argument("--sizes", type=int, nargs="+", default=[30, 300, 1000, 5000])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--dir", help="make the memories under this folder (another file system)")
    args = parser.parse_args()
    builds = dict(item.split("=", 1) for item in args.builds)
    rng = random.Random(7)
    base = tempfile.mkdtemp(prefix="gitmem-bench-folder-", dir=args.dir)
    try:
        print("| files in the folder | operation | " + " | ".join(f"{n} µs CPU p50" for n in builds) + " | ratio |")
        print("|---|---|" + "---|" * (len(builds) + 1))
        for files in args.sizes:
            first = os.path.join(base, f"m{files}-0.git")
            build(first, files)
            writers = {}
            for i, (name, src) in enumerate(builds.items()):
                copy = os.path.join(base, f"m{files}-{i}.git")
                if copy != first:
                    shutil.copytree(first, copy)
                writers[name] = PipeChild([sys.executable, "-c", _CHILD, os.path.abspath(src), copy])
            times: dict[str, dict[str, list[float]]] = {op: {n: [] for n in builds} for op in ("create", "edit")}
            try:
                for k in range(args.rounds):
                    for name in rng.sample(list(builds), len(builds)):
                        times["create"][name].append(writers[name].ask("create", f"notes/new{k:05d}.md", f"new{k}"))
                        path = f"notes/n{rng.randrange(files):05d}.md"
                        times["edit"][name].append(writers[name].ask("edit", path, f"edit{k}"))
            finally:
                for writer in writers.values():
                    writer.close()
            for op, by in times.items():
                p50 = {n: statistics.median(v[len(v) // 10 :]) * 1e6 for n, v in by.items()}
                base_p50 = p50[next(iter(builds))]
                cells = " | ".join(f"{v:.0f}" for v in p50.values())
                ratios = ", ".join(f"{n} {v / base_p50:.2f}x" for n, v in p50.items())
                print(f"| {files} | {op} | {cells} | {ratios} |", flush=True)
        print(f"# load {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
