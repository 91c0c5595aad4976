"""Benchmark the Whoosh index of a mount against a full scan, in one run.

Questions, each with its baseline measured in the same run:

- **literal grep, indexed vs scan** (target >= 20x faster, same answers): the
  store's ``search`` (index picks candidate files, lines checked exactly) against
  what ``search`` did before the index existed: read every file at the head and
  scan it. Answers are compared for every sample. A rare literal (~1% of files),
  a unique one, a regex with a required literal, and a literal in every file
  (which the index cannot narrow: reported to show the cost of trying).
- **catch-up after one write** (target <= 20 ms): a store write (not timed), then
  the index brought to the new head (one Whoosh commit), and, separately, the
  first search after a write (catch-up + search). The write itself is the
  baseline: it is what upkeep would add to every write if it sat on the write path.
- **full rebuild** (reported): ``rebuild_index()`` from scratch, beside one full
  scan. With ``--postings N`` the design this index replaced (a Whoosh trigram
  *field*, one posting per file and trigram) is timed on N files for comparison.
- **cold search** (reported): the first search of a new store handle, which
  loads the signatures of each Whoosh segment once per process.

The memory: ``--files`` notes (~500 B, nested folders) from :mod:`bench.bulk`,
imported in one commit; every 97th note also mentions a zeppelin and a ticket.
Every sample records wall and CPU time (the machine may be shared: wall time
includes waiting for a CPU, CPU time mostly does not). Targets are judged on
wall p50.

Usage::

    .venv/bin/python bench/bench_index.py                 # 10k files (~5 MB), 21 samples
    .venv/bin/python bench/bench_index.py --files 2000 --samples 9
    .venv/bin/python bench/bench_index.py --postings 1000 # also time the trigram-postings design
    .venv/bin/python bench/bench_index.py --variant fallback --sizes 1000 10000 --dir /mnt/ext4/x
        # what git grep buys a search with no index, against reading every file (on/off alternating)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bulk
from gitmem import GitFileStore
from gitmem.fileformat import decode_stored
from gitmem.grep import compile_pattern, scan
from gitmem.model import SearchResult

RARE_EVERY = 97


def notes(n: int) -> Iterator[tuple[str, bytes]]:
    for i, (path, data) in enumerate(bulk.files(n)):
        if i % RARE_EVERY == 0:
            data += f"Zeppelin sighting logged as ticket KX-{i}\n".encode()
        yield path, data


def sample(
    n: int, fn: Callable[[], object], before: Callable[[], object] | None = None
) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``n`` calls of ``fn`` (``before`` runs untimed ahead of each)."""
    wall, cpu = [], []
    for _ in range(n):
        if before is not None:
            before()
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start)
    return wall, cpu


def p50(values: list[float]) -> float:
    return statistics.median(values)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def scan_all(store: GitFileStore, pattern: str, regex: bool, limit: int) -> SearchResult:
    """``search`` as it was before the index: every file at the head, scanned."""
    repo = store.sync.repo
    matcher = compile_pattern(pattern, regex=regex)
    head = repo.head()
    files = list(repo.files_at(head))
    return scan(((p, decode_stored(repo.blob(oid))) for p, oid in files), matcher, limit)


def postings_design(n: int, work: str) -> tuple[float, float]:
    """Index ``n`` notes with a Whoosh trigram field (one posting per file and trigram)."""
    from whoosh import fields, formats
    from whoosh.analysis import RegexTokenizer
    from whoosh.index import create_in

    from gitmem.index.grams import text_grams

    folder = os.path.join(work, "postings")
    os.makedirs(folder)
    grams_field = fields.FieldType(formats.Existence(), RegexTokenizer(r"[^\n]+"), scorable=True)
    schema = fields.Schema(path=fields.ID(stored=True, unique=True), grams=grams_field)
    ix = create_in(folder, schema)
    start, start_cpu = time.perf_counter(), time.process_time()
    writer = ix.writer()
    for path, data in notes(n):
        writer.add_document(path=path, grams="\n".join(text_grams(data.decode())))
    writer.commit()
    return time.perf_counter() - start, time.process_time() - start_cpu


def run(files: int, samples: int, postings: int, work: str) -> dict[str, object]:
    repo = os.path.join(work, "mem.git")
    GitFileStore.init(repo)
    t0 = time.perf_counter()
    size = 0

    def counted() -> Iterator[tuple[str, bytes]]:
        nonlocal size
        for path, data in notes(files):
            size += len(data)
            yield path, data

    bulk.import_files(repo, counted())
    store = GitFileStore.open(repo)
    print(f"memory: {files} files, {size / 1e6:.1f} MB, imported in {time.perf_counter() - t0:.1f} s")
    out: dict[str, object] = {"files": files, "bytes": size}

    # -- full rebuild --
    rebuild_wall, rebuild_cpu = sample(1, store.sync.rebuild_index)
    scan_wall, _ = sample(1, lambda: scan_all(store, "zeppelin", False, 100))
    status = store.sync.index_status()
    index_bytes = sum(f.stat().st_size for f in Path(status.directory).iterdir())
    print(
        f"\nfull rebuild: {rebuild_wall[0]:.2f} s (CPU {rebuild_cpu[0]:.2f} s), {status.documents} documents, "
        f"{index_bytes / 1e6:.1f} MB on disk; one full scan: {ms(scan_wall[0])}"
    )
    out["rebuild_s"] = rebuild_wall[0]
    out["rebuild_cpu_s"] = rebuild_cpu[0]
    out["index_mb"] = index_bytes / 1e6

    # -- cold search in a new handle --
    cold = GitFileStore.open(repo)
    cold_wall, cold_cpu = sample(1, lambda: cold.sync.search("zeppelin", limit=100))
    print(f"cold search (new handle, loads signatures): {ms(cold_wall[0])} (CPU {ms(cold_cpu[0])})")
    out["cold_search_ms"] = cold_wall[0] * 1000

    # -- grep: indexed vs scan, alternating, answers checked --
    print(f"\ngrep, {samples} samples each, indexed vs scan in the same run (wall p50, CPU p50)")
    questions = [
        ("rare literal (1% of files)", "zeppelin", False, 100),
        ("unique literal", "note 4242 about", False, 100),
        ("regex with a required literal", r"ticket KX-\d+7\b", True, 100),
        ("literal in every file", "agent", False, 100),
    ]
    grep_rows = []
    for label, pattern, regex, limit in questions:
        indexed_wall: list[float] = []
        indexed_cpu: list[float] = []
        scanned_wall: list[float] = []
        scanned_cpu: list[float] = []
        for _ in range(samples):
            expected = scan_all(store, pattern, regex, limit)
            got = store.sync.search(pattern, regex=regex, limit=limit)
            assert got == expected, (label, got, expected)
            w, c = sample(1, lambda p=pattern, r=regex, lim=limit: store.sync.search(p, regex=r, limit=lim))
            indexed_wall += w
            indexed_cpu += c
            w, c = sample(1, lambda p=pattern, r=regex, lim=limit: scan_all(store, p, r, lim))
            scanned_wall += w
            scanned_cpu += c
        speedup = p50(scanned_wall) / p50(indexed_wall)
        matches = len(scan_all(store, pattern, regex, limit).matches)
        print(
            f"  {label:32} {matches:4} matches  indexed {ms(p50(indexed_wall))} (CPU {ms(p50(indexed_cpu))})  "
            f"scan {ms(p50(scanned_wall))} (CPU {ms(p50(scanned_cpu))})  = {speedup:.1f}x"
        )
        grep_rows.append(
            {
                "question": label,
                "pattern": pattern,
                "matches": matches,
                "indexed_ms": p50(indexed_wall) * 1000,
                "indexed_cpu_ms": p50(indexed_cpu) * 1000,
                "scan_ms": p50(scanned_wall) * 1000,
                "scan_cpu_ms": p50(scanned_cpu) * 1000,
                "speedup": speedup,
            }
        )
    out["grep"] = grep_rows
    rare = grep_rows[0]
    print(
        f"  target: rare literal >= 20x faster: {'met' if rare['speedup'] >= 20 else 'missed'} ({rare['speedup']:.1f}x)"
    )

    # -- catch-up after one write --
    counter = [0]
    paths = [p for p, _ in bulk.files(files)][:: max(1, files // 200)]

    def one_write() -> None:
        counter[0] += 1
        path = paths[counter[0] % len(paths)]
        current = store.sync.read(path)
        store.sync.write(path, current.text + f"zeppelin edit {counter[0]}\n", expected=current.version)

    write_wall, write_cpu = sample(samples, one_write)
    catch_wall, catch_cpu = sample(samples, lambda: store.sync.index.refresh(store.sync.head()), before=one_write)
    first_wall, first_cpu = sample(samples, lambda: store.sync.search("zeppelin", limit=100), before=one_write)
    final = store.sync.index_status()
    assert final.current and store.sync.search("zeppelin", limit=100) == scan_all(store, "zeppelin", False, 100)
    print(f"\ncatch-up after one write ({samples} samples, wall p50, CPU p50)")
    print(
        f"  index catch-up (one Whoosh commit)   {ms(p50(catch_wall))} (CPU {ms(p50(catch_cpu))}), "
        f"max {ms(max(catch_wall))}   target <= 20 ms: {'met' if p50(catch_wall) <= 0.020 else 'missed'}"
    )
    print(f"  first search after a write           {ms(p50(first_wall))} (CPU {ms(p50(first_cpu))})")
    print(f"  baseline: the write itself           {ms(p50(write_wall))} (CPU {ms(p50(write_cpu))})")
    print(f"  after {3 * samples} writes: {final.segments} segments, {final.deleted} deleted documents")
    out["catch_up_ms"] = p50(catch_wall) * 1000
    out["catch_up_cpu_ms"] = p50(catch_cpu) * 1000
    out["first_search_after_write_ms"] = p50(first_wall) * 1000
    out["write_ms"] = p50(write_wall) * 1000

    if postings:
        wall, cpu = postings_design(postings, work)
        print(
            f"\nrejected design, Whoosh trigram postings field: {postings} files indexed in {wall:.1f} s (CPU {cpu:.1f} s)"
        )
        out["postings_files"] = postings
        out["postings_s"] = wall
    return out


def fallback_ab(files: int, rounds: int, where: str, work: str) -> None:
    """A search with no index: files picked by ``git grep`` (on) against every file read (off), alternating.

    CPU of this thread and of git's children; the ops are the fallback's own
    (grep's candidates and their texts, ``find``'s ranking) with no index folder.
    """
    import random
    import resource

    from gitmem.index import fallback
    from gitmem.index.needles import literal_need

    repo_path = os.path.join(work, "mem.git")
    GitFileStore.init(repo_path)
    bulk.import_files(repo_path, notes(files))
    mount = GitFileStore.open(repo_path).sync.index
    repo, head = mount.repo, mount.repo.head()
    need = literal_need("zeppelin")
    assert need is not None
    asked = fallback._ask_git

    def grep() -> object:
        return [decode_stored(repo.blob(oid)) for _, oid in fallback.grep_candidates(repo, need, "", head)]

    ops: dict[str, Callable[[], object]] = {
        "grep, no index (rare literal)": grep,
        "find, no index": lambda: mount._rank_unindexed(head, ["zeppelin"], "", 10),
    }
    rng = random.Random(3)
    for op, call in ops.items():
        cpu: dict[bool, list[float]] = {False: [], True: []}
        answers: dict[bool, object] = {}
        for _ in range(rounds):
            order = [False, True]
            rng.shuffle(order)
            for off in order:
                fallback._ask_git = (lambda *_: None) if off else asked  # type: ignore[assignment]
                kids = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.thread_time()
                answers[off] = call()
                spent = time.thread_time() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[off].append(spent + after.ru_utime + after.ru_stime - kids.ru_utime - kids.ru_stime)
                fallback._ask_git = asked
        assert answers[False] == answers[True], op
        on, off_ = statistics.median(cpu[False]), statistics.median(cpu[True])
        print(
            f"| fallback: git grep | {op} | {where} | {files} | {on / off_:.2f}x ({on * 1e3:.2f} / "
            f"{off_ * 1e3:.2f}) | {statistics.fmean(cpu[False]) / statistics.fmean(cpu[True]):.2f}x | {rounds} |",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=21)
    parser.add_argument("--postings", type=int, default=0, help="also index this many files the rejected way")
    parser.add_argument("--json", help="save the summary here")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        choices=["fallback"],
        help="instead: git grep's pick of files without an index, on against off",
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000], help="files, with --variant")
    parser.add_argument("--dir", help="build the memories under this folder (another file system)")
    args = parser.parse_args()
    if args.variant:
        for size in args.sizes:
            work = tempfile.mkdtemp(prefix="gitmem-bench-index-", dir=args.dir)
            try:
                fallback_ab(size, args.samples, args.dir or "/tmp", work)
            finally:
                shutil.rmtree(work, ignore_errors=True)
        return 0
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    work = tempfile.mkdtemp(prefix="gitmem-bench-index-")
    try:
        out = run(args.files, args.samples, args.postings, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
