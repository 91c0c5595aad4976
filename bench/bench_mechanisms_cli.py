"""What each speed mechanism of the CLI's read commands buys: on against off, whole processes, one run.

A CLI call is a new process, so every row times ``gitmem ls``, ``cat``, ``grep``,
``find`` or ``log`` as an agent calling it in a loop sees it, once with today's code
("on") and once with one mechanism switched off ("off"), alternated sample by
sample so background load hits both alike. Each row prints the medians (p50) and the
ratio on/off: below 1 the mechanism makes the command faster.

The switches live in the child program (:data:`CHILD`), never in gitmem: the child
runs the ``gitmem`` entry point's code with the mechanism replaced by the path that
is left without it, so nothing in the package exists only for this bench:

- ``quick``: no second argv parser (:mod:`gitmem.adapters.cli.quick`, when present):
  click parses every command line;
- ``peek``: the libgit2-free reader declines (:class:`gitmem.git.peek.Peek` raises
  ``CannotPeek``, when present), so ``ls``, ``cat``, ``grep`` and ``find`` of ``main``
  are answered by the store (pygit2, and the index for ``grep`` and ``find``);
- ``listing``: the saved listing of ``main`` (``gitmem/derived/listing``, when present)
  is neither read nor written, so ``ls`` describes every file each time;
- ``gc``: the collector keeps Python's default threshold (700) instead of the CLI's;
- ``index``: the memory has no search index and no indexer is started (what the
  detached indexer a read spawns buys the next ``grep`` or ``find``).

"all" switches off every mechanism at once: the one correct path, click and the
store. A switch that names code this checkout does not have changes nothing.

The memory (``files``) has N commits made with ``git fast-import`` (one ~500-byte
note each, every 10th also editing ``hot.md``), repacked; its index is built once.
``bare`` is a copy without an index. Each file system given with ``--scratch`` gets
its own copies, so the table says what each mechanism buys there.

``--code DIR`` runs the off arm with another checkout's code and no switch (e.g. the
commit before a mechanism was deleted): the "before/after" of a deletion.

Usage::

    .venv/bin/python bench/bench_mechanisms_cli.py --python /tmp/v/bin/python          # a regular install's Python
    .venv/bin/python bench/bench_mechanisms_cli.py --sizes 1000 --samples 5 --only ls cat
    .venv/bin/python bench/bench_mechanisms_cli.py --python /tmp/new/bin/python --code-python /tmp/old/bin/python
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CHILD = r"""
import sys
off = set(filter(None, sys.argv[1].split(",")))
sys.argv = ["gitmem", *sys.argv[2:]]
if off & {"peek", "listing"}:
    try:
        from gitmem import quickread
    except ImportError:
        quickread = None
    if quickread is not None and "peek" in off and hasattr(quickread, "Peek"):
        def _declined(*args, **kwargs):
            raise quickread.CannotPeek("bench: peek off")
        quickread.Peek = _declined
    if quickread is not None and "listing" in off and hasattr(quickread, "_made_under"):
        quickread._made_under = lambda fmt: None
if "index" in off:
    from gitmem.index import background
    background._spawn = lambda path: None
from gitmem.adapters import cli
if "gc" in off or "quick" in off:
    import gc
    if "gc" not in off and hasattr(cli, "CALL_GC_THRESHOLD"):
        cli.DEFAULT_GC_THRESHOLDS = gc.get_threshold()
        gc.set_threshold(cli.CALL_GC_THRESHOLD, *cli.DEFAULT_GC_THRESHOLDS[1:])
    try:
        from gitmem.adapters.cli.quick import run
    except ImportError:
        run = None
    if run is not None and "quick" not in off:
        code = run(sys.argv[1:])
        if code is not None:
            sys.exit(code)
    from gitmem.adapters.cli.app import main
    main()
else:
    cli.main()
"""

ALL = "quick,peek,listing,gc"
#: (operation, arguments, the mechanisms that can change it); ``{m}`` is the mount.
OPERATIONS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "ls": (["ls", "{m}"], ("quick", "peek", "listing", "gc", ALL)),
    "ls folder": (["ls", "{m}", "topic-000/sub-00"], ("quick", "peek", "gc", ALL)),
    "cat": (["cat", "{m}", "hot.md"], ("quick", "peek", "gc", ALL)),
    "grep": (["grep", "{m}", "zeppelin", "--limit", "10000"], ("quick", "peek", "gc", "index", ALL)),
    "grep -E": (["grep", "{m}", "-E", "z.p+elin", "--limit", "10000"], ("peek",)),
    "grep, no index": (["grep", "bare", "zeppelin", "--limit", "10000"], ("peek",)),
    "find": (["find", "{m}", "zeppelin ticket"], ("quick", "peek", "gc", "index", ALL)),
    "log": (["log", "{m}", "--limit", "10"], ("gc",)),
    "help": (["--help"], ("quick",)),
}


def run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall ms and CPU ms (user + system) of one child, which must succeed."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - start) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{err.decode(errors='replace')[-800:]}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def build(root: Path, n: int, python: str) -> None:
    """``files`` (N commits, repacked, indexed) and ``bare`` (the same without an index) under ``root``."""
    from bench.bench_scale import build_files

    if (root / ".built").exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    build_files(root, n)
    env = {**os.environ, "GITMEM_ROOT": str(root)}
    subprocess.run([python, "-c", CHILD, "", "index", "rebuild", "files"], env=env, cwd=root, check=True, capture_output=True)
    shutil.copytree(root / "files.git", root / "bare.git", symlinks=True, ignore=shutil.ignore_patterns("index", "derived"))
    (root / ".built").write_text(str(n))


def measure(
    root: Path, samples: int, only: set[str], python: str, other: str | None
) -> list[tuple[str, str, float, float, float, float]]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["GITMEM_ROOT"] = str(root)
    rows = []
    for op, (args, mechanisms) in OPERATIONS.items():
        if op.split()[0].rstrip(",") not in only:
            continue
        for mech in mechanisms if other is None else ("code",):
            # A memory without an index keeps none: no indexer is started in either arm.
            on_argv = [python, "-c", CHILD, "index" if "bare" in args else "", *(a.format(m="files") for a in args)]
            if mech == "code":
                off_argv = [other, "-c", CHILD, on_argv[3], *on_argv[4:]]
            elif mech == "index":  # no index, and none started: the next call finds none either
                off_argv = [python, "-c", CHILD, "index", *(a.format(m="bare") for a in args)]
            else:
                off_argv = [python, "-c", CHILD, ",".join(filter(None, [mech, on_argv[3]])), *on_argv[4:]]
            if "index" in on_argv[3]:
                shutil.rmtree(root / "bare.git" / "gitmem" / "index", ignore_errors=True)
            for argv in (on_argv, off_argv):  # warm: .pyc files, the saved listing, page cache
                run(argv, env, root)
            on: list[tuple[float, float]] = []
            off: list[tuple[float, float]] = []
            for i in range(samples):
                pair = [(on_argv, on), (off_argv, off)]
                for argv, out in pair if i % 2 == 0 else reversed(pair):
                    out.append(run(argv, env, root))
            on_w, off_w = statistics.median(w for w, _ in on), statistics.median(w for w, _ in off)
            on_c, off_c = statistics.median(c for _, c in on), statistics.median(c for _, c in off)
            name = "all (click + store)" if mech == ALL else mech
            rows.append((op, name, on_w, off_w, on_c, off_c))
            print(f"  {op:10} {name:20} on {on_w:7.1f}  off {off_w:7.1f}  {on_w / off_w:5.2f}x  (cpu {on_c / off_c:5.2f}x)",
                  file=sys.stderr, flush=True)  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--scratch", type=Path, nargs="+", default=[Path(tempfile.gettempdir()) / "gitmem-bench-mech"],
                        help="one folder per file system; memories are built (once) under each")  # fmt: skip
    parser.add_argument("--python", default=sys.executable, help="the Python whose gitmem is measured (a regular install)")
    parser.add_argument("--code-python", help="off arm: this Python's gitmem, unswitched (before/after a deletion)")
    parser.add_argument("--only", nargs="+", default=["ls", "cat", "grep", "find", "log"])
    args = parser.parse_args()
    print("| fs | files | command | mechanism off | on p50 ms | off p50 ms | on/off | CPU on/off | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for scratch in args.scratch:
        for n in args.sizes:
            root = scratch / f"n{n}"
            build(root, n, args.python)
            load = os.getloadavg()[0]
            for op, mech, on_w, off_w, on_c, off_c in measure(root, args.samples, set(args.only), args.python, args.code_python):
                print(f"| {scratch} | {n:,} | {op} | {mech} | {on_w:.0f} | {off_w:.0f} | {on_w / off_w:.2f} | {on_c / off_c:.2f} | {load:.1f} |",
                      flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
