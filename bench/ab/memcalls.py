"""Work per write of record, session and durable memory that machine load cannot blur.

For whichever gitmem is first on ``sys.path``: Python function calls (cProfile) and
store reads per operation, next to a one-file write of the same store. Compare two
trees by running it with each::

    .venv/bin/python bench/ab/memcalls.py /path/to/tree

Counts are exact and repeatable; time is not (see the benchmarks for that).
"""

from __future__ import annotations

import cProfile
import pstats
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def main() -> None:
    tree = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    sys.path.insert(0, str(tree))
    from bench.bench_durable import activations, creates
    from gitmem import Root
    from gitmem.durable import DurableRepository
    from gitmem.gitstore import SyncGitFileStore
    from gitmem.records import RecordStore
    from gitmem.session.location import open_session_memory

    reads: list[str] = []
    real_read = SyncGitFileStore.read

    def counting_read(self: SyncGitFileStore, path: str, rev: str | None = None) -> Any:
        reads.append(path)
        return real_read(self, path, rev)

    SyncGitFileStore.read = counting_read  # type: ignore[method-assign]

    def count(work: Callable[[int], object], times: int) -> tuple[float, float]:
        reads.clear()
        profile = cProfile.Profile()
        profile.enable()
        for i in range(times):
            work(i)
        profile.disable()
        return pstats.Stats(profile).total_calls / times, len(reads) / times

    rng = random.Random(5)
    with tempfile.TemporaryDirectory() as work:
        root = Root(Path(work) / "root")
        files = root.mount("files", create=True).sync
        records = RecordStore(root.mount("facts", create=True, kind="record").sync, "alice")
        ids = [records.add(f"seed record {i}").id for i in range(20)]
        session = open_session_memory(Path(work) / "session")
        durable = DurableRepository.open(Path(work), "nodes", create=True)
        rows = {
            "one-file write": count(lambda i: files.write(f"n/{i}.md", f"text {i}", expected=None), 50),
            "record add": count(lambda i: records.add(f"fact {i}"), 50),
            "record update": count(lambda i: records.update(ids[i % 20], f"changed {i}"), 50),
            "session remember": count(lambda i: session.remember(f"a fact worth keeping number {i}"), 50),
            "durable 1-op create": count(lambda i: durable.apply(creates(f"one{i}", 1, rng)), 50),
        }
        made = [creates(f"r{r}", 128, rng) for r in range(3)]
        rows["durable 128 creates"] = count(lambda i: durable.apply(made[i]), 3)
        rows["durable 128 activations"] = count(lambda i: durable.apply(activations(f"r{i}", 128)), 3)
    print(f"gitmem from {tree}")
    print("| operation | Python calls | store reads |\n|---|---|---|")
    for name, (calls, read) in rows.items():
        print(f"| {name} | {calls:,.0f} | {read:g} |")


if __name__ == "__main__":
    main()
