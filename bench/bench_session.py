"""Benchmark session memory: remember, recall and prune, each against a baseline in the same run.

- **remember**: :class:`gitmem.session.memory.SessionMemory` on a git session mount
  against :class:`DirSessionStore`, the way a file-backed memory store keeps items
  (one JSON file per item in a directory, a ``flock``, temp file + ``os.replace``).
  Both use the same item rules (checks, fingerprint path, duplicate merge, JSON), so
  the comparison is storage, not validation. Both hold ``--items`` items first; the
  two are called alternately in random order so background load hits both alike.
  A second row remembers exact duplicates (the merge path); a context row writes
  the same text as a plain file to the same store (into a new ``scratch/`` folder),
  and another writes the file a remember would (a new item's JSON at its
  fingerprint path in ``items/<2 hex>/``) by a plain ``write``, so what session
  memory adds on top of the very commit it makes shows.
Texts are English-like: a 4,000-word vocabulary (the domain words and made-up ones)
with a Zipf spread (exponent 1.07), 8-20 words per item, 2-4 per query.

- **recall**: ``recall_similar(query, 5)`` over ``--items`` items (warm: the recall
  index is built on the first call, which is reported apart, as is the first call of
  a second handle that resumes from the saved catalogue), including the access
  statistics append; the baseline is a brute-force coverage scan over the same
  pre-tokenised texts in memory.
- **prune**: ``--items`` stale items removed in one commit, against unlinking the
  same number of files from a directory.

Usage::

    .venv/bin/python bench/bench_session.py            # 10k items
    .venv/bin/python bench/bench_session.py --quick    # fewer samples
    .venv/bin/python bench/bench_session.py --only remember   # one section (remember | recall | prune)

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


def vocabulary(rng: random.Random, size: int = 4000) -> tuple[list[str], list[float]]:
    """English-like text: the domain words plus made-up words, with a Zipf spread of frequencies."""
    syllables = ["ka", "lo", "mi", "ten", "ra", "sho", "vel", "dan", "pri", "ost", "ex", "ul", "bar", "nic", "tor"]
    words = list(WORDS)
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    rng.shuffle(words)
    weights = [1.0 / (rank + 1) ** 1.07 for rank in range(len(words))]
    return words, weights


VOCAB, WEIGHTS = vocabulary(random.Random(5))


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
    return f"note {n}: " + " ".join(rng.choices(VOCAB, WEIGHTS, k=rng.randint(8, 20)))


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


def row(
    name: str,
    wall: list[float],
    cpu: list[float],
    base: str = "",
    bwall: list[float] | None = None,
    bcpu: list[float] | None = None,
) -> None:
    line = f"| {name} | {p(wall, 0.5):.3f} | {p(wall, 0.95):.3f} | {p(cpu, 0.5):.3f} |"
    if bwall:
        line += f" {base} | {p(bwall, 0.5):.3f} | {p(bwall, 0.95):.3f} | {p(bcpu, 0.5) if bcpu else float('nan'):.3f} |"
        line += f" {p(wall, 0.5) / p(bwall, 0.5):.2f}x |"
        line += f" {p(cpu, 0.5) / p(bcpu, 0.5):.2f}x |" if bcpu else " |"
    else:
        line += " | | | | |"
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
    parser.add_argument("--only", choices=["remember", "recall", "prune"], help="Run one section only.")
    args = parser.parse_args()
    samples = 100 if args.quick else 400
    rng = random.Random(11)
    now = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="bench-session-"))
    verdicts: list[str] = []
    try:
        print(f"session memory benchmark: {args.items} items, {samples} samples, load {os.getloadavg()[0]:.2f}")
        print("(times in ms; CPU is the calling thread's: on a shared machine wall time includes waiting)")
        print(
            "| operation | gitmem p50 ms | p95 | CPU p50 | baseline | p50 | p95 | CPU p50 | ratio p50 | CPU ratio | n |"
        )
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")

        if args.only in (None, "remember"):
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
            bc: list[float] = []
            fw: list[float] = []  # context: one plain write of the same text to the same store
            fc: list[float] = []
            iw: list[float] = []  # context: the item file a remember writes, by a plain write, no session layer
            ic: list[float] = []
            store = memory.store
            for n, text in enumerate(texts):
                other = make_item(text + " context", now=time.time())  # made before the clock starts
                ((other_path, other_text),) = files_of([other])
                calls = [
                    ("git", lambda t=text: memory.remember(t)),
                    ("dir", lambda t=text: base.remember(t)),
                    ("file", lambda t=text, n=n: store.write(f"scratch/{n % 251:03d}/{n}.json", t, expected=None)),
                    ("item", lambda p=other_path, t=other_text: store.write(p, t.decode(), expected=None)),
                ]
                rng.shuffle(calls)
                for who, call in calls:
                    wall, cpu = timed(call)
                    {"git": gw, "dir": bw, "file": fw, "item": iw}[who].append(wall)
                    {"git": gc, "dir": bc, "file": fc, "item": ic}[who].append(cpu)
            row("remember (new text)", gw, gc, "dir store", bw, bc)
            row("(context) one-file write, same store", fw, fc, "dir store", bw, bc)
            row("(context) the item file by a plain write", iw, ic, "dir store", bw, bc)
            ratio = p(gw, 0.5) / p(bw, 0.5)
            cpu_ratio = p(gc, 0.5) / p(bc, 0.5)
            verdicts.append(
                f"[{'met' if ratio <= 3 else 'MISSED'}] remember p50 <= 3x dir store: {ratio:.2f}x (CPU {cpu_ratio:.2f}x); "
                f"remember / one-file write: {p(gw, 0.5) / p(fw, 0.5):.2f}x (CPU {p(gc, 0.5) / p(fc, 0.5):.2f}x); "
                f"remember / the item file by a plain write: {p(gw, 0.5) / p(iw, 0.5):.2f}x "
                f"(CPU {p(gc, 0.5) / p(ic, 0.5):.2f}x)"
            )
            dw: list[float] = []
            dc: list[float] = []
            dbw: list[float] = []
            dbc: list[float] = []
            for text in texts[: samples // 2]:
                calls = [
                    ("git", lambda t=text: memory.remember(t.upper())),
                    ("dir", lambda t=text: base.remember(t.upper())),
                ]
                rng.shuffle(calls)
                for who, call in calls:
                    wall, cpu = timed(call)
                    (dw if who == "git" else dbw).append(wall)
                    (dc if who == "git" else dbc).append(cpu)
            row("remember (exact duplicate: merge)", dw, dc, "dir store", dbw, dbc)

        if args.only in (None, "recall"):
            # -- recall -----------------------------------------------------------------
            recall_mem = new_git_memory(tmp, "recall", make_items(args.items, rng, now=now, age_days=2, importance=0.6))
            first = timed(lambda: recall_mem.recall_similar("release provider verification", 5))
            print(
                f"| recall, first call (reads and indexes {args.items} items) | {first[0] * 1000:.1f} | |"
                f" {first[1] * 1000:.1f} | | | | | | | 1 |"
            )
            again = open_session_memory(tmp / "recall")  # as a new process would: the saved catalogue
            resumed = timed(lambda: again.recall_similar("release provider verification", 5))
            assert again.catalogue.resumed_from_snapshot
            print(
                f"| recall, first call of a new handle (resumes from the saved catalogue) | {resumed[0] * 1000:.1f} | |"
                f" {resumed[1] * 1000:.1f} | | | | | | | 1 |"
            )
            docs = [(i.id, tokenize(i.content), i.timestamp) for i in recall_mem.items()]
            queries = [" ".join(rng.choices(VOCAB, WEIGHTS, k=rng.randint(2, 4))) for _ in range(samples)]
            rw: list[float] = []
            rc: list[float] = []
            sw: list[float] = []
            scpu: list[float] = []

            def scan(q: str) -> list[tuple[float, float, str]]:
                tokens = tokenize(q)
                scored = [(-coverage(tokens, t), -ts, i) for i, t, ts in docs]
                return sorted(s for s in scored if s[0] < 0)[:5]

            for q in queries:
                wall, cpu = timed(lambda q=q: recall_mem.recall_similar(q, 5))
                rw.append(wall)
                rc.append(cpu)
                scanned = timed(lambda q=q: scan(q))
                sw.append(scanned[0])
                scpu.append(scanned[1])
            row(f"recall_similar k=5, {args.items} items", rw, rc, "full scan", sw, scpu)
            verdicts.append(
                f"[{'met' if p(rw, 0.5) <= 2 else 'MISSED'}] recall p50 over {args.items} items <= 2 ms: "
                f"{p(rw, 0.5):.3f} ms (CPU {p(rc, 0.5):.3f} ms)"
            )

        if args.only in (None, "prune"):
            # -- prune ------------------------------------------------------------------
            pw: list[float] = []
            pc: list[float] = []
            uw: list[float] = []
            uc: list[float] = []
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
                unlinked = timed(lambda ps=paths: [os.unlink(x) for x in ps])
                uw.append(unlinked[0])
                uc.append(unlinked[1])
            row(f"prune {args.items} stale items (one commit)", pw, pc, "unlink files", uw, uc)
            verdicts.append(
                f"[{'met' if p(pw, 0.5) <= 1000 else 'MISSED'}] prune of {args.items} items <= 1 s: "
                f"{p(pw, 0.5):.0f} ms (CPU {p(pc, 0.5):.0f} ms)"
            )
        print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
        for v in verdicts:
            print(f"- {v}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
