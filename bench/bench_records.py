"""Benchmark record memory: writes against a plain-directory record store, search, recall.

One run, one machine, the baseline measured in the same run:

- **add / update**: ``RecordStore`` over a git record mount holding ``--records``
  records, against :class:`bench.plainrecords.PlainRecordStore` (one JSON file per
  record, ``flock`` + temp file + ``os.replace``) holding the same records. The two
  are called alternately in random order, so load spikes hit both. A gitmem add is
  one commit of two files (the record and the namespace's ``last-id`` marker, moved
  by compare-and-swap on the version the handle remembers) and no read; an update
  is a read and one commit (the batch's answer confirms both). Wall and CPU time
  (the calling thread's) are reported.
- **context**: a plain ``write`` of a new file through the same git store, so the
  cost record memory adds on top of one store commit is visible.
- **search**: ``RecordStore.search`` over the same records, ranked by BM25 (the
  default) and by coverage (``ranking="coverage"``), the recall index warm (each
  call still asks the store for changes since the index's cursor); a naive scan
  that scores every record's text (``bench/recall_scan.py``) is the baseline; and
  BM25 right after an add (the index catches up by reading the changed files).
- **recall**: the ``<memory-recall>`` blocks of a run over 3 record mounts
  (``--records``, and a tenth of it twice), for a question and for a long input cut
  to 2000 characters.

The records read like short facts: 40% function words shared by most records
("the", "at", "prefers"...) and content words from a 5000-word Zipf vocabulary.

Usage::

    .venv/bin/python bench/bench_records.py             # 10k records, 300 writes, 300 searches
    .venv/bin/python bench/bench_records.py --quick     # 2k records, fewer samples
    .venv/bin/python bench/bench_records.py --quick --only writes   # the add/update section only
    .venv/bin/python bench/bench_records.py --variant prune --variant tokens --sizes 1000 10000 --dir /mnt/ext4/x
        # what the recall engine's speed-only mechanisms buy, on and off in one run (bench/recall_ab.py)

Prints p50/p95 per operation, the ratios and a met/missed line per target.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bulk, recall_ab
from bench.plainrecords import PlainRecordStore
from bench.recall_scan import scan_coverage
from gitmem import Root
from gitmem.recall import RecallDoc
from gitmem.records import RecordStore
from gitmem.records.rules import IdGenerator, RecordFile, marker_path, record_path, render_record
from gitmem.tools.records import RecordMemoryCapability, RecordMount

# Records read like short facts: a few function words that most records share, and
# content words drawn from a 5000-word vocabulary with a Zipf law (a few common, a
# long tail of rare ones), so postings have the skew of real text.
FUNCTION_WORDS = "the a to of in at and for on with is my i she he likes prefers works lives has".split()


class Corpus:
    def __init__(self, rng: random.Random, vocabulary: int = 5000) -> None:
        self.rng = rng
        letters = "bcdfghklmnprstvz"
        self.words = [
            "".join(rng.choice(letters) + rng.choice("aeiou") for _ in range(3)) + str(i) for i in range(vocabulary)
        ]
        self.cum = list(itertools.accumulate(1 / (rank + 1) ** 1.1 for rank in range(vocabulary)))

    def word(self) -> str:
        return self.words[bisect.bisect(self.cum, self.rng.random() * self.cum[-1])]

    def text(self, low: int, high: int, function_share: float) -> str:
        rng = self.rng
        n = rng.randint(low, high)
        return " ".join(rng.choice(FUNCTION_WORDS) if rng.random() < function_share else self.word() for _ in range(n))

    def record(self) -> str:
        return self.text(3, 12, 0.4)

    def question(self) -> str:
        return self.text(3, 10, 0.5)


# Facts planted among the generated records, each with a question a run might start
# with: recall quality is whether the fact comes back in the top 5.
PLANTED = {
    "prefers green tea": "I would like a tea. What should I order?",
    "works at the Berlin office": "Where is the office I work at?",
    "is allergic to peanuts": "Can she eat peanuts in the cake?",
    "has a dog named Rex": "what is the name of my dog",
    "birthday is on the 3rd of May": "when is my birthday?",
    "drives a blue bicycle to work": "how do I get to work, by bicycle?",
    "speaks Portuguese and a little Japanese": "which languages does she speak?",
    "wants answers in short bullet points": "how should I format the answers for him?",
}


def seed_git(root: Root, mount: str, namespace: str, count: int, corpus: Corpus) -> list[str]:
    """``count`` records committed in one go (as the store would lay them out), ids returned."""
    store = root.mount(mount, create=True, kind="record").sync
    folder = RecordStore(store, namespace).folder
    ids = IdGenerator()
    now = datetime.now(UTC)
    items = []
    made = []
    for _ in range(count):
        rid = ids.next()
        made.append(rid)
        items.append((record_path(folder, rid), render_record(RecordFile(rid, corpus.record(), now, now)).encode()))
    existing = [(e.path, store.read(e.path).text.encode()) for e in store.list()]
    items += [*existing, (marker_path(folder), (made[-1] + "\n").encode())]
    bulk.import_files(store.path, items)
    return made


def seed_plain(store: PlainRecordStore, count: int, corpus: Corpus) -> list[str]:
    return [store.add(corpus.record())["id"] for _ in range(count)]


CPU: list[float] = []  # the calling thread's CPU time of every timed call, in order


def timed(fn: Callable[..., object], *args: object, **kwargs: object) -> float:
    """Wall time of the call; its CPU time (this thread's: pygit2 runs here) goes to ``CPU``.

    On a loaded machine wall time includes waiting for a core and the disk; CPU time mostly does not.
    """
    start, cpu = time.perf_counter(), time.thread_time()
    fn(*args, **kwargs)
    CPU.append(time.thread_time() - cpu)
    return time.perf_counter() - start


def p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def row(name: str, samples: list[float]) -> str:
    return f"| {name} | {p(samples, 0.5):.3f} | {p(samples, 0.95):.3f} | {len(samples)} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="2k records, 100 writes, 100 searches")
    parser.add_argument("--only", choices=["writes"], help="Run the add/update section only.")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        choices=recall_ab.VARIANTS,
        help="instead: this mechanism on against off, alternating (bench/recall_ab.py)",
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000], help="records, with --variant")
    parser.add_argument("--rounds", type=int, default=200, help="calls each way per op, with --variant")
    parser.add_argument("--dir", help="build the memories under this folder (another file system)")
    args = parser.parse_args()
    if args.variant:
        variants(args)
        return
    if args.quick:
        args.records, args.writes, args.searches = 2_000, 100, 100
    rng = random.Random(11)
    tmp = Path(tempfile.mkdtemp(prefix="gitmem-bench-records-"))
    try:
        run(args, rng, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def variants(args: argparse.Namespace) -> None:
    """The ``--variant`` mechanisms on and off, alternately, at each of ``--sizes``."""
    print(f"load {os.getloadavg()}, dir {args.dir or tempfile.gettempdir()}")
    print("| mechanism | op | dir | records | CPU p50 on / off (ms) | mean | calls |\n|---|---|---|---|---|---|---|")
    for size in args.sizes:
        tmp = Path(tempfile.mkdtemp(prefix="gitmem-bench-records-", dir=args.dir))
        try:
            rng = random.Random(11)
            corpus = Corpus(rng)
            root = Root(tmp / "root")
            seed_git(root, "facts", "alice", size, corpus)
            sync = root.mount("facts", kind="record").sync
            records = RecordStore(sync, "alice")
            coverage = RecordStore(sync, "alice", ranking="coverage")
            questions = [corpus.question() for _ in range(200)]
            records.search("warm up", limit=5)
            coverage.search("warm up", limit=5)
            for name in args.variant:
                out = recall_ab.run(name, records, coverage, questions, args.rounds, rng)
                print("\n".join(recall_ab.report(name, size, args.dir or "/tmp", out)), flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"load {os.getloadavg()}")


def run(args: argparse.Namespace, rng: random.Random, tmp: Path) -> None:
    started = time.perf_counter()
    corpus = Corpus(rng)
    root = Root(tmp / "root")
    git_ids = seed_git(root, "facts", "alice", args.records, corpus)
    records = RecordStore(root.mount("facts", kind="record").sync, "alice")
    plain = PlainRecordStore(str(tmp / "plain"), "alice")
    plain_ids = seed_plain(plain, args.records, corpus)
    built = time.perf_counter() - started

    # -- writes, alternating in random order --
    names = ("git add", "plain add", "git update", "plain update", "gitmem file write")
    series: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    files = root.mount("facts", kind="record").sync
    for i in range(args.writes):
        text = corpus.record() + f" n{i}"
        jobs: list[tuple[str, Callable[..., object], tuple[object, ...], dict[str, object]]] = [
            ("gitmem file write", files.write, (f"scratch/{i % 251:03d}/{i}.md", text), {"expected": None}),
            ("git add", records.add, (text,), {}),
            ("plain add", plain.add, (text,), {}),
            ("git update", records.update, (rng.choice(git_ids), text + " u"), {}),
            ("plain update", plain.update, (rng.choice(plain_ids), text + " u"), {}),
        ]
        rng.shuffle(jobs)
        for name, fn, fargs, fkwargs in jobs:
            series[name].append(timed(fn, *fargs, **fkwargs))
            cpu[name].append(CPU[-1])
    if args.only == "writes":
        report_writes(args, series, cpu, built)
        return

    # -- search: BM25 (the default) and coverage, warm; a naive scan as the baseline --
    cold = timed(records.search, "warm up", limit=5)
    resumed = timed(RecordStore(records.store, "alice").search, "warm up", limit=5)  # a new process: the snapshot
    by_coverage = RecordStore(records.store, "alice", ranking="coverage")
    by_coverage.search("warm up")
    planted = {records.add(fact).id: question for fact, question in PLANTED.items()}
    quality = {
        name: sum(rid in {r.id for r in store.search(q, limit=5)} for rid, q in planted.items())
        for name, store in (("bm25", records), ("coverage", by_coverage))
    }
    docs = [RecallDoc(rid, text, 0.0) for rid, text in plain.texts()]
    queries = [corpus.question() for _ in range(args.searches)]
    searches: dict[str, list[float]] = {"search (bm25)": [], "search (coverage)": [], "naive scan": []}
    for q in queries:
        searches["search (bm25)"].append(timed(records.search, q, limit=5))
        searches["search (coverage)"].append(timed(by_coverage.search, q, limit=5))
        searches["naive scan"].append(timed(scan_coverage, docs, q, limit=5))
    after_add: list[float] = []
    for q in queries[: max(10, args.searches // 5)]:
        records.add(corpus.record())
        after_add.append(timed(records.search, q, limit=5))

    # -- recall over 3 mounts: a question, and a long input cut to 2000 characters --
    mounts = [RecordMount("facts", records)]
    for name in ("team", "project"):
        seed_git(root, name, "alice", args.records // 10, corpus)
        mounts.append(RecordMount(name, RecordStore(root.mount(name, kind="record").sync, "alice")))
    recall = {
        "recall, 3 mounts, question (bm25)": (RecordMemoryCapability(mounts), False),
        "recall, 3 mounts, 2000-char input (bm25)": (RecordMemoryCapability(mounts), True),
        "recall, 3 mounts, question (coverage)": (
            RecordMemoryCapability(
                [RecordMount(m.name, RecordStore(m.store.store, "alice", ranking="coverage")) for m in mounts]  # type: ignore[attr-defined]
            ),
            False,
        ),
    }
    cold_recall: dict[str, float] = {}
    for capability, _ in recall.values():
        for mount in capability.mounts:  # build each index before timing (a cold one may exceed recall_seconds)
            cold_recall.setdefault(mount.name, timed(mount.store.search, "warm up"))
    loop = asyncio.new_event_loop()
    recall_times: dict[str, list[float]] = {}
    blocks = 0
    for label, (capability, long_input) in recall.items():
        loop.run_until_complete(capability.recall("warm up the three indexes"))
        samples: list[float] = []
        for q in queries[: max(20, args.searches // 3)]:
            text = " ".join(corpus.question() for _ in range(60)) if long_input else q
            start = time.perf_counter()
            report = loop.run_until_complete(capability.recall(text))
            samples.append(time.perf_counter() - start)
            assert set(report.status.values()) == {"recalled"}, report.errors
            blocks += len(report.blocks)
        recall_times[label] = samples
    loop.close()

    # -- checks --
    fsck = subprocess.run(["git", "-C", files.path, "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    total = len(records.ids())
    assert total == args.records + args.writes + len(after_add) + len(PLANTED), total

    report_writes(args, series, cpu, built)
    print("\n| operation | p50 (ms) | p95 (ms) | n |\n|---|---|---|---|")
    for name, samples in searches.items():
        print(row(name, samples))
    print(row("search (bm25) right after an add", after_add))
    for name, samples in recall_times.items():
        print(row(name, samples))
    print(f"| first search (builds the index from {args.records} files) | {cold * 1000:.1f} | | 1 |")
    print(f"| first search in a new process (resumes from the snapshot) | {resumed * 1000:.1f} | | 1 |")
    for name in ("team", "project"):
        print(f"| first search of {name} ({args.records // 10} files) | {cold_recall[name] * 1000:.1f} | | 1 |")
    search = p(searches["search (bm25)"], 0.5)
    question = p(recall_times["recall, 3 mounts, question (bm25)"], 0.5)
    print(f"\nnaive scan / bm25 search: {p(searches['naive scan'], 0.5) / search:.1f}x; {blocks} recall blocks")
    print(
        f"planted facts found in the top 5 by their question: bm25 {quality['bm25']}/{len(PLANTED)}, "
        f"coverage {quality['coverage']}/{len(PLANTED)}"
    )
    targets = [
        ("search p50 <= 2 ms (bm25)", search <= 2, f"{search:.3f} ms"),
        ("recall, 3 mounts, p50 <= 10 ms (bm25, question)", question <= 10, f"{question:.2f} ms"),
    ]
    for name, met, value in targets:
        print(f"{'met   ' if met else 'MISSED'} {name}: {value}")


def report_writes(
    args: argparse.Namespace, series: dict[str, list[float]], cpu: dict[str, list[float]], built: float
) -> None:
    """The add/update table (wall and CPU), the ratios against the plain store, and their targets."""
    load = os.getloadavg()[0]
    print(f"\nrecord memory benchmark: {args.records} records, {args.writes} writes, {args.searches} searches")
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load {load:.1f}; seeded in {built:.1f} s\n")
    print("| operation | p50 (ms) | p95 (ms) | CPU p50 (ms) | n |\n|---|---|---|---|---|")
    for name, samples in series.items():
        print(f"| {name} | {p(samples, 0.5):.3f} | {p(samples, 0.95):.3f} | {p(cpu[name], 0.5):.3f} | {len(samples)} |")
    add, upd = p(series["git add"], 0.5), p(series["git update"], 0.5)
    add_ratio, upd_ratio = add / p(series["plain add"], 0.5), upd / p(series["plain update"], 0.5)
    add_cpu = p(cpu["git add"], 0.5) / p(cpu["plain add"], 0.5)
    upd_cpu = p(cpu["git update"], 0.5) / p(cpu["plain update"], 0.5)
    file_write, file_cpu = p(series["gitmem file write"], 0.5), p(cpu["gitmem file write"], 0.5)
    print(
        f"\nadd / gitmem file write: {add / file_write:.2f}x (CPU {p(cpu['git add'], 0.5) / file_cpu:.2f}x); "
        f"update / file write: {upd / file_write:.2f}x (CPU {p(cpu['git update'], 0.5) / file_cpu:.2f}x)"
    )
    print(f"add / plain store: {add_ratio:.2f}x (CPU {add_cpu:.2f}x); update: {upd_ratio:.2f}x (CPU {upd_cpu:.2f}x)")
    targets = [
        ("add p50 <= 3x plain", add_ratio <= 3, f"{add_ratio:.2f}x"),
        ("add p50 <= 3 ms", add <= 3, f"{add:.2f} ms"),
        ("update p50 <= 3x plain", upd_ratio <= 3, f"{upd_ratio:.2f}x"),
        ("update p50 <= 3 ms", upd <= 3, f"{upd:.2f} ms"),
    ]
    for name, met, value in targets:
        print(f"{'met   ' if met else 'MISSED'} {name}: {value}")


if __name__ == "__main__":
    main()
