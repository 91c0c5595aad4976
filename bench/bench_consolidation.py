"""Before and after: every operation a user waits on, two checkouts of gitmem, one run.

A change that deletes code for being slow-path-free must not make a user wait
longer. This times the same operations with two builds of gitmem, each in its own
virtual environment (``--before`` and ``--after``: checkouts with ``.venv``), on its
own copy of the same memories, alternating the two sample by sample so background
load hits both alike:

- through the Python API, in one long-lived process per build (told what to do over a
  pipe, timed by the calling thread's CPU and wall clock): a write of one file; a read
  with no write since; a read of another file right after a write; ``list``;
  ``changes`` since the head before a one-file write; a durable ``recall`` (warm);
- through the CLI, a new process per call (the child's CPU, user + system, and wall):
  ``gitmem grep``, ``find``, ``ls``, ``cat``, ``log`` (the last 10 changes, and every
  change of one path), ``blame``.

The memories are built once per size and file system with the after build and copied
for each side: ``files`` (N commits with ``git fast-import``, one ~500-byte note each,
every 10th also editing ``hot.md``, repacked; its search index rebuilt by each side's
own code) and ``durable`` (N active nodes). Each ``--dirs`` folder is a file system.

``--also DIR`` times a third build in the same rounds (main before a change, say), shown as
its own ratio against ``--before``. ``--workdir`` keeps the memories (and each side's copy)
in one folder per file system between runs, so ``--build-only`` can make them outside the
bench lock; a kept side copy is reused as it is (writes of an earlier run included).
``--copies K`` gives each side K copies of the memories, each in a folder of its own, which the
API rows take in turn: on the shared root file system a folder's recent history can move a
write's CPU by 10 % and more, so one copy per side can decide a row by where it landed.
Each run writes new texts (``--seed``: the same texts written again would change nothing).

Usage::

    .venv/bin/python bench/bench_consolidation.py --before /work/wt-before
    .venv/bin/python bench/bench_consolidation.py --before ../old --sizes 1000 --dirs /tmp /mnt/ext4/x --only write read
    .venv/bin/python bench/bench_consolidation.py --before ../old --also ../main --workdir ba --build-only
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bulk
from bench.bench_mechanisms_cli import run
from bench.bench_scale import build_durable, build_files

Sample = tuple[float, float]  # (cpu, wall) ms

#: The worker each side runs with its own Python: gitmem from its own checkout, nothing of this one's
#: on its path (the script's folder, ``bench/``, holds no ``gitmem``). One request a line, tab-separated.
WORKER = r"""
import sys, time
from gitmem import SyncGitFileStore
from gitmem.durable.namespace import Namespace
from gitmem.durable.repository import DurableRepository

roots = sys.argv[1:]  # copies of the same memories (in other folders), taken in turn
stores = [SyncGitFileStore.open(root + "/files.git") for root in roots]
durable = DurableRepository.open(roots[0], "durable")
ns = Namespace("bench", "agent", "repo")

def write(store, path, text):
    store.write(path, text, expected=store.read(path).version)

def timed(call):
    c0, t0 = time.thread_time(), time.perf_counter()
    call()
    return time.thread_time() - c0, time.perf_counter() - t0

durable.recall(ns, "warm up")
print("ready", flush=True)
for line in sys.stdin:
    op, a, b, text, copy = line.rstrip("\n").split("\t")
    text = text.replace("\\n", "\n")
    store = stores[int(copy)]
    if op == "write":
        version = store.read(a).version
        cpu, wall = timed(lambda: store.write(a, text, expected=version))
    elif op == "read":
        cpu, wall = timed(lambda: store.read(a))
    elif op == "read after write":
        write(store, a, text)
        cpu, wall = timed(lambda: store.read(b))
    elif op == "list":
        cpu, wall = timed(store.list)
    elif op == "changes":
        head = store.head
        write(store, a, text)
        cpu, wall = timed(lambda: store.changes(head))
    elif op == "recall":
        cpu, wall = timed(lambda: durable.recall(ns, a))
    print(f"{cpu * 1e3} {wall * 1e3}", flush=True)
"""

API_OPS = ("write", "read", "read after write", "list", "changes", "recall")
#: CLI rows: (name, arguments); a new process each.
CLI_OPS = {
    "grep": ["grep", "files", "zeppelin", "--limit", "10000"],
    "find": ["find", "files", "zeppelin ticket"],
    "ls": ["ls", "files"],
    "cat": ["cat", "files", "hot.md"],
    "log": ["log", "files", "--limit", "10"],
    "log of a path": ["log", "files", "hot.md", "--limit", "1000000"],
    "blame": ["blame", "files", "hot.md"],
}
QUERIES = ("deploy a canary release", "rollback the schema migration", "recall vector rank", "token budget review")


class Worker:
    """One side's long-lived API process."""

    def __init__(self, python: str, roots: list[Path]) -> None:
        self.proc = subprocess.Popen(
            [python, "-c", WORKER, *map(str, roots)],
            cwd=roots[0],
            env=child_env(roots[0]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise SystemExit(f"the worker of {python} did not start")

    def ask(self, op: str, a: str = "", b: str = "", text: str = "", copy: int = 0) -> Sample:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\t".join((op, a, b, text.replace("\n", "\\n"), str(copy))) + "\n")
        self.proc.stdin.flush()
        cpu, wall = self.proc.stdout.readline().split()
        return float(cpu), float(wall)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def child_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["GITMEM_ROOT"] = str(root)
    return env


def build(base: Path, n: int, sides: dict[str, Path], keep: bool = False, copies: int = 1) -> dict[str, list[Path]]:
    """The memories of size ``n`` under ``base``, ``copies`` per side, each side's index built by its code
    (with ``keep``, a side's copy made before is used as it is)."""
    made = base / f"n{n}"
    if not (made / ".built").exists():
        shutil.rmtree(made, ignore_errors=True)
        made.mkdir(parents=True)
        build_files(made, n)
        build_durable(made, n)
        (made / ".built").write_text(str(n))
    roots: dict[str, list[Path]] = {side: [] for side in sides}
    for copy, (side, checkout) in ((c, item) for c in range(copies) for item in sides.items()):
        root = base / (f"n{n}-{side}" if copy == 0 else f"n{n}-{side}-{copy}")
        roots[side].append(root)
        if keep and (root / ".indexed").exists():
            continue
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(made, root, symlinks=True)
        gitmem = str(checkout / ".venv" / "bin" / "gitmem")
        subprocess.run(
            [gitmem, "index", "rebuild", "files"], env=child_env(root), cwd=root, check=True, capture_output=True
        )
        (root / ".indexed").write_text(str(checkout))
    return roots


def alternate(sides: list[str], rounds: int, call: object) -> dict[str, list[Sample]]:
    """``call(side, i)`` for each side, ``rounds`` times, the order flipped every round."""
    out: dict[str, list[Sample]] = {side: [] for side in sides}
    for i in range(rounds):
        for side in sides if i % 2 == 0 else reversed(sides):
            out[side].append(call(side, i))  # type: ignore[operator]
    return out


def measure(
    roots: dict[str, list[Path]], sides: dict[str, Path], n: int, rounds: int, samples: int, only: set[str], seed: int
) -> list[tuple[str, dict[str, list[Sample]]]]:
    names = list(sides)
    rows: list[tuple[str, dict[str, list[Sample]]]] = []
    gitmem = {side: str(checkout / ".venv" / "bin" / "gitmem") for side, checkout in sides.items()}
    for op, args in CLI_OPS.items():
        if op.split()[0] not in only:
            continue
        for side in names:  # warm: .pyc files, page cache, a saved listing
            run([gitmem[side], *args], child_env(roots[side][0]), roots[side][0])

        def cli(side: str, _i: int, args: list[str] = args) -> Sample:
            wall, cpu = run([gitmem[side], *args], child_env(roots[side][0]), roots[side][0])
            return cpu, wall

        rows.append((f"`gitmem {op}`, new process", alternate(names, samples, cli)))
    api = [op for op in API_OPS if op.split()[0] in only]
    if not api:
        return rows
    workers = {
        side: Worker(str(checkout / ".venv" / "bin" / "python"), roots[side]) for side, checkout in sides.items()
    }
    paths = [bulk.layout_path(i) for i in range(n)]
    corpus = bulk.Corpus(seed=n + seed)  # a new seed per run: a kept copy holds the last run's texts
    try:
        for op in api:
            rng = random.Random(41)
            picks = [(rng.choice(paths), rng.choice(paths), corpus.fresh()) for _ in range(rounds)]

            def call(side: str, i: int, op: str = op, picks: list[tuple[str, str, str]] = picks) -> Sample:
                a, b, text = picks[i]
                copy = i % len(roots[side])
                return workers[side].ask(op, QUERIES[i % len(QUERIES)] if op == "recall" else a, b, text, copy)

            rows.append((op, alternate(names, rounds, call)))
    finally:
        for worker in workers.values():
            worker.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = Path(__file__).resolve().parent.parent
    parser.add_argument("--before", type=Path, required=True, help="a checkout with its own .venv (the build before)")
    parser.add_argument("--after", type=Path, default=here, help="a checkout with its own .venv (default: this one)")
    parser.add_argument("--also", type=Path, help="a third checkout with its own .venv, timed in the same rounds")
    parser.add_argument("--workdir", help="keep the memories in this folder under each --dirs folder")
    parser.add_argument("--build-only", action="store_true", help="make the memories (with --workdir) and stop")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--dirs", type=Path, nargs="+", default=[Path(tempfile.gettempdir())],
                        help="one folder per file system; the memories are built under each")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=200, help="API calls per side and operation")
    parser.add_argument("--samples", type=int, default=9, help="CLI calls per side and command")
    parser.add_argument("--copies", type=int, default=1,
                        help="copies of the memories per side, in folders of their own, taken in turn by the API rows")  # fmt: skip
    parser.add_argument("--seed", type=int, default=random.randrange(1 << 30),
                        help="the written texts' seed (default: new each run; the same texts again would change nothing)")  # fmt: skip
    parser.add_argument("--only", nargs="+", default=["write", "read", "list", "changes", "recall", *CLI_OPS])
    args = parser.parse_args()
    sides = {"before": args.before.resolve(), "after": args.after.resolve()}
    if args.also:
        sides["also"] = args.also.resolve()
    print(f"# {', '.join(f'{side} {path}' for side, path in sides.items())}; seed {args.seed}; CPU ms p50 (wall p50)")
    also = " also | also / before CPU (wall) |" if args.also else ""
    print(f"| fs | size | operation | before | after | after / before CPU (wall) |{also} load |")
    print("|---|---|---|---|---|---|" + ("---|---|" if args.also else "") + "---|", flush=True)
    for folder in args.dirs:
        if args.workdir:
            base = folder / args.workdir
            base.mkdir(parents=True, exist_ok=True)
        else:
            base = Path(tempfile.mkdtemp(prefix="gitmem-bench-ba-", dir=folder))
        try:
            for n in args.sizes:
                roots = build(base, n, sides, keep=bool(args.workdir), copies=args.copies)
                if args.build_only:
                    continue
                for op, out in measure(roots, sides, n, args.rounds, args.samples, set(args.only), args.seed):
                    p50 = {side: [statistics.median(s[k] for s in out[side]) for k in (0, 1)] for side in sides}
                    b, a = p50["before"], p50["after"]
                    row = f"| {folder} | {n:,} | {op} | {b[0]:.3f} ({b[1]:.3f}) | {a[0]:.3f} ({a[1]:.3f}) | **{a[0] / b[0]:.2f}x** ({a[1] / b[1]:.2f}x) |"  # fmt: skip
                    if "also" in p50:
                        c = p50["also"]
                        row += f" {c[0]:.3f} ({c[1]:.3f}) | {c[0] / b[0]:.2f}x ({c[1] / b[1]:.2f}x) |"
                    print(f"{row} {os.getloadavg()[0]:.1f} |", flush=True)
        finally:
            if not args.workdir:
                shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
