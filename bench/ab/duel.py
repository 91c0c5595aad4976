"""Thread CPU per remember or per write of two checkouts, interleaved in short blocks in two processes.

On a shared machine CPU time per operation drifts by 2-3x within minutes (other
processes on the same cores), so runs of two checkouts one after the other compare
the machine's moods as much as the code. Here one worker process per checkout
builds the same memory (``bench_session``'s items and texts) and the two take
turns doing ``--block`` operations each, first one then the other, so both see the
same conditions; the ratio of their medians is taken per block pair.

::

    git worktree add --detach /tmp/base main      # the code to compare against
    TMPDIR=/dev/shm .venv/bin/python bench/ab/duel.py remember /tmp/base . --blocks 80
    TMPDIR=/dev/shm .venv/bin/python bench/ab/duel.py write /tmp/base .

``remember`` is ``SessionMemory.remember`` of new text on a 10k-item session mount,
``write`` a plain ``store.write`` of a new file there (``scratch/NNN/N.json``), ``dir``
the benchmark's directory store. Each worker imports gitmem from its checkout.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def worker(mode: str, block: int) -> None:
    """Build the memory, then answer each ``go`` line with the thread CPU of ``block`` operations."""
    import random
    import shutil

    sys.path.insert(0, os.getcwd())
    from bench import bench_session as bs

    rng = random.Random(11)
    tmp = Path(tempfile.mkdtemp(prefix="duel-"))
    try:
        preload = bs.make_items(10_000, rng, now=time.time(), age_days=1, importance=0.6)
        memory = bs.new_git_memory(tmp, "m", preload)
        len(memory)
        base = bs.DirSessionStore(tmp / "dir")
        bs.bulk.write_directory(str(base.root), bs.files_of(preload))
        texts = (bs.sentence(rng, 1_000_000 + n) + " fresh" for n in range(10**9))
        count = 0

        def op() -> None:
            nonlocal count
            count += 1
            text = next(texts)
            if mode == "remember":
                memory.remember(text)
            elif mode == "dir":
                base.remember(text)
            else:
                memory.store.write(f"scratch/{count % 251:03d}/{count}.json", text, expected=None)

        for _ in range(200):  # warm: the catalogue, the tree cache, the first folds
            op()
        print("ready", flush=True)
        for line in sys.stdin:
            if line.strip() != "go":
                break
            spent = []
            for _ in range(block):
                start = time.thread_time()
                op()
                spent.append(time.thread_time() - start)
            print(" ".join(f"{s:.7f}" for s in spent), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("mode", choices=["remember", "write", "dir"])
    parser.add_argument("base", help="the checkout to compare against")
    parser.add_argument("new", help="the checkout being measured")
    parser.add_argument("--blocks", type=int, default=40)
    parser.add_argument("--block", type=int, default=25)
    args = parser.parse_args()
    trees = [os.path.abspath(args.base), os.path.abspath(args.new)]
    workers = [
        subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", args.mode, str(args.block)],
            cwd=tree,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for tree in trees
    ]
    for w in workers:
        assert w.stdin is not None and w.stdout is not None
        if w.stdout.readline().strip() != "ready":
            raise SystemExit("a worker failed to start")
    spent: list[list[float]] = [[], []]
    ratios = []
    for b in range(args.blocks):
        medians = [0.0, 0.0]
        for k in (0, 1) if b % 2 == 0 else (1, 0):
            w = workers[k]
            assert w.stdin is not None and w.stdout is not None
            w.stdin.write("go\n")
            w.stdin.flush()
            values = [float(x) for x in w.stdout.readline().split()]
            spent[k] += values
            medians[k] = statistics.median(values)
        ratios.append(medians[1] / medians[0])
    for w in workers:
        assert w.stdin is not None
        w.stdin.write("stop\n")
        w.stdin.close()
        w.wait()
    print(f"{args.mode}, thread CPU per operation, {args.blocks} blocks of {args.block}, load {os.getloadavg()[0]:.2f}")
    for tree, values in zip(trees, spent, strict=True):
        print(
            f"  {tree}: p25 {quantile(values, 0.25) * 1000:.3f}  p50 {quantile(values, 0.5) * 1000:.3f}  "
            f"p95 {quantile(values, 0.95) * 1000:.3f} ms"
        )
    print(
        f"  new / base, median of the per-block ratios: {statistics.median(ratios):.3f} "
        f"(quartiles {quantile(ratios, 0.25):.3f}-{quantile(ratios, 0.75):.3f})"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]))
    else:
        main()
