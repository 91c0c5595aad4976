"""Benchmark GitFileStore against a plain-directory store and against the git CLI.

One run, one machine, every baseline measured in the same run (SPEC §10):

- **read / write**: a memory of ``--files`` notes (~500 B, nested folders) held by
  gitmem and by :class:`bench.dirstore.DirStore`; the two are called alternately,
  in random order per operation, so background load hits both alike. Writes are
  CAS edits of random existing files, first without fsync on either side, then
  with fsync on both (libgit2 ``enable_fsync_gitdir`` vs fsync of file + folder).
  The sync core (``store.sync``) and the async API (``asyncio.to_thread``; the
  directory store gets the same wrapper) are both measured.
- **git CLI**: one commit per write with plumbing commands (:mod:`bench.gitcli`)
  on a same-size repo, at both durabilities.
- **list**: cold (new handle), warm with an unchanged head, and warm right after
  one write (the case an agent hits: someone just wrote a file).
- **changes**: one changed file, at 1k, 10k and 100k files (built in seconds by
  :mod:`bench.bulk`, not by store writes), via the sync core and the async API.

Usage::

    .venv/bin/python bench/bench_store.py            # full run (~1-2 min on 2 busy cores)
    .venv/bin/python bench/bench_store.py --quick    # fewer samples, for iteration

It prints p50/p95 per operation, the ratios the targets are stated in, and a
met/missed line per target; ``--json FILE`` also saves the raw summary.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import random
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
from bench.gitcli import GitCliStore
from gitmem import GitFileStore
from gitmem.model import Changes


@dataclass
class Series:
    """Samples of one operation, in seconds."""

    name: str
    samples: list[float] = field(default_factory=list)

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)

    def pct(self, q: float) -> float:
        ordered = sorted(self.samples)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def p50(self) -> float:
        return self.pct(0.50)

    @property
    def p95(self) -> float:
        return self.pct(0.95)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


async def atimed(fn: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


def ms(seconds: float) -> str:
    value = seconds * 1000
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def set_durability(fsync: bool) -> None:
    """libgit2's fsync switch is process-wide; it covers objects and refs."""
    pygit2.settings.enable_fsync_gitdir(fsync)


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
    seed: int = 1


class Bench:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.rng = random.Random(cfg.seed)
        self.corpus = bulk.Corpus(seed=cfg.seed + 10)
        self.results: dict[str, Series] = {}
        self.notes: list[str] = []
        self.paths = [bulk.layout_path(i) for i in range(cfg.files)]

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
        bulk.write_directory(self.dir.files, bulk.files(self.cfg.files))
        t2 = time.perf_counter()
        self.cli_path = os.path.join(work, "cli.git")
        GitFileStore.init(self.cli_path)
        bulk.import_files(self.cli_path, bulk.files(self.cfg.files))
        self.cli = GitCliStore(self.cli_path)
        self.notes.append(
            f"set-up: {self.cfg.files} files imported into git in {t1 - t0:.1f} s, "
            f"written as a directory in {t2 - t1:.1f} s"
        )
        # versions each store reports, so every write is a CAS on what is really there
        self.git_versions: dict[str, str] = {}
        self.dir_versions: dict[str, str] = {}
        self.cli_versions: dict[str, str | None] = {}

    # -- reads --

    def bench_reads(self) -> None:
        git, d = self.git.sync, self.dir
        sample = [self.rng.choice(self.paths) for _ in range(self.cfg.reads)]
        for p in sample[:50]:  # warm the OS cache and the handles
            git.read(p)
            d.read(p)
        s_git, s_dir = self.series("read git"), self.series("read dir")
        for p in sample:
            first, second = ((s_git, git), (s_dir, d)) if self.rng.random() < 0.5 else ((s_dir, d), (s_git, git))
            first[0].add(timed(lambda p=p, s=first[1]: s.read(p)))  # type: ignore[misc]
            second[0].add(timed(lambda p=p, s=second[1]: s.read(p)))  # type: ignore[misc]
        assert git.read(sample[0]).text == d.read(sample[0]).text

    async def bench_async_reads(self) -> None:
        git, d = self.git, AsyncDirStore(self.dir)
        sample = [self.rng.choice(self.paths) for _ in range(self.cfg.async_ops * 4)]
        for p in sample[:20]:
            await git.read(p)
            await d.read(p)
        s_git, s_dir = self.series("read git async"), self.series("read dir async")
        for p in sample:
            order = [(s_git, git), (s_dir, d)]
            self.rng.shuffle(order)
            for series, store in order:
                series.add(await atimed(lambda p=p, s=store: s.read(p)))  # type: ignore[misc]

    # -- writes --

    def _git_version(self, p: str) -> str:
        if p not in self.git_versions:
            self.git_versions[p] = self.git.sync.read(p).version
        return self.git_versions[p]

    def _dir_version(self, p: str) -> str:
        if p not in self.dir_versions:
            self.dir_versions[p] = self.dir.read(p).version
        return self.dir_versions[p]

    def bench_writes(self, fsync: bool) -> None:
        tag = "fsync" if fsync else "no fsync"
        set_durability(fsync)
        self.dir.fsync = fsync
        git, d = self.git.sync, self.dir
        s_git, s_dir = self.series(f"write git ({tag})"), self.series(f"write dir ({tag})")
        n = self.cfg.writes
        for i in range(n + 20):
            p = self.rng.choice(self.paths)
            text = self.corpus.fresh()
            gv, dv = self._git_version(p), self._dir_version(p)

            def write_git(p: str = p, text: str = text, gv: str = gv) -> None:
                self.git_versions[p] = git.write(p, text, expected=gv)

            def write_dir(p: str = p, text: str = text, dv: str = dv) -> None:
                self.dir_versions[p] = d.write(p, text, expected=dv)

            order = [(s_git, write_git), (s_dir, write_dir)]
            self.rng.shuffle(order)
            for series, fn in order:
                took = timed(fn)
                if i >= 20:  # the first few warm caches and the journal
                    series.add(took)
        assert git.read(p).text == d.read(p).text == text

    async def bench_async_writes(self, fsync: bool) -> None:
        tag = "fsync" if fsync else "no fsync"
        set_durability(fsync)
        self.dir.fsync = fsync
        git, d = self.git, AsyncDirStore(self.dir)
        s_git, s_dir = self.series(f"write git async ({tag})"), self.series(f"write dir async ({tag})")
        for _ in range(self.cfg.async_ops):
            p = self.rng.choice(self.paths)
            text = self.corpus.fresh()
            gv, dv = self._git_version(p), self._dir_version(p)
            order: list[tuple[Series, Callable[[], Awaitable[str]]]] = [
                (s_git, lambda p=p, text=text, gv=gv: git.write(p, text, expected=gv)),  # type: ignore[misc]
                (s_dir, lambda p=p, text=text, dv=dv: d.write(p, text, expected=dv)),  # type: ignore[misc]
            ]
            self.rng.shuffle(order)
            for series, fn in order:
                start = time.perf_counter()
                version = await fn()
                series.add(time.perf_counter() - start)
                (self.git_versions if series is s_git else self.dir_versions)[p] = version

    def bench_cli_writes(self, fsync: bool) -> None:
        tag = "fsync" if fsync else "no fsync"
        self.cli.set_fsync(fsync)
        series = self.series(f"write git CLI ({tag})")
        for i in range(self.cfg.cli_writes + 3):
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

            took = timed(write)
            if i >= 3:
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
        for i in range(self.cfg.changes + 10):
            cursor = sync.head()
            p = self.rng.choice(paths)
            if p not in versions:
                versions[p] = sync.read(p).version
            versions[p] = sync.write(p, self.corpus.fresh(), expected=versions[p])
            t_sync = timed(lambda cursor=cursor: sync.changes(cursor))  # type: ignore[misc]
            t_async = await atimed(lambda cursor=cursor: store.changes(cursor))  # type: ignore[misc]
            if i >= 10:
                s_sync.add(t_sync)
                s_async.add(t_async)
        found = sync.changes(cursor)
        assert isinstance(found, Changes) and found.paths == (p,), found
        shutil.rmtree(path)

    # -- the whole run --

    def run(self) -> None:
        self.build()
        gc.collect()
        self.bench_reads()
        asyncio.run(self.bench_async_reads())
        self.bench_list()
        for fsync in (False, True):
            self.bench_writes(fsync)
            asyncio.run(self.bench_async_writes(fsync))
            self.bench_cli_writes(fsync)
        set_durability(False)
        for scale in self.cfg.scales:
            asyncio.run(self.bench_changes(scale))
        fsck = subprocess.run(["git", "--git-dir", self.git_path, "fsck", "--strict"], capture_output=True, check=False)
        self.notes.append("git fsck --strict on the benchmarked memory: " + ("clean" if fsck.returncode == 0 else "FAILED"))
        if fsck.returncode != 0:
            print(fsck.stderr.decode(), file=sys.stderr)


# -- reporting --


def row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def report(b: Bench) -> tuple[str, list[tuple[str, bool]]]:
    r = b.results

    def get(name: str) -> Series:
        return r.get(name) or Series(name)

    lines = [
        row(["operation", "gitmem p50 ms", "gitmem p95 ms", "baseline", "baseline p50 ms", "baseline p95 ms", "ratio p50", "n"]),
        row(["---"] * 8),
    ]

    def pair(label: str, mine: str, base: str, base_label: str) -> None:
        a, c = get(mine), get(base)
        ratio = a.p50 / c.p50 if c.samples else float("nan")
        lines.append(
            row([label, ms(a.p50), ms(a.p95), base_label, ms(c.p50), ms(c.p95), f"{ratio:.2f}x", str(len(a.samples))])
        )

    def single(label: str, mine: str) -> None:
        a = get(mine)
        lines.append(row([label, ms(a.p50), ms(a.p95), "", "", "", "", str(len(a.samples))]))

    n = b.cfg.files
    pair(f"read, {n} files (sync)", "read git", "read dir", "dir store")
    pair(f"read, {n} files (async)", "read git async", "read dir async", "dir store")
    for tag in ("no fsync", "fsync"):
        pair(f"write, {tag} (sync)", f"write git ({tag})", f"write dir ({tag})", "dir store")
        pair(f"write, {tag} (async)", f"write git async ({tag})", f"write dir async ({tag})", "dir store")
        cli, mine = get(f"write git CLI ({tag})"), get(f"write git ({tag})")
        lines.append(
            row([
                f"write, {tag}: git CLI / gitmem",
                ms(mine.p50),
                ms(mine.p95),
                "git CLI",
                ms(cli.p50),
                ms(cli.p95),
                f"{cli.p50 / mine.p50:.1f}x faster",
                str(len(cli.samples)),
            ])
        )
    pair(f"list {n}, cold", "list git cold", "list dir cold", "dir store")
    pair(f"list {n}, warm (head unchanged)", "list git warm", "list dir warm", "dir store")
    pair(f"list {n}, warm, right after a write", "list git after a write", "list dir after a write", "dir store")
    for scale in b.cfg.scales:
        single(f"changes, 1 file changed, {scale} files (sync)", f"changes git {scale}")
        single(f"changes, 1 file changed, {scale} files (async)", f"changes git async {scale}")

    verdicts: list[tuple[str, bool]] = []

    def verdict(text: str, ok: bool) -> None:
        verdicts.append((text, ok))

    for tag in ("no fsync", "fsync"):
        ratio = get(f"write git ({tag})").p50 / get(f"write dir ({tag})").p50
        verdict(f"write ({tag}) <= 3x dir store: {ratio:.2f}x", ratio <= 3)
        faster = get(f"write git CLI ({tag})").p50 / get(f"write git ({tag})").p50
        verdict(f"write ({tag}) >= 10x faster than git CLI: {faster:.1f}x", faster >= 10)
    for kind in ("", " async"):
        ratio = get(f"read git{kind}").p50 / get(f"read dir{kind}").p50
        verdict(f"read{kind or ' sync'} <= 2x dir store: {ratio:.2f}x", ratio <= 2)
    for scale in b.cfg.scales:
        p50 = get(f"changes git {scale}").p50
        verdict(f"changes at {scale} files <= 2 ms: {ms(p50)} ms", p50 <= 0.002)
    if len(b.cfg.scales) >= 2:
        lo, hi = min(b.cfg.scales), max(b.cfg.scales)
        growth = get(f"changes git {hi}").p50 / get(f"changes git {lo}").p50
        verdict(f"changes {lo} -> {hi} files within 2x: {growth:.2f}x", growth <= 2)
    for name, label in (("list git warm", "head unchanged"), ("list git after a write", "right after a write")):
        p50 = get(name).p50
        verdict(f"warm list of {n} files ({label}) <= 30 ms: {ms(p50)} ms", p50 <= 0.030)
    return "\n".join(lines), verdicts


def machine() -> str:
    load = os.getloadavg()
    return (
        f"{platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"pygit2 {pygit2.__version__} (libgit2 {pygit2.LIBGIT2_VERSION}), "
        f"load average {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} at the end"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=10_000, help="memory size for read/write/list (default 10000)")
    parser.add_argument("--quick", action="store_true", help="fewer samples, for iteration")
    parser.add_argument("--scales", default="1000,10000,100000", help="memory sizes for the changes benchmark")
    parser.add_argument("--workdir", help="where to build the repos (default: a new temp dir, removed afterwards)")
    parser.add_argument("--json", help="also write the summary as JSON to this file")
    args = parser.parse_args(argv)

    work = args.workdir or tempfile.mkdtemp(prefix="gitmem-bench-")
    os.makedirs(work, exist_ok=True)
    scales = tuple(int(s) for s in args.scales.split(",") if s)
    if args.quick:
        cfg = Config(args.files, reads=600, writes=120, async_ops=60, cli_writes=15, lists=10, changes=60, scales=scales, work=work)
    else:
        cfg = Config(args.files, reads=3000, writes=500, async_ops=200, cli_writes=50, lists=30, changes=300, scales=scales, work=work)
    bench = Bench(cfg)
    started = time.perf_counter()
    try:
        bench.run()
    finally:
        set_durability(False)
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    table, verdicts = report(bench)
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"machine: {machine()}")
    print(f"duration: {time.perf_counter() - started:.0f} s")
    for note in bench.notes:
        print(f"note: {note}")
    print()
    print(table)
    print()
    for text, ok in verdicts:
        print(f"- [{'met' if ok else 'MISSED'}] {text}")
    if args.json:
        summary: dict[str, Any] = {
            name: {"p50_ms": s.p50 * 1000, "p95_ms": s.p95 * 1000, "n": len(s.samples)} for name, s in bench.results.items()
        }
        summary["_verdicts"] = [{"target": t, "met": ok} for t, ok in verdicts]
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
