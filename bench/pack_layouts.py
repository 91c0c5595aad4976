"""Fresh reads of the same files in several copies of one memory, each packed its own way: which layout is slower?

```sh
.venv/bin/python bench/bench_packs.py --writes 20000 --keep /tmp/k     # leaves /tmp/k/m.git and /tmp/k/gc.git
cp -a /tmp/k/m.git /tmp/k/adf.git && git --git-dir /tmp/k/adf.git repack -adfq
.venv/bin/python bench/pack_layouts.py --reads 300 /tmp/k/m.git /tmp/k/adf.git /tmp/k/gc.git   # last: baseline
```

Run in its own process, so no memory's objects are known from writing them
(``gitmem.git.recent``). Per sample one random file, then a second one, are read
through a new store handle on every copy, in random order: the fresh read (the
handle's first: it opens the pack indexes it searches) and the warm read (its
second). Prints per copy the median wall and CPU time and the ratio to the last.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import bulk
from bench.bench_packs import read_samples


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=300)
    parser.add_argument("--files", type=int, default=10_000, help="files of the memory (bench.bulk's layout)")
    parser.add_argument("memories", nargs="+")
    args = parser.parse_args()
    rng = random.Random(11)
    paths = [bulk.layout_path(i) for i in range(args.files)]
    fresh, cpu, warm = read_samples({m: m for m in args.memories}, paths, rng, args.reads)
    base = args.memories[-1]
    print(f"# {args.reads} samples, load {os.getloadavg()[0]:.1f}")
    for memory in args.memories:
        f, c, w = (statistics.median(s[memory]) for s in (fresh, cpu, warm))
        bf, bc, bw = (statistics.median(s[base]) for s in (fresh, cpu, warm))
        print(
            f"{memory:40} fresh {f * 1000:.3f} ms ({f / bf:.2f}x), CPU {c * 1000:.3f} ms ({c / bc:.2f}x), "
            f"warm {w * 1000:.3f} ms ({w / bw:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
