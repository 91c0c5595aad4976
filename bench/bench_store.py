"""Benchmark GitFileStore against a plain-directory store and against the git CLI.

One run, one machine, every baseline measured in the same run:

- **read / write**: a memory of ``--files`` notes (~500 B, nested folders) held by
  gitmem and by :class:`bench.dirstore.DirStore`; the two are called alternately,
  in random order per operation, so background load hits both alike. Writes are
  CAS edits of random existing files, first without fsync on either side, then
  with fsync on both (the mount made durable, ``gitmem.durable``, against fsync
  of file + folder). Each write is also compared with the **commit floor**
  (:mod:`bench.floor`): the same creates, writes, renames and fsyncs as one
  gitmem commit, with precomputed bytes, in the same random order. The sync core
  (``store.sync``) and the async API (``asyncio.to_thread``; the directory store
  gets the same wrapper) are both measured.
- **git CLI**: one commit per write with plumbing commands (:mod:`bench.gitcli`)
  on a same-size repo, at both durabilities.
- **list**: cold (new handle), warm with an unchanged head, and warm right after
  one write (the case an agent hits: someone just wrote a file).
- **changes**: one changed file, at 1k, 10k and 100k files (built in seconds by
  :mod:`bench.bulk`, not by store writes), via the sync core and the async API.

Every sample records wall time and CPU time (the calling thread's for sync calls,
the process's for async ones, plus the children's for the git CLI): on a shared
machine wall time includes waiting for a CPU or the disk, CPU time mostly does not.
A probe also times bare file creation in each store's folders, because on some
filesystems that cost swings by 100x between folders and a git commit creates six
files where the directory store creates one.

Usage::

    .venv/bin/python bench/bench_store.py            # full run (a few minutes on 2 busy cores)
    .venv/bin/python bench/bench_store.py --quick    # fewer samples, for iteration
    .venv/bin/python bench/bench_store.py --quick --only writes,changes

It prints p50/p95 per operation, the ratios the targets are stated in, and a
met/missed line per target; ``--json FILE`` also saves the summary.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.metadata
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pygit2

from bench import bulk
from bench.dirstore import AsyncDirStore, DirStore
from bench.floor import CommitFloor
from bench.gitcli import GitCliStore
from gitmem import GitFileStore
from gitmem.model import Changes

PHASES = ("reads", "list", "writes", "cli", "changes")


@dataclass
class Series:
    """Samples of one operation: wall and CPU seconds."""

    name: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def add(self, took: tuple[float, float]) -> None:
        self.wall.append(took[0])
        self.cpu.append(took[1])

    @staticmethod
    def _pct(values: list[float], q: float) -> float:
        ordered = sorted(values)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def n(self) -> int:
        return len(self.wall)

    @property
    def p50(self) -> float:
        return self._pct(self.wall, 0.50)

    @property
    def p95(self) -> float:
        return self._pct(self.wall, 0.95)

    @property
    def cpu50(self) -> float:
        return self._pct(self.cpu, 0.50)


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall time and this thread's CPU time of one call."""
    cpu = time.thread_time()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start, time.thread_time() - cpu


def timed_with_children(fn: Callable[[], object]) -> tuple[float, float]:
    """Like :func:`timed`, adding the CPU time of the subprocesses the call ran."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, cpu = timed(fn)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, cpu + (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


async def atimed(fn: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """Wall and process CPU time: the work runs in a worker thread."""
    cpu = time.process_time()
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start, time.process_time() - cpu


def ms(seconds: float) -> str:
    value = seconds * 1000
    if value != value:  # nan: not measured
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def create_probe(folder: str, n: int = 60) -> float:
    """Median seconds to create (O_CREAT|O_EXCL) one empty file in ``folder``."""
    samples = []
    for i in range(n):
        path = os.path.join(folder, f".bench-probe-{os.getpid()}-{i}")
        start = time.perf_counter()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        samples.append(time.perf_counter() - start)
        os.close(fd)
        os.unlink(path)
    samples.sort()
    return samples[len(samples) // 2]


@dataclass
class Config:
    files: int
    reads: int
    writes: int
    async_ops: int
    cli_writes: int
    lists: int
    changes: int
    scales: tuple[int, ...]
    work: str
    phases: tuple[str, ...] = PHASES
    seed: int = 1


class Bench:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.corpus = bulk.Corpus(seed=cfg.seed + 10)
        self.results: dict[str, Series] = {}
        self.notes: list[str] = []
        self.paths = [bulk.layout_path(i) for i in range(cfg.files)]
        # the versions each store reports, so every write is a CAS on what is really there
        self.git_versions: dict[str, str] = {}
        self.dir_versions: dict[str, str] = {}
        self.cli_versions: dict[str, str | None] = {}

    def series(self, name: str) -> Series:
        return self.results.setdefault(name, Series(name))

    # -- set-up --

    def build(self) -> None:
        work = self.cfg.work
        t0 = time.perf_counter()
        self.git_path = os.path.join(work, "mem.git")
        GitFileStore.init(self.git_path)
        bulk.import_files(self.git_path, bulk.files(self.cfg.files))
        self.git = GitFileStore.open(self.git_path)
        t1 = time.perf_counter()
        self.dir = DirStore(os.path.join(work, "dir"))
        self.floor = CommitFloor(os.path.join(work, "floor"))
        bulk.write_directory(self.dir.files, bulk.files(self.cfg.files))
        t2 = time.perf_counter()
        self.notes.append(
            f"set-up: {self.cfg.files} files imported into git in {t1 - t0:.1f} s, "
            f"written as a directory in {t2 - t1:.1f} s"
        )
        if "cli" in self.cfg.phases:
            self.cli_path = os.path.join(work, "cli.git")
            GitFileStore.init(self.cli_path)
            bulk.import_files(self.cli_path, bulk.files(self.cfg.files))
            self.cli = GitCliStore(self.cli_path)
        probes = {
            "gitmem objects/": os.path.join(self.git_path, "objects"),
            "gitmem refs/heads/": os.path.join(self.git_path, "refs", "heads"),
            "dir store tmp/": self.dir.tmp,
        }
        self.notes.append(
            "file creation probe (median of 60 creates): "
            + ", ".join(f"{name} {create_probe(folder) * 1e6:.0f} µs" for name, folder in probes.items())
        )

    # -- reads --

    def bench_reads(self) -> None:
        git, d = self.git.sync, self.dir
        sample = [self.rng.choice(self.paths) for _ in range(self.cfg.reads)]
        for p in sample[:50]:  # warm the OS cache and the handles
            git.read(p)
            d.read(p)
        s_git, s_dir = self.series("read git"), self.series("read dir")
        for p in sample:
            order: list[tuple[Series, Callable[[str], object]]] = [(s_git, git.read), (s_dir, d.read)]
            self.rng.shuffle(order)
            for series, read in order:
                series.add(timed(lambda read=read, p=p: read(p)))  # type: ignore[misc]
        assert git.read(sample[0]).text == d.read(sample[0]).text

    async def bench_async_reads(self) -> None:
        git, d = self.git, AsyncDirStore(self.dir)
        sample = [self.rng.choice(self.paths) for _ in range(self.cfg.async_ops * 4)]
        for p in sample[:20]:
            await git.read(p)
            await d.read(p)
        s_git, s_dir = self.series("read git async"), self.series("read dir async")
        for p in sample:
            order: list[tuple[Series, Callable[[str], Awaitable[object]]]] = [(s_git, git.read), (s_dir, d.read)]
            self.rng.shuffle(order)
            for series, read in order:
                series.add(await atimed(lambda read=read, p=p: read(p)))  # type: ignore[misc]

    # -- writes --

    def _git_version(self, p: str) -> str:
        if p not in self.git_versions:
            self.git_versions[p] = self.git.sync.read(p).version
        return self.git_versions[p]

    def _dir_version(self, p: str) -> str:
        if p not in self.dir_versions:
            self.dir_versions[p] = self.dir.read(p).version
        return self.dir_versions[p]

    def _durability(self, fsync: bool) -> str:
        self.git.sync.set_durable(fsync)  # the mount's setting (gitmem config NAME gitmem.durable true)
        self.dir.fsync = fsync
        self.floor.fsync = fsync
        return "fsync" if fsync else "no fsync"

    def bench_writes(self, fsync: bool) -> None:
        """CAS writes: gitmem (one pack per commit), the dir store, and the commit floor (:mod:`bench.floor`).

        They run in random order per sample, so load spikes hit each alike.
        """
        tag = self._durability(fsync)
        git, d, floor = self.git.sync, self.dir, self.floor
        s_git, s_dir = self.series(f"write git ({tag})"), self.series(f"write dir ({tag})")
        s_floor = self.series(f"write floor ({tag})")
        warmup = 20
        for i in range(self.cfg.writes + warmup):
            p = self.rng.choice(self.paths)
            text = self.corpus.fresh()
            gv, dv = self._git_version(p), self._dir_version(p)

            def write_git(p: str = p, text: str = text, gv: str = gv) -> None:
                self.git_versions[p] = git.write(p, text, expected=gv)

            def write_dir(p: str = p, text: str = text, dv: str = dv) -> None:
                self.dir_versions[p] = d.write(p, text, expected=dv)

            order = [(s_git, write_git), (s_dir, write_dir), (s_floor, floor.write)]
            self.rng.shuffle(order)
            for series, fn in order:
                took = timed(fn)
                if i >= warmup:
                    series.add(took)
            floor.tidy()
        assert git.read(p).text == d.read(p).text == text

    async def bench_async_writes(self, fsync: bool) -> None:
        tag = self._durability(fsync)
        git, d = self.git, AsyncDirStore(self.dir)
        s_git, s_dir = self.series(f"write git async ({tag})"), self.series(f"write dir async ({tag})")
        for _ in range(self.cfg.async_ops):
            p = self.rng.choice(self.paths)
            text = self.corpus.fresh()
            gv, dv = self._git_version(p), self._dir_version(p)

            async def write_git(p: str = p, text: str = text, gv: str = gv) -> None:
                self.git_versions[p] = await git.write(p, text, expected=gv)

            async def write_dir(p: str = p, text: str = text, dv: str = dv) -> None:
                self.dir_versions[p] = await d.write(p, text, expected=dv)

            order: list[tuple[Series, Callable[[], Awaitable[None]]]] = [(s_git, write_git), (s_dir, write_dir)]
            self.rng.shuffle(order)
            for series, fn in order:
                series.add(await atimed(fn))

    def bench_cli_writes(self, fsync: bool) -> None:
        tag = "fsync" if fsync else "no fsync"
        self.cli.set_fsync(fsync)
        series = self.series(f"write git CLI ({tag})")
        warmup = 3
        for i in range(self.cfg.cli_writes + warmup):
            p = self.rng.choice(self.paths)
            if p not in self.cli_versions:
                found = subprocess.run(
                    ["git", "--git-dir", self.cli_path, "rev-parse", f"refs/heads/main:{p}"],
                    capture_output=True,
                    check=True,
                )
                self.cli_versions[p] = found.stdout.decode().strip()
            text = self.corpus.fresh()
            expected = self.cli_versions[p]

            def write(p: str = p, text: str = text, expected: str | None = expected) -> None:
                self.cli_versions[p] = self.cli.write(p, text, expected=expected)

            took = timed_with_children(write)
            if i >= warmup:
                series.add(took)

    # -- list --

    def bench_list(self) -> None:
        cold_git = GitFileStore.open(self.git_path).sync
        self.series("list git cold").add(timed(cold_git.list))
        cold_dir = DirStore(self.dir.root)
        self.series("list dir cold").add(timed(cold_dir.list))
        git, d = self.git.sync, self.dir
        git.list()
        d.list()
        s_git, s_dir = self.series("list git warm"), self.series("list dir warm")
        for _ in range(self.cfg.lists):
            s_git.add(timed(git.list))
            s_dir.add(timed(d.list))
        a_git, a_dir = self.series("list git after a write"), self.series("list dir after a write")
        for _ in range(self.cfg.lists):
            p = self.rng.choice(self.paths)
            text = self.corpus.fresh()
            self.git_versions[p] = git.write(p, text, expected=self._git_version(p))
            self.dir_versions[p] = d.write(p, text, expected=self._dir_version(p))
            a_git.add(timed(git.list))
            a_dir.add(timed(d.list))
        listed = {e.path: e for e in git.list()}
        assert len(listed) == self.cfg.files and listed[p].version == self.git_versions[p]

    # -- changes --

    async def bench_changes(self, scale: int) -> None:
        path = os.path.join(self.cfg.work, f"changes-{scale}.git")
        t0 = time.perf_counter()
        GitFileStore.init(path)
        bulk.import_files(path, bulk.files(scale))
        self.notes.append(f"changes repo: {scale} files built in {time.perf_counter() - t0:.1f} s")
        store = GitFileStore.open(path)
        sync = store.sync
        paths = [bulk.layout_path(i) for i in range(scale)]
        versions: dict[str, str] = {}
        s_sync, s_async = self.series(f"changes git {scale}"), self.series(f"changes git async {scale}")
        warmup = 10
        for i in range(self.cfg.changes + warmup):
            cursor = sync.head()
            p = self.rng.choice(paths)
            if p not in versions:
                versions[p] = sync.read(p).version
            versions[p] = sync.write(p, self.corpus.fresh(), expected=versions[p])
            t_sync = timed(lambda cursor=cursor: sync.changes(cursor))  # type: ignore[misc]
            t_async = await atimed(lambda cursor=cursor: store.changes(cursor))  # type: ignore[misc]
            if i >= warmup:
                s_sync.add(t_sync)
                s_async.add(t_async)
        found = sync.changes(cursor)
        assert isinstance(found, Changes) and found.paths == (p,), found
        shutil.rmtree(path)

    # -- the whole run --

    def run(self) -> None:
        phases = self.cfg.phases
        self.build()
        gc.collect()
        if "reads" in phases:
            self.bench_reads()
            asyncio.run(self.bench_async_reads())
        if "list" in phases:
            self.bench_list()
        for fsync in (False, True):
            if "writes" in phases:
                self.bench_writes(fsync)
                asyncio.run(self.bench_async_writes(fsync))
            if "cli" in phases:
                self.bench_cli_writes(fsync)
        self._durability(False)
        if "changes" in phases:
            for scale in self.cfg.scales:
                asyncio.run(self.bench_changes(scale))
        fsck = subprocess.run(["git", "--git-dir", self.git_path, "fsck", "--strict"], capture_output=True, check=False)
        verdict = "clean" if fsck.returncode == 0 else "FAILED"
        self.notes.append(f"git fsck --strict on the benchmarked memory: {verdict}")
        if fsck.returncode != 0:
            print(fsck.stderr.decode(), file=sys.stderr)


# -- reporting --


def row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b == b and a == a and b > 0 else "-"


def report(b: Bench) -> tuple[str, list[tuple[str, bool]]]:
    def get(name: str) -> Series:
        return b.results.get(name) or Series(name)

    head = [
        "operation",
        "gitmem p50",
        "p95",
        "CPU p50",
        "baseline",
        "p50",
        "p95",
        "CPU p50",
        "ratio p50",
        "CPU ratio",
        "n",
    ]
    lines = [row(head), row(["---"] * len(head))]

    def pair(label: str, mine: str, base: str, base_label: str) -> None:
        a, c = get(mine), get(base)
        if not a.n:
            return
        lines.append(
            row(
                [
                    label,
                    ms(a.p50),
                    ms(a.p95),
                    ms(a.cpu50),
                    base_label,
                    ms(c.p50),
                    ms(c.p95),
                    ms(c.cpu50),
                    ratio(a.p50, c.p50),
                    ratio(a.cpu50, c.cpu50),
                    str(a.n) if a.n == c.n else f"{a.n}/{c.n}",
                ]
            )
        )

    def single(label: str, mine: str) -> None:
        a = get(mine)
        if a.n:
            lines.append(row([label, ms(a.p50), ms(a.p95), ms(a.cpu50), "", "", "", "", "", "", str(a.n)]))

    n = b.cfg.files
    pair(f"read, {n} files (sync)", "read git", "read dir", "dir store")
    pair(f"read, {n} files (async)", "read git async", "read dir async", "dir store")
    for tag in ("no fsync", "fsync"):
        pair(f"write, {tag} (sync)", f"write git ({tag})", f"write dir ({tag})", "dir store")
        pair(f"write, {tag} (sync) vs the commit floor", f"write git ({tag})", f"write floor ({tag})", "floor")
        pair(f"write, {tag}: the commit floor vs dir store", f"write floor ({tag})", f"write dir ({tag})", "dir store")
        pair(f"write, {tag} (async)", f"write git async ({tag})", f"write dir async ({tag})", "dir store")
        pair(f"write, {tag} (sync) vs git CLI", f"write git ({tag})", f"write git CLI ({tag})", "git CLI")
    pair(f"list {n}, cold", "list git cold", "list dir cold", "dir store")
    pair(f"list {n}, warm (head unchanged)", "list git warm", "list dir warm", "dir store")
    pair(f"list {n}, warm, right after a write", "list git after a write", "list dir after a write", "dir store")
    for scale in b.cfg.scales:
        single(f"changes, 1 file changed, {scale} files (sync)", f"changes git {scale}")
        single(f"changes, 1 file changed, {scale} files (async)", f"changes git async {scale}")

    verdicts: list[tuple[str, bool]] = []
    for tag in ("no fsync", "fsync"):
        mine, floor, cli = get(f"write git ({tag})"), get(f"write floor ({tag})"), get(f"write git CLI ({tag})")
        if mine.n and floor.n:
            r = mine.p50 / floor.p50
            verdicts.append((f"write ({tag}) <= 1.2x the commit floor: {r:.2f}x", r <= 1.2))
        if mine.n and cli.n:
            f = cli.p50 / mine.p50
            verdicts.append(
                (f"write ({tag}) >= 10x faster than git CLI: {f:.1f}x (CPU {cli.cpu50 / mine.cpu50:.1f}x)", f >= 10)
            )
    for kind in ("", " async"):
        mine, base = get(f"read git{kind}"), get(f"read dir{kind}")
        if mine.n:
            r = mine.p50 / base.p50
            verdicts.append(
                (f"read{kind or ' sync'} <= 2x dir store: {r:.2f}x (CPU {ratio(mine.cpu50, base.cpu50)})", r <= 2)
            )
    measured = [s for s in b.cfg.scales if get(f"changes git {s}").n]
    for scale in measured:
        p50 = get(f"changes git {scale}").p50
        verdicts.append((f"changes at {scale} files <= 2 ms: {ms(p50)} ms", p50 <= 0.002))
    if len(measured) >= 2:
        lo, hi = get(f"changes git {min(measured)}"), get(f"changes git {max(measured)}")
        growth = hi.p50 / lo.p50
        verdicts.append(
            (
                f"changes {min(measured)} -> {max(measured)} files within 2x: {growth:.2f}x "
                f"(CPU {ratio(hi.cpu50, lo.cpu50)})",
                growth <= 2,
            )
        )
    for name, label in (("list git warm", "head unchanged"), ("list git after a write", "right after a write")):
        s = get(name)
        if s.n:
            verdicts.append((f"warm list of {n} files ({label}) <= 30 ms: {ms(s.p50)} ms", s.p50 <= 0.030))
    return "\n".join(lines), verdicts


def machine() -> str:
    load = os.getloadavg()
    return (
        f"{platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"pygit2 {importlib.metadata.version('pygit2')} (libgit2 {pygit2.LIBGIT2_VERSION}), "
        f"load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} at the end"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000, help="memory size for read/write/list (default 10000)")
    parser.add_argument("--quick", action="store_true", help="fewer samples, for iteration")
    parser.add_argument("--scales", default="1000,10000,100000", help="memory sizes for the changes benchmark")
    parser.add_argument(
        "--only",
        default=",".join(PHASES),
        help=f"comma-separated phases out of {','.join(PHASES)} (cli is reported against writes)",
    )
    parser.add_argument("--workdir", help="where to build the repos (default: a new temp dir, removed afterwards)")
    parser.add_argument("--json", help="also write the summary as JSON to this file")
    args = parser.parse_args(argv)

    phases = tuple(p for p in args.only.split(",") if p)
    unknown = set(phases) - set(PHASES)
    if unknown:
        parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
    work = args.workdir or tempfile.mkdtemp(prefix="gitmem-bench-")
    os.makedirs(work, exist_ok=True)
    scales = tuple(int(s) for s in args.scales.split(",") if s)
    counts = (
        dict(reads=600, writes=120, async_ops=60, cli_writes=15, lists=10, changes=60)
        if args.quick
        else dict(reads=3000, writes=500, async_ops=200, cli_writes=50, lists=30, changes=300)
    )
    cfg = Config(args.files, scales=scales, work=work, phases=phases, **counts)
    bench = Bench(cfg)
    started = time.perf_counter()
    try:
        bench.run()
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    table, verdicts = report(bench)
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"machine: {machine()}")
    print(f"duration: {time.perf_counter() - started:.0f} s")
    for note in bench.notes:
        print(f"note: {note}")
    print()
    print("times in ms; ratio = gitmem / baseline (below 1: gitmem is faster)")
    print()
    print(table)
    print()
    for text, ok in verdicts:
        print(f"- [{'met' if ok else 'MISSED'}] {text}")
    if args.json:
        summary: dict[str, Any] = {
            name: {"p50_ms": s.p50 * 1000, "p95_ms": s.p95 * 1000, "cpu_p50_ms": s.cpu50 * 1000, "n": s.n}
            for name, s in bench.results.items()
        }
        summary["_verdicts"] = [{"target": t, "met": ok} for t, ok in verdicts]
        summary["_notes"] = bench.notes
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
