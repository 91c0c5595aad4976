"""Where 4 contended writer processes spend their CPU: cProfile of ``bench_concurrent``'s writers.

```sh
.venv/bin/python bench/profile_concurrent.py                    # 4 processes x 40 writes, 10k files
cd /tmp/main-tree && /path/to/.venv/bin/python bench/profile_concurrent.py   # the same for another tree's code
```

Each writer process profiles only its timed writes (``process_time``, so a wait
costs nothing) and dumps its stats; the parent merges them and prints the
functions with the most own time, the system calls by count, and the share of
the cross-process hand-off (:mod:`gitmem.git.spool`: publishing, taking,
gathering, settling, collecting, waking, and the lock's helper threads). cProfile
inflates code made of many small Python calls far more than system calls, so
compare shares and counts between two trees profiled in the same minutes, not
milliseconds with an unprofiled run.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import glob
import inspect
import os
import pstats
import shutil
import sys
import tempfile
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import bench_concurrent, bulk
from gitmem import GitFileStore

HANDOFF = {"take", "queued", "gather", "publish", "collect", "settle", "mark", "landed", "ring", "answered", "own_slot"}


def profiled_writer(out: str) -> object:
    """``bench_concurrent.writer`` with a profiler around its timed loop only."""
    source = inspect.getsource(bench_concurrent.writer)
    source = source.replace(
        "    cpu = time.process_time()\n",
        "    cpu = time.process_time()\n    _prof = cProfile.Profile(time.process_time)\n    _prof.enable()\n",
        1,
    )
    source = source.replace(
        "    if threading.current_thread()",
        "    _prof.disable()\n    _prof.dump_stats(os.path.join(OUT, f'w-{os.getpid()}-{id(_prof)}.prof'))\n"
        "    if threading.current_thread()",
        1,
    )
    namespace = dict(vars(bench_concurrent), cProfile=cProfile, OUT=out)
    exec(compile(source, bench_concurrent.__file__, "exec"), namespace)
    return namespace["writer"]


def handoff_share(stats: pstats.Stats) -> tuple[float, list[tuple[str, int, float]]]:
    """Cumulative CPU of the hand-off's entry points (no call counted inside another)."""
    rows: dict[str, tuple[int, float]] = {}
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, object]] = stats.stats  # type: ignore[attr-defined]
    for (path, _line, name), (_cc, calls, _tt, cum, _callers) in raw.items():
        base = os.path.basename(path)
        if base in ("repo.py", "writeround.py") and name == "on_wait":  # publish and own_slot run inside it
            rows[f"{base}:on_wait"] = (calls, cum)
        elif base == "spool.py" and name in HANDOFF - {"publish", "own_slot"}:
            rows[f"spool.py:{name}"] = (calls, cum)
        elif base == "threading.py" and name == "start":
            rows["threading: Thread.start"] = (calls, cum)
        elif base == "locks.py" and name == "_in_helper":
            rows["locks.py:_in_helper"] = (calls, cum)
    table = sorted(((k, n, cum) for k, (n, cum) in rows.items()), key=lambda r: -r[2])
    return sum(cum for _, _, cum in table), table


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    out = tempfile.mkdtemp(prefix="gitmem-prof-")
    base = tempfile.mkdtemp(prefix="gitmem-bench-prof-")
    try:
        bench_concurrent.writer = profiled_writer(out)  # type: ignore[assignment]
        GitFileStore.init(os.path.join(base, "git"))
        bulk.import_files(os.path.join(base, "git"), bulk.files(args.files))
        rate, cpu = bench_concurrent.one("git", base, 4, args.writes, args.files, False)[:2]
        stats = pstats.Stats(*glob.glob(os.path.join(out, "*.prof")))
        total = stats.total_tt  # type: ignore[attr-defined]
        print(
            f"# 4 processes x {args.writes} writes, {args.files} files, load {os.getloadavg()[0]:.1f}, "
            f"{time.strftime('%H:%M', time.gmtime())} UTC; under the profiler {rate:.0f} writes/s, CPU per write {cpu:.2f} ms"
        )
        spent, table = handoff_share(stats)
        print(f"profiled CPU {total * 1e3:.0f} ms; hand-off {spent * 1e3:.0f} ms ({spent / total:.0%})")
        for key, calls, cum in table:
            print(f"  {calls:6d} {cum * 1e3:8.1f} ms  {key}")
        calls_by: collections.Counter[str] = collections.Counter()
        raw = stats.stats  # type: ignore[attr-defined]
        for (path, _line, name), (_cc, calls, _tt, _cum, _callers) in raw.items():
            if path == "~" and any(k in name for k in ("posix.", "fcntl.", "select.", "start_new_thread")):
                calls_by[name.replace("<built-in method ", "").rstrip(">")] += calls
        print("system calls: " + ", ".join(f"{name} {n}" for name, n in calls_by.most_common(12)))
        stats.sort_stats("tottime").print_stats(args.top)
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
