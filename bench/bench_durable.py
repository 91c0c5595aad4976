"""Benchmark durable memory: change sets as commits, and active-only recall.

Three questions, each with its baseline measured in the same run:

- **128-operation change set**: p50 of applying 128 operations as one commit
  (128 creates; then 128 activations of those candidates), against the same
  change sets applied to the in-memory batch store (the cost of the rules and
  node files without git), and against the target of 100 ms.
- **1-operation change set vs a one-file write**: p50 of a change set creating
  one node, against ``SyncGitFileStore.write`` of a file of the same size in a
  plain file mount of the same root (alternated, random order), wall and CPU.
  Target: <= 3x.
- **recall over 10k active nodes**: p50 of ``DurableRepository.recall`` (catch
  up with the head, rank, build the answer) against the recall engine's bare
  ``RecallIndex.search`` over the same 10k documents. Target: <= 2 ms.

Usage::

    .venv/bin/python bench/bench_durable.py            # full run
    .venv/bin/python bench/bench_durable.py --quick    # fewer samples and 2k nodes
    .venv/bin/python bench/bench_durable.py --only changesets   # one section

Wall time and, for change sets, the calling thread's CPU time are reported (git's
work runs on that thread): on a loaded machine the CPU time is the steadier figure.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gitmem.durable import DurableRepository, RecallPolicy
from gitmem.durable.namespace import Namespace
from gitmem.recall import RecallDoc, RecallIndex
from gitmem.root import Root

NS = Namespace("bench", "agent", "repo")
WORDS = (
    "deploy release rollback canary database migration schema index cache queue worker retry timeout "
    "token budget review approval branch merge conflict lint format test suite coverage benchmark latency "
    "throughput memory recall vector embed query rank fusion tenant principal scope namespace evidence "
    "manual verification candidate active superseded tombstoned relation graph node revision commit tree blob"
).split()
MANUAL = {"uri": "bench://review", "digest": "sha256:0", "kind": "manual"}


def sentence(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000


CPU: list[float] = []  # the calling thread's CPU time of every timed call, in order


def timed(fn: Callable[[], object]) -> float:
    """Wall time of ``fn()``; its CPU time (this thread's: pygit2 runs here) goes to ``CPU``.

    On a loaded machine wall time includes waiting for a core; CPU time mostly does not.
    """
    start, cpu = time.perf_counter(), time.thread_time()
    fn()
    CPU.append(time.thread_time() - cpu)
    return time.perf_counter() - start


def creates(prefix: str, count: int, rng: random.Random, *, active: bool = False) -> dict[str, Any]:
    ops = []
    for i in range(count):
        node: dict[str, Any] = {"id": f"{prefix}-{i}", "kind": "semantic", "content": sentence(rng)}
        node["evidence"] = [{"uri": f"turn://{prefix}/{i}", "digest": "sha256:1", "kind": "session_turn"}]
        if active:
            node["status"] = "active"
            node["evidence"].append(MANUAL)
        ops.append({"op": "create", "node": node})
    return {"namespace": NS.as_dict(), "idempotency_key": f"create/{prefix}", "operations": ops}


def activations(prefix: str, count: int) -> dict[str, Any]:
    ops = [
        {"op": "activate", "node_id": f"{prefix}-{i}", "expected_revision": 1, "evidence": [MANUAL]}
        for i in range(count)
    ]
    return {"namespace": NS.as_dict(), "idempotency_key": f"activate/{prefix}", "operations": ops}


def memory_repository() -> DurableRepository:
    """The same repository over the in-memory store: the rules and node files without git."""
    from gitmem.fileformat import FileFormat
    from gitmem.memstore import InMemoryFileStore

    return DurableRepository(InMemoryFileStore(FileFormat(max_file_bytes=1 << 20, max_frontmatter_bytes=1 << 20)))  # type: ignore[arg-type]


def bench_change_sets(root: Path, rounds: int, rng: random.Random) -> dict[str, float]:
    git = DurableRepository.open(root, "cs", create=True)
    mem = memory_repository()
    out: dict[str, list[float]] = {"git create": [], "git activate": [], "mem create": [], "mem activate": []}
    cpu: dict[str, list[float]] = {k: [] for k in out}
    for r in range(rounds):
        for name, repo in (("git", git), ("mem", mem)):
            made, activated = creates(f"r{r}", 128, rng), activations(f"r{r}", 128)
            out[f"{name} create"].append(timed(lambda repo=repo, c=made: repo.apply(c)))
            cpu[f"{name} create"].append(CPU[-1])
            out[f"{name} activate"].append(timed(lambda repo=repo, c=activated: repo.apply(c)))
            cpu[f"{name} activate"].append(CPU[-1])
    return (
        {f"{k} p50": p50(v) for k, v in out.items()}
        | {f"{k} p95": p95(v) for k, v in out.items()}
        | {f"{k} cpu p50": p50(v) for k, v in cpu.items()}
    )


def bench_one_op(root: Path, samples: int, rng: random.Random) -> dict[str, float]:
    repo = DurableRepository.open(root, "one", create=True)
    files = Root(root).mount("files", create=True)
    store = getattr(files, "sync", files)
    durable: list[float] = []
    plain: list[float] = []
    durable_cpu: list[float] = []
    plain_cpu: list[float] = []
    for i in range(samples):
        change = creates(f"one{i}", 1, rng)
        text = change["operations"][0]["node"]["content"]
        pad = "x" * 600  # about the frontmatter a node file carries
        order = [0, 1]
        rng.shuffle(order)
        for which in order:
            if which == 0:
                durable.append(timed(lambda change=change: repo.apply(change)))
                durable_cpu.append(CPU[-1])
            else:
                plain.append(
                    timed(
                        lambda i=i, body=f"{pad}\n{text}\n": store.write(f"notes/{i % 97}/n{i}.md", body, expected=None)
                    )
                )
                plain_cpu.append(CPU[-1])
    return {
        "1-op change set p50": p50(durable),
        "one-file write p50": p50(plain),
        "ratio": p50(durable) / p50(plain),
        "1-op change set cpu p50": p50(durable_cpu),
        "one-file write cpu p50": p50(plain_cpu),
        "cpu ratio": p50(durable_cpu) / p50(plain_cpu),
    }


def bench_recall(root: Path, nodes: int, queries: int, rng: random.Random) -> dict[str, float]:
    repo = DurableRepository.open(root, "recall", create=True)
    for start in range(0, nodes, 128):
        repo.apply(creates(f"n{start}", min(128, nodes - start), rng, active=True))
    docs = RecallIndex()
    for node in repo.nodes(NS, ["active"]):
        docs.upsert(RecallDoc(node.id, node.content, node.updated_at.timestamp()))
    policy = RecallPolicy(max_results=5, min_score=0.3)
    repo.recall(NS, "warm up the index", policy)  # the first call builds the index from the store
    asked = [" ".join(rng.sample(WORDS, 3)) for _ in range(queries)]
    ours: list[float] = []
    bare: list[float] = []
    hits = 0
    for q in asked:
        ours.append(timed(lambda q=q: repo.recall(NS, q, policy)))
        bare.append(timed(lambda q=q: docs.search(q, limit=5, min_score=0.3)))
        hits += len(repo.recall(NS, q, policy).hits)
    return {
        "nodes": nodes,
        "recall p50": p50(ours),
        "recall p95": p95(ours),
        "bare index p50": p50(bare),
        "ratio": p50(ours) / p50(bare),
        "mean hits": hits / len(asked),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--only", choices=["changesets", "one", "recall"], help="Run one section only.")
    args = parser.parse_args()
    rng = random.Random(7)
    rounds, samples, nodes, queries = (5, 60, 2000, 200) if args.quick else (15, 200, 10_000, 1000)
    root = Path(tempfile.mkdtemp(prefix="gitmem-bench-durable-"))
    gc.disable()
    try:
        sections: dict[str, tuple[str, Callable[[], dict[str, float]]]] = {
            "changesets": ("change sets (128 ops)", lambda: bench_change_sets(root, rounds, rng)),
            "one": ("1-op change set vs one-file write", lambda: bench_one_op(root, samples, rng)),
            "recall": ("recall", lambda: bench_recall(root, nodes, queries, rng)),
        }
        results = {title: run() for key, (title, run) in sections.items() if args.only in (None, key)}
    finally:
        gc.enable()
        shutil.rmtree(root, ignore_errors=True)
    for section, values in results.items():
        print(f"\n{section}")
        for key, value in values.items():
            print(f"  {key:<28} {value:10.3f}")
    print("\ntargets")
    cs = results.get("change sets (128 ops)")
    if cs is not None:
        worst = max(cs["git create p50"], cs["git activate p50"])
        print(
            f"  128-op change set p50 <= 100 ms: create {cs['git create p50']:.1f} ms, activate "
            f"{cs['git activate p50']:.1f} ms (CPU {cs['git create cpu p50']:.1f} / {cs['git activate cpu p50']:.1f} ms)"
            f" -> {'met' if worst <= 100 else 'MISSED'}"
        )
    one = results.get("1-op change set vs one-file write")
    if one is not None:
        print(
            f"  1-op change set <= 3x a one-file write: {one['ratio']:.2f}x (CPU {one['cpu ratio']:.2f}x)"
            f" -> {'met' if one['ratio'] <= 3 else 'MISSED'}"
        )
    rec = results.get("recall")
    if rec is not None:
        print(
            f"  recall p50 over {int(rec['nodes'])} active nodes <= 2 ms: {rec['recall p50']:.3f} ms"
            f" -> {'met' if rec['recall p50'] <= 2 else 'MISSED'}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
