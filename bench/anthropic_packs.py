"""The pack folder under a burst of memory-tool commands, and the CPU of the folds' git children.

```sh
git archive <rev> gitmem bench | tar -x -C /tmp/old          # the code to compare against
TMPDIR=/dev/shm .venv/bin/python bench/anthropic_packs.py --code /tmp/old
TMPDIR=/dev/shm .venv/bin/python bench/anthropic_packs.py
```

Runs ``bench_anthropic.py``'s command sequence (``--files`` notes: create, view,
str_replace, insert each, then a rename and a delete of each) through our tool
with the code at ``--code``, and prints the pack index files in ``objects/pack``
(live packs and folded ones not yet deleted; a third of the way in, the most
seen, and at the end), the first ``list()`` of a fresh store handle a third of
the way in, and CPU per command: this process's and its git children's (the
folds' ``pack-objects``; a process's own CPU time leaves children out).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--code", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args()
    sys.path.insert(0, args.code)
    from bench.bench_anthropic import ours, sequence, settle
    from gitmem import GitFileStore

    steps = sequence(args.files)
    with tempfile.TemporaryDirectory(prefix="gitmem-anthropic-packs-") as tmp:
        call = ours(Path(tmp))
        pack_dir = next(Path(tmp).rglob("objects/pack"))

        def indexes() -> int:
            return len([name for name in os.listdir(pack_dir) if name.endswith(".idx")])

        children, own = _cpu(resource.RUSAGE_CHILDREN), _cpu(resource.RUSAGE_SELF)
        most, mid, fresh = 0, 0, []
        for n, (_, payload) in enumerate(steps):
            call(f"toolu_{n:06d}", payload)
            if n % 50 == 0:
                most = max(most, indexes())
            if n == len(steps) // 3:
                mid = indexes()
                paused = _cpu(resource.RUSAGE_SELF)
                for _ in range(20):
                    store = GitFileStore.open(pack_dir.parent.parent).sync
                    start = time.perf_counter()
                    store.list()
                    fresh.append(time.perf_counter() - start)
                own += _cpu(resource.RUSAGE_SELF) - paused  # the fresh reads are not the commands' CPU
        own = _cpu(resource.RUSAGE_SELF) - own
        children = _cpu(resource.RUSAGE_CHILDREN) - children
        end = indexes()
        settle()
    print(
        f"{args.code}: {len(steps)} commands; pack index files a third in {mid}, most {max(most, end)}, at the end {end}; "
        f"fresh handle's first list() a third in p50 {statistics.median(fresh) * 1e3:.2f} ms; CPU per command: "
        f"own {own / len(steps) * 1e3:.2f} ms, git children {children / len(steps) * 1e3:.2f} ms; "
        f"load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
