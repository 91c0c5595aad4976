"""CPU and wall time per CAS write on a fresh 10k-file memory, for any checkout of gitmem.

```sh
git archive <rev> gitmem bench | tar -x -C /tmp/old          # the code to compare against
.venv/bin/python bench/write_cpu.py --code /tmp/old --writes 400
.venv/bin/python bench/write_cpu.py --writes 400              # this checkout
```

Builds a 10k-file memory with ``bench/bulk.py`` (of the checkout being measured), then
makes ``--writes`` CAS writes of random files (versions remembered, no reads between)
and prints p50/p95 of wall and thread CPU time. Run the two checkouts alternately so
that load hits both alike.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--code", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--writes", type=int, default=400)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    sys.path.insert(0, args.code)
    from bench import bulk
    from gitmem import GitFileStore

    base = tempfile.mkdtemp(prefix="gitmem-write-cpu-", dir=args.workdir)
    try:
        path = os.path.join(base, "m.git")
        GitFileStore.init(path)
        bulk.import_files(path, bulk.files(10_000))
        store = GitFileStore.open(path).sync
        rng, corpus = random.Random(3), bulk.Corpus(seed=4)
        paths = [bulk.layout_path(i) for i in range(10_000)]
        versions: dict[str, str] = {}
        wall: list[float] = []
        cpu: list[float] = []
        for _ in range(args.writes):
            p = rng.choice(paths)
            version = versions.get(p) or store.read(p).version
            text = corpus.fresh()
            t0, c0 = time.perf_counter(), time.thread_time()
            versions[p] = store.write(p, text, expected=version)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.thread_time() - c0)
        wall.sort()
        cpu.sort()
        n = len(wall)
        print(
            f"{args.code}: write p50 {wall[n // 2] * 1e3:.2f} ms p95 {wall[int(n * 0.95)] * 1e3:.2f} ms, "
            f"CPU p50 {cpu[n // 2] * 1e3:.2f} ms p95 {cpu[int(n * 0.95)] * 1e3:.2f} ms; load {os.getloadavg()[0]:.1f}"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
