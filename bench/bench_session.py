"""Benchmark session memory: remember, recall and prune, each against a baseline in the same run.

- **remember**: :class:`gitmem.session.memory.SessionMemory` on a git session mount
  against :class:`DirSessionStore`, the way a file-backed memory store keeps items
  (one JSON file per item in a directory, a ``flock``, temp file + ``os.replace``).
  Both use the same item rules (checks, fingerprint path, duplicate merge, JSON), so
  the comparison is storage, not validation. Both hold ``--items`` items first; the
  two are called alternately in random order so background load hits both alike.
  A second row remembers exact duplicates (the merge path).
- **recall**: ``recall_similar(query, 5)`` over ``--items`` items (warm: the recall
  index is built on the first call, which is reported apart), including the access
  statistics append; the baseline is a brute-force coverage scan over the same
  pre-tokenised texts in memory.
- **prune**: ``--items`` stale items removed in one commit, against unlinking the
  same number of files from a directory.

Usage::

    .venv/bin/python bench/bench_session.py            # 10k items
    .venv/bin/python bench/bench_session.py --quick    # fewer samples

Prints p50/p95 (wall and CPU), ratios, and a met/missed line per target.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bulk
from gitmem.recall import coverage, tokenize
from gitmem.session.hygiene import DAY, PROTECTED_TAGS, fingerprint, merge_duplicate
from gitmem.session.items import (
    MemoryItem,
    decode_item,
    encode_item,
    make_item,
    path_for_fingerprint,
    path_for_id,
)
from gitmem.session.location import open_session_memory
from gitmem.session.memory import SessionMemory

WORDS = (
    "release provider verification deploy staging cluster pipeline python tests lint docs "
    "review branch merge conflict schema index cursor writer lock version tag commit push "
    "pull token budget preference language timezone editor formatting migration database "
    "cache queue worker retry timeout backoff logging metrics alert dashboard oncall "
    "runbook incident rollback feature flag config secret vault build artifact container"
).split()
TAGS = [w for w in WORDS if w not in PROTECTED_TAGS]


class DirSessionStore:
    """The baseline: session items as JSON files in a plain directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.lock = os.open(root / "write.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self.seq = 0

    def remember(self, content: str, *, importance: float = 0.5, tags: tuple[str, ...] = ()) -> MemoryItem:
        item = make_item(content, now=time.time(), importance=importance, tags=tags)
        fp = fingerprint(item.content)
        path = self.root / (path_for_fingerprint(fp) if fp else path_for_id(item.id))
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        try:
            try:
                existing = decode_item(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                existing = None
            stored = item if existing is None else merge_duplicate(existing, item, now=time.time())
            self.seq += 1
            tmp = self.tmp / f"{os.getpid()}-{self.seq}"
            tmp.write_text(encode_item(stored), encoding="utf-8")
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, path)
            return stored
        finally:
            fcntl.flock(self.lock, fcntl.LOCK_UN)


def sentence(rng: random.Random, n: int) -> str:
    return f"note {n}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))


def make_items(count: int, rng: random.Random, *, now: float, age_days: float, importance: float) -> list[MemoryItem]:
    return [
        make_item(sentence(rng, n), now=now - age_days * DAY, importance=importance, tags=(rng.choice(TAGS),))
        for n in range(count)
    ]


def files_of(items: list[MemoryItem]) -> list[tuple[str, bytes]]:
    out = []
    for item in items:
        fp = fingerprint(item.content)
        out.append((path_for_fingerprint(fp) if fp else path_for_id(item.id), encode_item(item).encode()))
    return out


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    w, c = time.perf_counter(), time.thread_time()
    fn()
    return time.perf_counter() - w, time.thread_time() - c


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def row(name: str, wall: list[float], cpu: list[float], base: str = "", bwall: list[float] | None = None) -> None:
    line = f"| {name} | {p(wall, 0.5):.3f} | {p(wall, 0.95):.3f} | {p(cpu, 0.5):.3f} |"
    if bwall:
        line += f" {base} | {p(bwall, 0.5):.3f} | {p(bwall, 0.95):.3f} | {p(wall, 0.5) / p(bwall, 0.5):.2f}x |"
    else:
        line += " | | | |"
    print(line + f" {len(wall)} |")


def new_git_memory(tmp: Path, name: str, items: list[MemoryItem]) -> SessionMemory:
    memory = open_session_memory(tmp / name)
    if items:
        bulk.import_files(memory.store.path, files_of(items))  # type: ignore[attr-defined]
    return memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    samples = 100 if args.quick else 400
    rng = random.Random(11)
    now = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="bench-session-"))
    verdicts: list[str] = []
    try:
        print(f"session memory benchmark: {args.items} items, {samples} samples, load {os.getloadavg()[0]:.2f}")
        print("| operation | gitmem p50 ms | p95 | CPU p50 | baseline | p50 | p95 | ratio p50 | n |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")

        # -- remember ---------------------------------------------------------------
        preload = make_items(args.items, rng, now=now, age_days=1, importance=0.6)
        memory = new_git_memory(tmp, "remember", preload)
        base = DirSessionStore(tmp / "dir")
        bulk.write_directory(str(base.root), files_of(preload))
        len(memory)  # the catalogue is warm, as in a running session
        texts = [sentence(rng, 1_000_000 + n) + " fresh" for n in range(samples)]
        gw: list[float] = []
        gc: list[float] = []
        bw: list[float] = []
        for text in texts:
            calls = [("git", lambda t=text: memory.remember(t)), ("dir", lambda t=text: base.remember(t))]
            rng.shuffle(calls)
            for who, call in calls:
                wall, cpu = timed(call)
                (gw if who == "git" else bw).append(wall)
                if who == "git":
                    gc.append(cpu)
        row("remember (new text)", gw, gc, "dir store", bw)
        ratio = p(gw, 0.5) / p(bw, 0.5)
        verdicts.append(f"[{'met' if ratio <= 3 else 'MISSED'}] remember p50 <= 3x dir store: {ratio:.2f}x")
        dw: list[float] = []
        dc: list[float] = []
        dbw: list[float] = []
        for text in texts[: samples // 2]:
            calls = [
                ("git", lambda t=text: memory.remember(t.upper())),
                ("dir", lambda t=text: base.remember(t.upper())),
            ]
            rng.shuffle(calls)
            for who, call in calls:
                wall, cpu = timed(call)
                (dw if who == "git" else dbw).append(wall)
                if who == "git":
                    dc.append(cpu)
        row("remember (exact duplicate: merge)", dw, dc, "dir store", dbw)

        # -- recall -----------------------------------------------------------------
        recall_mem = new_git_memory(tmp, "recall", make_items(args.items, rng, now=now, age_days=2, importance=0.6))
        first = timed(lambda: recall_mem.recall_similar("release provider verification", 5))
        print(
            f"| recall, first call (builds the index of {args.items}) | {first[0] * 1000:.1f} | | {first[1] * 1000:.1f} | | | | | 1 |"
        )
        docs = [(i.id, tokenize(i.content), i.timestamp) for i in recall_mem.items()]
        queries = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 4))) for _ in range(samples)]
        rw: list[float] = []
        rc: list[float] = []
        sw: list[float] = []

        def scan(q: str) -> list[tuple[float, float, str]]:
            tokens = tokenize(q)
            scored = [(-coverage(tokens, t), -ts, i) for i, t, ts in docs]
            return sorted(s for s in scored if s[0] < 0)[:5]

        for q in queries:
            wall, cpu = timed(lambda q=q: recall_mem.recall_similar(q, 5))
            rw.append(wall)
            rc.append(cpu)
            sw.append(timed(lambda q=q: scan(q))[0])
        row(f"recall_similar k=5, {args.items} items", rw, rc, "full scan", sw)
        verdicts.append(
            f"[{'met' if p(rw, 0.5) <= 2 else 'MISSED'}] recall p50 over {args.items} items <= 2 ms: {p(rw, 0.5):.3f} ms"
        )

        # -- prune ------------------------------------------------------------------
        pw: list[float] = []
        pc: list[float] = []
        uw: list[float] = []
        for round_ in range(1 if args.quick else 3):
            stale = make_items(args.items, rng, now=now, age_days=120, importance=0.2)
            prune_mem = new_git_memory(tmp, f"prune-{round_}", stale)
            len(prune_mem)
            report: list[int] = []
            wall, cpu = timed(lambda m=prune_mem, r=report: r.append(len(m.prune().removed)))
            assert report == [args.items], report
            pw.append(wall)
            pc.append(cpu)
            folder = tmp / f"unlink-{round_}"
            bulk.write_directory(str(folder), files_of(stale))
            paths = [folder / path for path, _ in files_of(stale)]
            uw.append(timed(lambda ps=paths: [os.unlink(x) for x in ps])[0])
        row(f"prune {args.items} stale items (one commit)", pw, pc, "unlink files", uw)
        verdicts.append(
            f"[{'met' if p(pw, 0.5) <= 1000 else 'MISSED'}] prune of {args.items} items <= 1 s: {p(pw, 0.5):.0f} ms"
        )
        print()
        for v in verdicts:
            print(f"- {v}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
