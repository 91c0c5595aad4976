"""Benchmark record memory: writes against a plain-directory record store, search, recall.

One run, one machine, the baseline measured in the same run:

- **add / update**: ``RecordStore`` over a git record mount holding ``--records``
  records, against :class:`bench.plainrecords.PlainRecordStore` (one JSON file per
  record, ``flock`` + temp file + ``os.replace``) holding the same records. The two
  are called alternately in random order, so load spikes hit both. A gitmem add is
  one commit of two files (the record and the namespace's ``last-id`` marker, moved
  by compare-and-swap) plus the read of the marker and the read-back; an update is
  a read, one commit and the read-back.
- **context**: a plain ``write`` of a new file through the same git store, so the
  cost record memory adds on top of one store commit is visible.
- **search**: ``RecordStore.search`` over the same records (the recall index warm;
  each call still asks the store for changes since the index's cursor), against a
  naive scan that scores every record's text (``gitmem.recall.scan``), and right
  after an add (the index catches up by reading the changed files).
- **recall**: the ``<memory-recall>`` blocks of a run over 3 record mounts.

Usage::

    .venv/bin/python bench/bench_records.py             # 10k records, 300 writes, 300 searches
    .venv/bin/python bench/bench_records.py --quick     # 2k records, fewer samples

Prints p50/p95 per operation, the ratios and a met/missed line per target.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bulk
from bench.plainrecords import PlainRecordStore
from gitmem import Root
from gitmem.recall import RecallDoc
from gitmem.recall.scan import scan_coverage
from gitmem.records import RecordStore
from gitmem.records.rules import IdGenerator, RecordFile, marker_path, record_path, render_record
from gitmem.tools.records import RecordMemoryCapability, RecordMount

_WORDS = bulk._WORDS


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 14)))


def seed_git(root: Root, mount: str, namespace: str, count: int, rng: random.Random) -> list[str]:
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
        items.append((record_path(folder, rid), render_record(RecordFile(rid, sentence(rng), now, now)).encode()))
    existing = [(e.path, store.read(e.path).text.encode()) for e in store.list()]
    items += [*existing, (marker_path(folder), (made[-1] + "\n").encode())]
    bulk.import_files(store.path, items)
    return made


def seed_plain(store: PlainRecordStore, count: int, rng: random.Random) -> list[str]:
    return [store.add(sentence(rng))["id"] for _ in range(count)]


def timed(fn: Callable[..., object], *args: object, **kwargs: object) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
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
    args = parser.parse_args()
    if args.quick:
        args.records, args.writes, args.searches = 2_000, 100, 100
    rng = random.Random(11)
    tmp = Path(tempfile.mkdtemp(prefix="gitmem-bench-records-"))
    try:
        run(args, rng, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, rng: random.Random, tmp: Path) -> None:
    started = time.perf_counter()
    root = Root(tmp / "root")
    git_ids = seed_git(root, "facts", "alice", args.records, rng)
    records = RecordStore(root.mount("facts", kind="record").sync, "alice")
    plain = PlainRecordStore(str(tmp / "plain"), "alice")
    plain_ids = seed_plain(plain, args.records, rng)
    built = time.perf_counter() - started

    # -- writes, alternating in random order --
    names = ("git add", "plain add", "git update", "plain update", "gitmem file write")
    series: dict[str, list[float]] = {k: [] for k in names}
    files = root.mount("facts", kind="record").sync
    for i in range(args.writes):
        text = sentence(rng) + f" #{i}"
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

    # -- search --
    cold = timed(lambda: records.search("agent memory", limit=5))
    docs = [RecallDoc(rid, text, 0.0) for rid, text in plain.texts()]
    queries = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4))) for _ in range(args.searches)]
    search: list[float] = []
    scan: list[float] = []
    after_add: list[float] = []
    for q in queries:
        search.append(timed(records.search, q, limit=5))
        scan.append(timed(scan_coverage, docs, q, limit=5))
    for q in queries[: max(10, args.searches // 5)]:
        records.add(sentence(rng))
        after_add.append(timed(records.search, q, limit=5))

    # -- recall over 3 mounts --
    mounts = [RecordMount("facts", records)]
    for name in ("team", "project"):
        seed_git(root, name, "alice", args.records // 10, rng)
        mounts.append(RecordMount(name, RecordStore(root.mount(name, kind="record").sync, "alice")))
    capability = RecordMemoryCapability(mounts)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(capability.recall("warm up the three indexes"))
    recall: list[float] = []
    blocks = 0
    for q in queries:
        report = None

        def once(q: str = q) -> None:
            nonlocal report
            report = loop.run_until_complete(capability.recall(f"What do you remember about {q}?"))

        recall.append(timed(once))
        assert report is not None and set(report.status.values()) == {"recalled"}
        blocks += len(report.blocks)
    loop.close()

    # -- checks --
    fsck = subprocess.run(["git", "-C", records.store.path, "fsck", "--strict"], capture_output=True, text=True)  # type: ignore[attr-defined]
    assert fsck.returncode == 0, fsck.stderr
    total = len(records.ids())
    assert total == args.records + args.writes + len(after_add), total

    load = os.getloadavg()[0]
    print(f"\nrecord memory benchmark: {args.records} records, {args.writes} writes, {args.searches} searches")
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load {load:.1f}; seeded in {built:.1f} s\n")
    print("| operation | p50 (ms) | p95 (ms) | n |\n|---|---|---|---|")
    for name, samples in series.items():
        print(row(name, samples))
    print(row("search, index warm", search))
    print(row("search right after an add", after_add))
    print(row("naive scan of every record", scan))
    print(row("recall blocks, 3 mounts", recall))
    print(f"| search, first call (builds the index) | {cold * 1000:.1f} | | 1 |")
    add_ratio = p(series["git add"], 0.5) / p(series["plain add"], 0.5)
    upd_ratio = p(series["git update"], 0.5) / p(series["plain update"], 0.5)
    targets = [
        ("add p50 <= 3x plain", add_ratio <= 3, f"{add_ratio:.2f}x"),
        ("add p50 <= 3 ms", p(series["git add"], 0.5) <= 3, f"{p(series['git add'], 0.5):.2f} ms"),
        ("update p50 <= 3x plain", upd_ratio <= 3, f"{upd_ratio:.2f}x"),
        ("update p50 <= 3 ms", p(series["git update"], 0.5) <= 3, f"{p(series['git update'], 0.5):.2f} ms"),
        ("search p50 <= 2 ms", p(search, 0.5) <= 2, f"{p(search, 0.5):.3f} ms"),
        ("recall, 3 mounts, p50 <= 10 ms", p(recall, 0.5) <= 10, f"{p(recall, 0.5):.2f} ms"),
    ]
    print(f"\nsearch vs naive scan: {p(scan, 0.5) / p(search, 0.5):.1f}x faster; {blocks} recall blocks rendered")
    for name, met, value in targets:
        print(f"{'met   ' if met else 'MISSED'} {name}: {value}")
    print(f"median of medians check: {statistics.median(search) * 1000:.3f} ms search")


if __name__ == "__main__":
    main()
