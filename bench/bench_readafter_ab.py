"""The agent's edit loop, one build of gitmem against another in the same run.

```sh
git worktree add /tmp/before d2c2598                  # any two checkouts of gitmem
.venv/bin/python bench/bench_readafter_ab.py --files 1000 --rounds 200 before=/tmp/before after=.
```

Each build (``NAME=FOLDER``, a checkout whose ``gitmem`` package is imported)
gets its own writer process, its own reader process and its own copy of one
memory built here by single-file commits (as ``bench_readafter.py`` does), and
a directory store gets the same files. Per round, the builds in random order:
the rounds of ``bench_readafter.py`` (a write; a read of another file in the
writing process; a write, then a read of that file in the reader and in the
writer; a write, then two reads of another file in the reader, the second with
no write between). With ``--build-each`` each build writes its own
copy of the memory (the same commits, by a child importing that build), for a
change to what a write leaves on disk. Printed: p50 of CPU time per read, with the ratio to the
directory store of the same run. This is how each change to the read path was
measured on and off (docs/benchmarks.md, "Reads right after a write").
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

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import bulk
from bench.pipechild import PipeChild

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = r"""
import os, sys, time
src, role, path, here = sys.argv[1:5]
sys.path[:0] = [src, here]
import gitmem
assert os.path.abspath(gitmem.__file__).startswith(os.path.abspath(src)), gitmem.__file__
if role == "dir":
    from bench.dirstore import DirStore
    store = DirStore(path)
else:
    from gitmem import GitFileStore
    store = GitFileStore.open(path).sync
print("ready", flush=True)
for line in sys.stdin:
    cmd, name, *rest = line.split()
    if cmd == "r":
        c = time.thread_time(); store.read(name); c = time.thread_time() - c
    else:
        version = store.read(name).version
        text = "edit " + rest[0] + " " + "x" * 400 + "\n"
        c = time.thread_time(); store.write(name, text, expected=version); c = time.thread_time() - c
    print(c * 1e6, flush=True)
"""

_BUILD = r"""
import os, sys
src, path, files, here = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.path[:0] = [src, here]
import gitmem
assert os.path.abspath(gitmem.__file__).startswith(os.path.abspath(src)), gitmem.__file__
from bench import bulk
from gitmem import GitFileStore
GitFileStore.init(path)
store, corpus = GitFileStore.open(path).sync, bulk.Corpus(seed=6)
for i in range(files):
    store.write(bulk.layout_path(i), corpus.text(i), expected=None)
"""

ROWS = (
    "write",
    "after write, same process",
    "after write, other process",
    "just written, same process",
    "just written, other process",
    "no write between, other process",
)


def child(src: str, role: str, path: str) -> PipeChild:
    """A writer or reader process importing gitmem from ``src`` (``role``: ``git`` or ``dir``)."""
    return PipeChild([sys.executable, "-c", _CHILD, src, role, path, HERE])


def build(base: str, files: int) -> tuple[str, str]:
    from bench.dirstore import DirStore
    from gitmem import GitFileStore

    git_path, dir_path = os.path.join(base, "m.git"), os.path.join(base, "d")
    GitFileStore.init(git_path)
    store, plain, corpus = GitFileStore.open(git_path).sync, DirStore(dir_path), bulk.Corpus(seed=6)
    for i in range(files):
        store.write(bulk.layout_path(i), corpus.text(i), expected=None)
        plain.write(bulk.layout_path(i), corpus.text(i), expected=None)
    return git_path, dir_path


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--dir", help="build the memories under this folder (another file system)")
    parser.add_argument(
        "--build-each",
        action="store_true",
        help="each build writes its own memory (the same commits): for a change to what a write leaves on disk",
    )
    parser.add_argument("builds", nargs="+", help="NAME=FOLDER: a checkout of gitmem")
    args = parser.parse_args()
    builds = dict(b.split("=", 1) for b in args.builds)
    base = tempfile.mkdtemp(prefix="gitmem-bench-readafter-ab-", dir=args.dir)
    try:
        git_path, dir_path = build(base, args.files)
        pairs: dict[str, tuple[PipeChild, PipeChild]] = {}
        for name, src in builds.items():
            copy = os.path.join(base, f"{name}.git")
            if args.build_each:
                subprocess.run([sys.executable, "-c", _BUILD, src, copy, str(args.files), HERE], check=True)
            else:
                shutil.copytree(git_path, copy)
            pairs[name] = (child(src, "git", copy), child(src, "git", copy))
        pairs["dir"] = (child(HERE, "dir", dir_path), child(HERE, "dir", dir_path))
        out = {name: {row: [] for row in ROWS} for name in pairs}
        rng = random.Random(args.files)
        paths = [bulk.layout_path(i) for i in range(args.files)]
        for i in range(args.rounds):
            a, b, c = rng.choice(paths), rng.choice(paths), rng.choice(paths)
            for name in rng.sample(list(pairs), len(pairs)):
                writer, reader = pairs[name]
                got = out[name]
                got["write"].append(writer.ask("w", a, str(i)))
                got["after write, same process"].append(writer.ask("r", b))
                writer.ask("w", c, str(i))
                got["just written, other process"].append(reader.ask("r", c))
                got["just written, same process"].append(writer.ask("r", c))
                writer.ask("w", a, f"{i}b")
                got["after write, other process"].append(reader.ask("r", b))
                got["no write between, other process"].append(reader.ask("r", b))
        for writer, reader in pairs.values():
            writer.close()
            reader.close()
        names = [n for n in pairs if n != "dir"]
        print(f"# {args.files} files, {args.rounds} rounds, load {os.getloadavg()[0]:.1f}; CPU µs p50 (ratio to dir)")
        print("| row | dir | " + " | ".join(names) + " |")
        print("|---|---" + "|---" * len(names) + "|")
        for row in ROWS:
            d = statistics.median(out["dir"][row])
            cells = [f"{statistics.median(out[n][row]):.0f} ({statistics.median(out[n][row]) / d:.2f}x)" for n in names]
            print(f"| {row} | {d:.0f} | " + " | ".join(cells) + " |")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
