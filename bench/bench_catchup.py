"""Benchmark the caches that follow a store through ``changes()``: recall, the session catalogue, LangGraph items.

(and durable memory's semantic refresh: see :func:`measure_semantic`)

Each of the three (:class:`gitmem.recall.StoreRecall`, :class:`gitmem.session.catalogue.Catalogue`,
:class:`gitmem.adapters.langgraph_items.ItemCatalogue`) is filled from a git store of
``--items`` files of its own format, in one commit, then timed:

- **rebuild**: a new cache's first refresh (one walk of the tree, every file parsed), median of 5;
- **resume**: a new cache's first refresh from the snapshot the rebuild saved (recall and
  session only: the LangGraph catalogue keeps none), median of 5;
- **catch-up**: one file written (not timed), then ``refresh()`` timed, ``--samples`` times:
  what every list, search or recall after a write pays first. Wall and CPU (this thread's).

With ``--against CHECKOUT`` the same measurement runs in child processes, alternating
between this checkout and that one (``--rounds`` each), and the medians and their ratio
(this / that) are printed: a same-run before/after of a change to the mechanism.

Usage::

    .venv/bin/python bench/bench_catchup.py                         # 2000 items, 200 catch-ups
    .venv/bin/python bench/bench_catchup.py --against ../main --rounds 4 --dir /mnt/ext4/x
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROWS = ("rebuild", "resume", "catch-up CPU", "catch-up wall")


def measure(items: int, samples: int, workdir: str | None) -> dict[str, dict[str, float]]:
    from gitmem.adapters.langgraph_items import ItemCatalogue, StoredItem, item_path, render
    from gitmem.gitstore import SyncGitFileStore
    from gitmem.model import Edit, FileText
    from gitmem.recall import RecallDoc, StoreRecall
    from gitmem.session.catalogue import Catalogue
    from gitmem.session.items import encode_item, make_item, path_for_id

    rng = random.Random(5)
    words = [f"w{i}" for i in range(3000)]
    now = datetime(2025, 1, 1, tzinfo=UTC)

    def text() -> str:
        return " ".join(rng.choice(words) for _ in range(12))

    def to_doc(f: FileText) -> RecallDoc | None:
        body = json.loads(f.text)
        return RecallDoc(body["id"], body["text"], body["t"])

    def record(n: int) -> tuple[str, str]:
        return f"items/{n % 97:02x}/{n}.json", json.dumps({"id": f"r{n}", "text": text(), "t": float(n)})

    def session_item(n: int) -> tuple[str, str]:
        item = make_item(text(), now=1_700_000_000.0 + n)
        return path_for_id(item.id), encode_item(item)

    def langgraph_item(n: int) -> tuple[str, str]:
        ns, key = ("users", f"u{n % 20}"), f"k{n}"
        return item_path(ns, key), render(StoredItem(ns, key, {"text": text()}, now, now))

    kinds: list[tuple[str, Callable[[int], tuple[str, str]], Callable[..., object]]] = [
        ("recall", record, lambda s, snap: StoreRecall(s, to_doc, prefix="items", snapshot=snap)),
        ("session", session_item, lambda s, snap: Catalogue(s, snapshot=snap)),
        ("langgraph", langgraph_item, lambda s, snap: ItemCatalogue(s)),
    ]
    out: dict[str, dict[str, float]] = {}
    for name, make, cache_of in kinds:
        base = tempfile.mkdtemp(prefix=f"bench-catchup-{name}-", dir=workdir)
        store = SyncGitFileStore.init(f"{base}/m.git")
        store.apply([Edit(p, t, None) for p, t in (make(n) for n in range(items))], op="fill")
        snap = None if name == "langgraph" else f"{base}/snapshot.json"
        rebuild, resume = [], []
        for _ in range(5):
            Path(snap or f"{base}/none").unlink(missing_ok=True)
            cache = cache_of(store, snap)
            started = time.thread_time()
            cache.refresh()  # type: ignore[attr-defined]
            rebuild.append(time.thread_time() - started)
            if snap is not None:
                again = cache_of(store, snap)
                started = time.thread_time()
                again.refresh()  # type: ignore[attr-defined]
                resume.append(time.thread_time() - started)
                # (``resumed`` was the session catalogue's name for it before the caches shared one mechanism)
                assert getattr(again, "resumed_from_snapshot", getattr(again, "resumed", False))
        wall, cpu = [], []
        for k in range(samples):
            path, body = make(items + k)
            store.write(path, body, expected=None)
            w, c = time.perf_counter(), time.thread_time()
            cache.refresh()  # type: ignore[attr-defined]
            cpu.append(time.thread_time() - c)
            wall.append(time.perf_counter() - w)
        out[name] = {
            "rebuild": statistics.median(rebuild) * 1e3,
            "resume": statistics.median(resume) * 1e3 if resume else 0.0,
            "catch-up CPU": statistics.median(cpu) * 1e3,
            "catch-up wall": statistics.median(wall) * 1e3,
        }
    out["durable semantic"] = measure_semantic(items, samples, workdir)
    return out


def measure_semantic(items: int, samples: int, workdir: str | None) -> dict[str, float]:
    """Durable memory's semantic refresh over ``items`` active nodes, the vectors already published.

    rebuild: a new :class:`SemanticRecall`'s first refresh (every node file read, nothing
    to embed); catch-up: one node revised (not timed), then a refresh (one vector embedded).
    """
    from gitmem.durable import DurableRepository
    from gitmem.durable.namespace import Namespace
    from gitmem.durable.semantic import EmbeddingIdentity, SemanticRecall
    from gitmem.recall.vectors import SqliteVectorIndex

    class Embedder:  # one fixed unit vector: the figures are the refresh's, not a model's
        identity = EmbeddingIdentity("bench", "constant", "v1", 2)

        def embed(self, texts: list[str]) -> list[tuple[float, float]]:
            return [(1.0, 0.0)] * len(texts)

        embed_queries = embed

    ns = Namespace("bench", "agent", "repo")
    evidence = [{"uri": "bench://e", "digest": "sha256:0", "kind": "manual"}]
    base = tempfile.mkdtemp(prefix="bench-catchup-semantic-", dir=workdir)
    repo = DurableRepository.open(Path(base), "sem", create=True)
    for at in range(0, items, 128):
        ops = [
            {
                "op": "create",
                "node": {
                    "id": f"n{i}",
                    "kind": "semantic",
                    "content": f"node {i}",
                    "status": "active",
                    "evidence": evidence,
                },
            }
            for i in range(at, min(at + 128, items))
        ]
        repo.apply({"namespace": ns.as_dict(), "idempotency_key": f"fill/{at}", "operations": ops})

    def opened() -> DurableRepository:
        index = SqliteVectorIndex(f"{base}/vectors.sqlite3")
        return DurableRepository.open(Path(base), "sem", semantic_recall=SemanticRecall(Embedder(), index=index))

    opened().refresh_semantic_recall(ns)  # every vector published (not timed)
    rebuild = []
    for _ in range(5):
        fresh = opened()
        started = time.thread_time()
        fresh.refresh_semantic_recall(ns)
        rebuild.append(time.thread_time() - started)
    wall, cpu = [], []
    for k in range(samples):
        revise = {
            "op": "revise",
            "node_id": f"n{k % items}",
            "expected_revision": 1 + k // items,
            "content": f"revised {k}",
            "evidence": [{**evidence[0], "uri": f"bench://e{k}"}],
        }
        fresh.apply({"namespace": ns.as_dict(), "idempotency_key": f"revise/{k}", "operations": [revise]})
        w, c = time.perf_counter(), time.thread_time()
        fresh.refresh_semantic_recall(ns)
        cpu.append(time.thread_time() - c)
        wall.append(time.perf_counter() - w)
    return {
        "rebuild": statistics.median(rebuild) * 1e3,
        "catch-up CPU": statistics.median(cpu) * 1e3,
        "catch-up wall": statistics.median(wall) * 1e3,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--dir", help="where the stores are made (a file system to measure)")
    parser.add_argument("--against", help="another checkout of gitmem to compare with, alternating")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)  # the checkout a child measures
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, args.child)
        import gitmem

        assert gitmem.__file__ is not None and gitmem.__file__.startswith(args.child), gitmem.__file__
        print(json.dumps(measure(args.items, args.samples, args.dir)))
        return
    here = str(Path(__file__).resolve().parent.parent)
    checkouts = [here] + ([str(Path(args.against).resolve())] if args.against else [])
    runs: dict[str, list[dict[str, dict[str, float]]]] = {c: [] for c in checkouts}
    for _ in range(args.rounds if args.against else 1):
        for checkout in checkouts:
            command = [sys.executable, __file__, "--child", checkout, "--items", str(args.items)]
            command += ["--samples", str(args.samples)] + (["--dir", args.dir] if args.dir else [])
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            runs[checkout].append(json.loads(done.stdout))
    print(f"{args.items} items, {args.samples} catch-ups, rounds {len(runs[here])}; ms, medians of the rounds' medians")
    header = "| cache | measure | this checkout |" + (" other | this / other |" if args.against else "")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for cache in ("recall", "session", "langgraph", "durable semantic"):
        for row in ROWS if cache in ("recall", "session") else [r for r in ROWS if r != "resume"]:
            mine = statistics.median(r[cache][row] for r in runs[here])
            line = f"| {cache} | {row} | {mine:.3f} |"
            if args.against:
                theirs = statistics.median(r[cache][row] for r in runs[checkouts[1]])
                line += f" {theirs:.3f} | {mine / theirs:.2f}x |"
            print(line)


if __name__ == "__main__":
    main()
