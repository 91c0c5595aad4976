"""First ``gitmem grep`` of a mount with no index, against ``git grep``, one or more gitmem installs in one run.

What a fresh clone's first grep costs through the CLI: each gitmem command given
(this checkout's, a regular install, an older version's) and ``git grep -i -F`` of
the same word in the same repository, alternated sample by sample, as medians of
wall and CPU time (the child's and its children's: git included) with the ratios.
The answers of all gitmem commands must be equal (byte for byte), else it stops.

The mounts come from ``bench_scale.py``'s cache (``--cache``, built there) and are
*copied* (``files.git`` only) into a scratch folder, because the index folder is
deleted: the cache is shared. While measuring, this process holds the mount's
index lock, so no detached indexer starts and every sample is a first grep::

    .venv/bin/python bench/bench_first_grep.py --sizes 1000 10000 100000 --samples 9 \\
        --gitmem .venv/bin/gitmem /tmp/wv/bin/gitmem
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU ms of one child (CPU: user + system of it and the children it waited for)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}")
    return (time.perf_counter() - start) * 1000, (usage.ru_utime + usage.ru_stime) * 1000


def measure(root: Path, samples: int, gitmems: list[str], word: str) -> None:
    files = root / "files.git"
    shutil.rmtree(files / "gitmem" / "index", ignore_errors=True)
    with open(files / "gitmem" / "index.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        env = dict(os.environ, GITMEM_ROOT=str(root))
        cmds = [[g, "grep", "files", word, "--limit", "10000"] for g in gitmems]
        cmds.append(["git", f"--git-dir={files}", "grep", "-i", "-F", "-e", word, "main"])
        answers = [subprocess.run(c, env=env, capture_output=True, check=True).stdout for c in cmds[:-1]]
        if any(a != answers[0] for a in answers):
            raise SystemExit(f"{root.name}: the gitmem commands answer differently")
        walls: list[list[float]] = [[] for _ in cmds]
        cpus: list[list[float]] = [[] for _ in cmds]
        loads = []
        for _ in range(samples):
            for i, cmd in enumerate(cmds):
                wall, cpu = run(cmd, env)
                walls[i].append(wall)
                cpus[i].append(cpu)
            loads.append(os.getloadavg()[0])
        if (files / "gitmem" / "index").exists():
            raise SystemExit("an index was built while measuring: not a first grep")
    med = statistics.median
    git_wall, git_cpu = med(walls[-1]), med(cpus[-1])
    lines = len(answers[0].splitlines())
    print(f"{root.name}: {lines} lines, git grep {git_wall:.0f} ms (cpu {git_cpu:.0f}), "
          f"load {min(loads):.1f}-{max(loads):.1f}, {samples} samples")  # fmt: skip
    for i, cmd in enumerate(cmds[:-1]):
        wall, cpu = med(walls[i]), med(cpus[i])
        print(f"  {cmd[0]}: {wall:.0f} ms (cpu {cpu:.0f}) = {wall / git_wall:.2f}x wall, {cpu / git_cpu:.2f}x cpu")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "gitmem-bench-scale",
                        help="bench_scale.py's cache (read only: the mounts are copied)")  # fmt: skip
    parser.add_argument("--samples", type=int, default=9)
    parser.add_argument("--word", default="zeppelin")
    parser.add_argument("--gitmem", nargs="+", default=[str(Path(sys.executable).with_name("gitmem"))],
                        help="gitmem commands to compare (each a path to a gitmem script)")  # fmt: skip
    args = parser.parse_args()
    for n in args.sizes:
        source = args.cache / f"n{n}" / "files.git"
        if not source.is_dir():
            raise SystemExit(f"no {source}: build it with bench/bench_scale.py --sizes {n} --cache {args.cache}")
        with tempfile.TemporaryDirectory(prefix="gitmem-first-grep-") as scratch:
            root = Path(scratch) / f"n{n}"
            root.mkdir()
            shutil.copytree(source, root / "files.git", symlinks=True)
            measure(root, args.samples, args.gitmem, args.word)


if __name__ == "__main__":
    main()
