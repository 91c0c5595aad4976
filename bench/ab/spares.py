"""Recycled files on or off: one plain write on two mounts in one process, and the directory store beside them.

Each round writes a new file to mount ``on`` (the spare pool in use: pack, index
and ref lock are recycled files, :mod:`gitmem.git.spares`), to mount ``off`` (the
pool switched off for that mount: every file created, folded packs deleted) and
one item to the plain-directory store (:class:`bench.dirstore.DirStore`), in a
random order, all in the same temporary folder so they share the file system's
state. Prints wall and thread-CPU p50/p95 and the ratios, and how many of the
``on`` mount's files came from the pool::

    .venv/bin/python bench/ab/spares.py [--rounds 3000] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.dirstore import DirStore
from gitmem.git import spares
from gitmem.root import Root


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--dir", default=None, help="Parent folder of the temporary folder (default: $TMPDIR)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-spares-", dir=args.dir))
    taken: collections.Counter[str] = collections.Counter()
    real = (spares.take, spares.give, spares.keep)
    root = Root(tmp / "root")
    on = root.mount("on", create=True).sync
    off = root.mount("off", create=True).sync
    off_path = off.path  # type: ignore[attr-defined]

    def take(repo_path: str, size: int) -> tuple[str, int, os.stat_result] | None:
        if repo_path == off_path:
            return None
        got = real[0](repo_path, size)
        taken["pool" if got else "created"] += 1
        return got

    def give(repo_path: str, path: str) -> None:
        if repo_path != off_path:
            real[1](repo_path, path)
            return
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    def keep(repo_path: str, path: str, size: int) -> None:
        if repo_path != off_path:
            real[2](repo_path, path, size)

    spares.take, spares.give, spares.keep = take, give, keep  # type: ignore[assignment]
    try:
        base = DirStore(str(tmp / "dir"))
        times: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in ("on", "off", "dir")}
        rng = random.Random(7)
        print(f"recycled files A/B: {args.rounds} rounds in {tmp}, load {os.getloadavg()[0]:.2f}")
        for n in range(args.rounds):
            path = f"notes/{n % 251:03d}/{n}.md"
            text = f"note {n}: " + " ".join(rng.choices(["alpha", "beta", "gamma", "delta"], k=12))
            calls = [
                ("on", lambda p=path, t=text: on.write(p, t, expected=None)),
                ("off", lambda p=path, t=text: off.write(p, t, expected=None)),
                ("dir", lambda p=path, t=text: base.write(p, t, expected=None)),
            ]
            rng.shuffle(calls)
            for who, call in calls:
                w, c = time.perf_counter(), time.thread_time()
                call()
                times[who][0].append(time.perf_counter() - w)
                times[who][1].append(time.thread_time() - c)
        print("| store | p50 ms | p95 ms | CPU p50 ms | ratio p50 to dir | CPU ratio |")
        print("| --- | --- | --- | --- | --- | --- |")
        dw, dc = times["dir"]
        for who in ("on", "off", "dir"):
            w, c = times[who]
            print(
                f"| {who} | {p(w, 0.5):.3f} | {p(w, 0.95):.3f} | {p(c, 0.5):.3f} |"
                f" {p(w, 0.5) / p(dw, 0.5):.2f}x | {p(c, 0.5) / p(dc, 0.5):.2f}x |"
            )
        ow, oc = times["on"]
        fw, fc = times["off"]
        print(f"on / off: p50 {p(ow, 0.5) / p(fw, 0.5):.2f}x, CPU {p(oc, 0.5) / p(fc, 0.5):.2f}x")
        print(f"files of the 'on' mount: {taken['pool']} recycled, {taken['created']} created")
        print(f"load at the end {os.getloadavg()[0]:.2f}")
    finally:
        spares.take, spares.give, spares.keep = real  # type: ignore[assignment]
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
