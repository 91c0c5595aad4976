"""What a record add and a session remember cost on top of one commit, step by step.

Each row adds one thing to the row above it, all in one process on the same store,
called in a random order each round (so the machine's load falls on every row
alike); CPU time of the calling thread, p50 in ms. For whichever gitmem is first
on ``sys.path``, so two trees compare by running it with each::

    .venv/bin/python bench/ab/memlayers.py [TREE] [--records 2000] [--items 10000] [--rounds 400]

Records (a namespace of ``--records`` records in the store's own layout):

1. a plain text file written to a fresh ``scratch/`` folder (the benchmark's context row);
2. the same text into the namespace's fan-out folders (``alice/<2 hex>/``): the cost of
   the folder a record lives in, paid by the store;
3. the record file's text (frontmatter) instead of plain text;
4. through ``apply`` with the record's summary and trailers;
5. plus a second file, as the ``last-id`` marker is;
6. plus reading the record back (``RecordStore`` confirms every write so);
7. ``RecordStore.add`` itself.

Session memory (``--items`` items): a plain write to ``scratch/``, the item file to its
fingerprint path through ``apply``, and ``SessionMemory.remember``.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", default=str(Path(__file__).resolve().parents[2]))
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args()
    sys.path.insert(0, args.tree)
    from bench.bench_records import Corpus, seed_git
    from bench.bench_session import make_items, new_git_memory, sentence
    from gitmem import Root
    from gitmem.model import ANY, Edit
    from gitmem.records import RecordStore
    from gitmem.records.rules import IdGenerator, RecordFile, record_path, render_record
    from gitmem.session import hygiene
    from gitmem.session.items import encode_item, make_item, path_for_fingerprint

    rng = random.Random(3)
    tmp = Path(tempfile.mkdtemp(prefix="gitmem-memlayers-"))
    try:
        corpus = Corpus(rng)
        root = Root(tmp / "root")
        seed_git(root, "facts", "alice", args.records, corpus)
        store = root.mount("facts", kind="record").sync
        records = RecordStore(store, "alice")
        ids = IdGenerator()
        memory = new_git_memory(
            tmp, "session", make_items(args.items, rng, now=time.time(), age_days=1, importance=0.6)
        )
        len(memory)  # a warm catalogue, as in a running session
        items = memory.store

        def record() -> tuple[str, str, str]:
            rid, now = ids.next(), datetime.now(UTC)
            return record_path("alice", rid), render_record(RecordFile(rid, corpus.record(), now, now)), rid

        def apply(path: str, text: str, rid: str, marker: bool) -> object:
            edits = [Edit(path, text, None)]
            if marker:  # not the real marker, which the RecordStore handle above expects at its version
                edits.append(Edit("alice/other-id", rid + "\n", ANY))
            trailers = (("Gitmem-Record-Id", rid), ("Gitmem-Record-Namespace", "alice"))
            return store.apply(edits, op="record-add", summary=f"record add {rid}", trailers=trailers)

        def item(n: int) -> tuple[str, str, str]:
            made = make_item(sentence(rng, 2_000_000 + n) + " fresh", now=time.time())
            fp = hygiene.fingerprint(made.content)
            assert fp is not None
            return path_for_fingerprint(fp), encode_item(made), made.id

        def read_back(r: tuple[str, str, str]) -> object:
            apply(*r, marker=True)
            return store.read(r[0])

        def remember_item(i: tuple[str, str, str]) -> object:
            edits = [Edit(i[0], i[1], None)]
            return items.apply(
                edits, op="session-remember", summary=f"remember {i[2]}", trailers=(("Gitmem-Item", i[2]),)
            )

        # Each row: name -> (n -> the call to time), its input made before the clock starts.
        rows: dict[str, Callable[[int], Callable[[], object]]] = {
            "R1 plain text, fresh scratch/ folder": lambda n: partial(
                store.write, f"scratch/{n % 251:03d}/{n}.md", corpus.record(), expected=None
            ),
            "R2 plain text, alice/<fan-out>/": lambda n: partial(
                store.write, record()[0], corpus.record(), expected=None
            ),
            "R3 record text (frontmatter)": lambda n: partial(store.write, *record()[:2], expected=None),
            "R4 through apply, record trailers": lambda n: partial(apply, *record(), marker=False),
            "R5 plus a second small file": lambda n: partial(apply, *record(), marker=True),
            "R6 plus reading the record back": lambda n: partial(read_back, record()),
            "R7 RecordStore.add": lambda n: partial(records.add, corpus.record()),
            "S1 plain text, fresh scratch/ folder": lambda n: partial(
                items.write, f"scratch/{n % 251:03d}/{n}.json", sentence(rng, 3_000_000 + n), expected=None
            ),
            "S2 item file via apply, items/<fan-out>/": lambda n: partial(remember_item, item(n)),
            "S3 SessionMemory.remember": lambda n: partial(memory.remember, sentence(rng, 1_000_000 + n) + " fresh"),
        }
        cpu: dict[str, list[float]] = {name: [] for name in rows}
        for n in range(args.rounds):
            calls = [(name, make(n)) for name, make in rows.items()]
            rng.shuffle(calls)
            for name, call in calls:
                start = time.thread_time()
                call()
                cpu[name].append(time.thread_time() - start)
        print(f"gitmem from {args.tree}; {args.records} records, {args.items} items, {args.rounds} rounds")
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
        print("| step | CPU p50 (ms) | / R1 or S1 |\n|---|---|---|")
        for name, samples in cpu.items():
            base = cpu[
                "R1 plain text, fresh scratch/ folder" if name[0] == "R" else "S1 plain text, fresh scratch/ folder"
            ]
            print(f"| {name} | {p50(samples):.3f} | {p50(samples) / p50(base):.2f}x |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def p50(samples: list[float]) -> float:
    return sorted(samples)[len(samples) // 2] * 1000


if __name__ == "__main__":
    main()
