"""A cost measure that machine load cannot blur: Python function calls per operation (cProfile).

To compare two versions of gitmem, run it once with each tree first on ``PYTHONPATH``::

    PYTHONPATH=/path/to/tree .venv/bin/python bench/ab/calls.py /path/to/tree

It counts calls for the Anthropic memory-tool command sequence of
``bench/bench_anthropic.py`` (60 files), for a CAS write and for a read.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path


def counted(work: Callable[[], object], times: int) -> float:
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(times):
        work()
    profile.disable()
    return pstats.Stats(profile).total_calls / times


def main() -> None:
    tree = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    sys.path.insert(0, str(tree))
    from bench.bench_anthropic import ours, sequence
    from gitmem import GitFileStore

    steps = sequence(60)
    with tempfile.TemporaryDirectory() as work:
        call = ours(Path(work))
        commands = iter(enumerate(steps))

        def one_command() -> None:
            n, (_, payload) = next(commands)
            call(f"toolu_{n:06d}", payload)

        per_command = counted(one_command, len(steps))
        store = GitFileStore.init(os.path.join(work, "m.git")).sync
        version = [store.write("a/b.md", "x\n", expected=None)]
        texts = iter(range(10**9))

        def write() -> None:
            version[0] = store.write("a/b.md", f"x{next(texts)}\n", expected=version[0])

        per_write = counted(write, 200)
        per_read = counted(lambda: store.read("a/b.md"), 200)
    print(f"python calls: {per_command:.0f} per memory-tool command, {per_write:.0f} per write, {per_read:.0f} per read")


if __name__ == "__main__":
    main()
