"""Benchmark durable memory's semantic half: refresh, query and a new process's first recall.

Three indexes in the same run, the embedded SQLite default as the baseline of
every ratio:

- ``sqlite``: :class:`gitmem.recall.vectors.SqliteVectorIndex` (the default);
- ``lance``: :class:`gitmem.adapters.lance_vectors.LanceVectorIndex` in its
  embedded mode (a folder);
- ``in-process``: the embedding branch of :mod:`gitmem.recall.embed` (a matrix
  per process, no revision or refresh contract), for comparison.

Sections:

- **refresh of N active nodes**: embed and publish a namespace of N active nodes
  (``refresh_semantic_recall``); then a refresh with nothing new (the snapshot
  alone); then one after a 128-node change set. For the in-process branch:
  noting the N texts and draining its queue.
- **query p50**: the bare index query at N vectors (and at ``--large`` vectors,
  written straight into the index), and a whole durable ``recall`` with the
  semantic branch (embed the query, search, re-read and verify every hit, fuse)
  at N nodes.
- **a new process's first semantic recall**: spawn Python, open the repository,
  answer one fused recall; the wall time from spawn, and inside the child the
  time from import to answer. The in-process branch must embed every node first.

The embedder is a cheap deterministic one (sha256-seeded unit vectors, 256
dimensions), so no model is needed and the figures are the index's, not a
model's. Usage::

    .venv/bin/python bench/bench_semantic.py              # 10k nodes
    .venv/bin/python bench/bench_semantic.py --quick      # 2k nodes, fewer samples
    .venv/bin/python bench/bench_semantic.py --large 100000   # also bare queries at 100k vectors
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from gitmem.durable import DurableRepository, RecallPolicy
from gitmem.durable.namespace import Namespace
from gitmem.durable.semantic import EmbeddingIdentity, SemanticRecall
from gitmem.recall.vectors import SqliteVectorIndex, VectorIndex, VectorRecord

NS = Namespace("bench", "agent", "repo")
DIM = 256
WORDS = (
    "deploy release rollback canary database migration schema index cache queue worker retry timeout "
    "token budget review approval branch merge conflict lint format test suite coverage benchmark latency "
    "throughput memory recall vector embed query rank fusion tenant principal scope namespace evidence"
).split()
MANUAL = {"uri": "bench://review", "digest": "sha256:0", "kind": "manual"}
FUSED = RecallPolicy(max_results=5, min_score=0.0, related_lookups=0, semantic=True)
KINDS = ("sqlite", "lance", "in-process")


class HashEmbedder:
    """A unit vector per text, seeded by its sha256: deterministic, ~10 us a text, no model.

    It speaks both embedder protocols: durable's (``identity``) and the recall branch's (``name``).
    """

    identity = EmbeddingIdentity("bench-hash", "sha256-unit", "v1", DIM)
    name = "bench-hash-sha256-unit-v1"

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            out[i] = np.random.default_rng(seed).standard_normal(DIM)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)


def sentence(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + f" #{rng.randrange(10**9)}."


def creates(prefix: str, count: int, rng: random.Random) -> dict[str, Any]:
    ops = []
    for i in range(count):
        node: dict[str, Any] = {"id": f"{prefix}-{i}", "kind": "semantic", "content": sentence(rng), "status": "active"}
        node["evidence"] = [{"uri": f"turn://{prefix}/{i}", "digest": "sha256:1", "kind": "session_turn"}, MANUAL]
        ops.append({"op": "create", "node": node})
    return {"namespace": NS.as_dict(), "idempotency_key": f"create/{prefix}", "operations": ops}


def revisions(repo: DurableRepository, count: int, rng: random.Random) -> dict[str, Any]:
    ops = [
        {
            "op": "revise",
            "node_id": node.id,
            "expected_revision": node.revision,
            "content": sentence(rng),
            "evidence": [{"uri": f"bench://revise/{node.id}/{node.revision}", "digest": "sha256:2", "kind": "manual"}],
        }
        for node in list(repo.nodes(NS, ["active"]))[:count]
    ]
    return {"namespace": NS.as_dict(), "idempotency_key": f"revise/{rng.random()}", "operations": ops}


def p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def make_index(kind: str, folder: Path) -> VectorIndex:
    if kind == "sqlite":
        return SqliteVectorIndex(folder / "vectors.sqlite3")
    from gitmem.adapters.lance_vectors import LanceVectorIndex

    return LanceVectorIndex(folder / "lancedb")


def in_process_branch(repo: DurableRepository) -> tuple[Any, Any]:
    """The recall engine's embedding branch over the namespace's active nodes, drained."""
    from gitmem.recall import RecallDoc, RecallIndex
    from gitmem.recall.embed import EmbeddingBranch

    branch = EmbeddingBranch(HashEmbedder(), background=False, batch=256)
    docs = RecallIndex(semantic=branch)
    for node in repo.nodes(NS, ["active"]):
        docs.upsert(RecallDoc(node.id, node.content, node.updated_at.timestamp()))
    branch.drain()
    return branch, docs


def bench_refresh(root: Path, nodes: int, rng: random.Random) -> tuple[dict[str, dict[str, float]], DurableRepository]:
    repo = DurableRepository.open(root, "sem", create=True)
    for start in range(0, nodes, 128):
        repo.apply(creates(f"n{start}", min(128, nodes - start), rng))
    out: dict[str, dict[str, float]] = {}
    texts = [n.content for n in repo.nodes(NS, ["active"])]
    embed_only = timed(lambda: HashEmbedder().embed(texts))
    for kind in ("sqlite", "lance"):
        semantic = SemanticRecall(HashEmbedder(), index=make_index(kind, root / f"idx-{kind}"))
        r = DurableRepository.open(root, "sem", semantic_recall=semantic)
        full = timed(lambda r=r: r.refresh_semantic_recall(NS, consistency="index_revision_cas"))
        noop = timed(lambda r=r: r.refresh_semantic_recall(NS, consistency="index_revision_cas"))
        out[kind] = {"full": full, "unchanged": noop}
    out["in-process"] = {"full": timed(lambda: in_process_branch(repo)), "unchanged": float("nan")}
    repo.apply(revisions(repo, 128, rng))
    for kind in ("sqlite", "lance"):
        semantic = SemanticRecall(HashEmbedder(), index=make_index(kind, root / f"idx-{kind}"))
        r = DurableRepository.open(root, "sem", semantic_recall=semantic)
        out[kind]["128 revised"] = timed(lambda r=r: r.refresh_semantic_recall(NS, consistency="index_revision_cas"))
    out["in-process"]["128 revised"] = float("nan")
    out["embedding alone"] = {"full": embed_only}
    return out, repo


def bench_recall(root: Path, repo: DurableRepository, queries: int, rng: random.Random) -> dict[str, float]:
    """p50 of a whole fused durable recall at the namespace's size, each semantic source."""
    asked = [n.content for n in rng.sample(list(repo.nodes(NS, ["active"])), queries)]
    repos: dict[str, DurableRepository] = {}
    for kind in ("sqlite", "lance"):
        semantic = SemanticRecall(HashEmbedder(), index=make_index(kind, root / f"idx-{kind}"))
        repos[kind] = DurableRepository.open(root, "sem", semantic_recall=semantic)
    branch, _ = in_process_branch(repo)
    repos["in-process"] = DurableRepository.open(root, "sem", semantic=lambda ns: branch)
    for r in repos.values():
        answer = r.recall(NS, asked[0], FUSED)
        assert answer.fallback is None and answer.hits, answer.fallback
    samples: dict[str, list[float]] = {k: [] for k in repos}
    for q in asked:
        for kind, r in repos.items():
            samples[kind].append(timed(lambda r=r, q=q: r.recall(NS, q, FUSED)))
    return {k: p50(v) for k, v in samples.items()}


def bench_bare_queries(root: Path, size: int, queries: int, seed: int) -> dict[str, float]:
    """p50 of the bare index query at ``size`` vectors written straight into each index."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((size, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    picks = rng.integers(0, size, queries)
    out: dict[str, float] = {}
    for kind in ("sqlite", "lance"):
        index = make_index(kind, root / f"bare-{kind}-{size}")
        for at in range(0, size, 10_000):
            rows = [VectorRecord(f"v{i}", 1, "d", vectors[i]) for i in range(at, min(size, at + 10_000))]
            index.mutate("p", generation="g", commit=str(at), upsert=rows)
        index.query("p", "g", vectors[0], limit=10)  # load the partition
        out[kind] = p50([timed(lambda i=i, ix=index: ix.query("p", "g", vectors[i], limit=10)) for i in picks])
        index.close()
    from gitmem.recall import RecallDoc, RecallIndex
    from gitmem.recall.embed import EmbeddingBranch

    class Declared(HashEmbedder):
        def embed(self, texts: list[str]) -> np.ndarray:
            return vectors[[int(t[1:]) for t in texts]]

    branch = EmbeddingBranch(Declared(), background=False, batch=4096)
    docs = RecallIndex(semantic=branch)
    for i in range(size):
        docs.upsert(RecallDoc(f"v{i}", f"v{i}", 0.0))
    branch.drain()
    out["in-process"] = p50([timed(lambda i=i: branch.rank(f"v{i}", 10, None, docs)) for i in picks])
    return out


CHILD = """
import sys, time
start = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from bench.bench_semantic import FUSED, NS, HashEmbedder, in_process_branch, make_index
from pathlib import Path
from gitmem.durable import DurableRepository
from gitmem.durable.semantic import SemanticRecall
root, kind, query = Path(sys.argv[2]), sys.argv[3], sys.argv[4]
if kind == "in-process":
    repo = DurableRepository.open(root, "sem")
    branch, _ = in_process_branch(repo)
    repo = DurableRepository.open(root, "sem", semantic=lambda ns: branch)
else:
    semantic = SemanticRecall(HashEmbedder(), index=make_index(kind, root / f"idx-{kind}"))
    repo = DurableRepository.open(root, "sem", semantic_recall=semantic)
answer = repo.recall(NS, query, FUSED)
assert answer.fallback is None and answer.hits, answer.fallback
print(time.perf_counter() - start)
"""


def bench_first_recall(root: Path, repo: DurableRepository, rounds: int) -> dict[str, dict[str, float]]:
    query = next(iter(repo.nodes(NS, ["active"]))).content
    here = str(Path(__file__).resolve().parent.parent)
    out: dict[str, dict[str, list[float]]] = {k: {"wall": [], "child": []} for k in KINDS}
    for _ in range(rounds):
        for kind in KINDS:
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", CHILD, here, str(root), kind, query], capture_output=True, text=True, check=True
            )
            out[kind]["wall"].append(time.perf_counter() - start)
            out[kind]["child"].append(float(done.stdout.strip().splitlines()[-1]))
    return {k: {m: p50(v) for m, v in d.items()} for k, d in out.items()}


def ratio(value: float, base: float) -> str:
    return "-" if not (value == value and base) else f"{value / base:.2f}x"


def variant_cache(sizes: list[int], rounds: int) -> None:
    """The embedding branch's vectors kept by content hash against none kept, on a full resync.

    A recall index with the bundled WordLlama model (``background=False``), ``n``
    notes indexed and embedded; then, alternately, the index cleared and every
    note put back and embedded again (what a store's index does when its history
    was rewritten), with the branch's cache on, and off (a dict that keeps
    nothing). Process CPU, p50.
    """
    from gitmem.recall import RecallDoc, RecallIndex
    from gitmem.recall.embed import EmbeddingBranch, WordLlamaEmbedder

    class KeepsNothing(dict[str, Any]):
        def __setitem__(self, key: str, value: Any) -> None:
            pass

    rng = random.Random(5)
    model = WordLlamaEmbedder()
    print("| mechanism | op | notes | CPU p50 on / off (ms) | calls |\n|---|---|---|---|---|")
    for n in sizes:
        docs = [RecallDoc(f"d{i}", sentence(rng, 20), float(i)) for i in range(n)]
        branch = EmbeddingBranch(model, background=False)
        index = RecallIndex(semantic=branch)
        index.upsert_many(docs)
        branch.drain()
        kept = branch._cache
        got: dict[bool, list[float]] = {True: [], False: []}
        for i in range(rounds):
            for on in (True, False) if i % 2 == 0 else (False, True):
                branch._cache = kept if on else KeepsNothing()
                start = time.process_time()
                index.clear()  # a full resync: every note put back and embedded
                index.upsert_many(docs)
                index.rebuilt()  # as a store's rebuild ends: vectors not taken back are dropped
                branch.drain()
                got[on].append(time.process_time() - start)
        branch._cache = kept
        on, off = statistics.median(got[True]), statistics.median(got[False])
        print(f"| embedding cache | full resync | {n} | {on / off:.2f}x ({on * 1e3:.1f} / {off * 1e3:.1f}) | {rounds} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2k nodes, fewer samples")
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--large", type=int, default=0, metavar="N", help="also bare queries at N vectors (100000)")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--variant", choices=["cache"], help="the embedding cache on and off instead (WordLlama)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000], help="notes, with --variant")
    parser.add_argument("--rounds", type=int, default=10, help="resyncs each way, with --variant")
    args = parser.parse_args()
    if args.variant:
        variant_cache(args.sizes, args.rounds)
        return
    nodes = args.nodes or (2000 if args.quick else 10_000)
    queries, rounds = (50, 2) if args.quick else (200, 3)
    rng = random.Random(11)
    root = Path(tempfile.mkdtemp(prefix="gitmem-bench-semantic-"))
    results: dict[str, Any] = {"nodes": nodes}
    try:
        refresh, repo = bench_refresh(root, nodes, rng)
        results["refresh s"] = refresh
        results[f"bare query p50 ms at {nodes}"] = bench_bare_queries(root, nodes, queries, 1)
        if args.large:
            results[f"bare query p50 ms at {args.large}"] = bench_bare_queries(root, args.large, queries, 2)
        results[f"durable recall p50 ms at {nodes}"] = bench_recall(root, repo, queries, rng)
        results["first recall in a new process ms"] = bench_first_recall(root, repo, rounds)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"semantic bench: {nodes} active nodes, {DIM} dimensions, ratios against sqlite (the embedded default)")
    for section, values in results.items():
        if section == "nodes":
            continue
        print(f"\n{section}")
        if section == "refresh s":
            print(f"  embedding alone (hash embedder): {values['embedding alone']['full']:.3f} s")
            for kind in KINDS:
                cells = "  ".join(
                    f"{m} {values[kind][m]:8.3f} ({ratio(values[kind][m], values['sqlite'][m])})"
                    for m in ("full", "unchanged", "128 revised")
                )
                print(f"  {kind:<11} {cells}")
        elif section.startswith("first recall"):
            for kind in KINDS:
                v, b = values[kind], values["sqlite"]
                print(
                    f"  {kind:<11} wall {v['wall']:8.1f} ({ratio(v['wall'], b['wall'])})"
                    f"  in child {v['child']:8.1f} ({ratio(v['child'], b['child'])})"
                )
        else:
            for kind in KINDS:
                print(f"  {kind:<11} {values[kind]:8.3f} ({ratio(values[kind], values['sqlite'])})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
