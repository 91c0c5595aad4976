"""CPU per sync write, read and list of a 200-file memory, for whichever gitmem is first on ``sys.path``.

Alternate two trees in one shell loop (``TMPDIR=/dev/shm`` keeps the disk out of it)::

    TMPDIR=/dev/shm PYTHONPATH=/path/to/tree .venv/bin/python bench/ab/micro.py 600
"""

from __future__ import annotations

import gc
import os
import random
import sys
import tempfile
import time

from gitmem import GitFileStore


def main(count: int) -> None:
    with tempfile.TemporaryDirectory() as work:
        store = GitFileStore.init(os.path.join(work, "m.git")).sync
        paths = [f"notes/{i % 20}/n{i}.md" for i in range(200)]
        versions = {p: store.write(p, f"note {p}\n", expected=None) for p in paths}
        rng = random.Random(1)
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(count):
            p = rng.choice(paths)
            versions[p] = store.write(p, f"note {p} edit {i}\n", expected=versions[p])
        c1, t1 = time.process_time(), time.perf_counter()
        for _ in range(count * 5):
            store.read(rng.choice(paths))
        c2 = time.process_time()
        for _ in range(count):
            store.list()
        c3 = time.process_time()
    print(
        f"write_cpu_ms={1000 * (c1 - c0) / count:.3f} write_wall_ms={1000 * (t1 - t0) / count:.3f} "
        f"read_cpu_ms={1000 * (c2 - c1) / (count * 5):.4f} list_cpu_ms={1000 * (c3 - c2) / count:.4f}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
