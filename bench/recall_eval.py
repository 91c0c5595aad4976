"""Retrieval metrics, the shipped data sets, and the A3S fixture conformance check.

Shared by ``bench/bench_recall.py`` and the recall tests. A *data set* is a list
of items (id, namespace, status, text, time, related ids) and of queries (text,
relevant ids, forbidden ids, category). A *system* is a function from a query to
a ranked list of ids. Metrics follow the usual definitions with binary relevance:

- recall@k (any): share of queries with at least one relevant id in the top k;
- recall@k (all): share of queries with every relevant id in the top k;
- MRR: mean of 1/rank of the first relevant id in the top k (0 when none);
- NDCG@k: DCG of the top k over the DCG of the ideal order;
- forbidden hits: how many forbidden ids were returned, over all queries;
- recall-block bytes: UTF-8 bytes of the block an agent would be shown
  (``- <text>`` per returned item, one per line).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gitmem.recall import RecallDoc, RecallIndex
from gitmem.recall.related import one_hop

DATA = Path(__file__).resolve().parent / "data"
A3S = DATA / "a3s"


@dataclass(frozen=True)
class Item:
    id: str
    text: str
    updated_at: float
    status: str = "active"
    namespace: str = "main"
    related_to: tuple[str, ...] = ()
    conflicts_with: tuple[str, ...] = ()


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    relevant: tuple[str, ...]
    forbidden: tuple[str, ...] = ()
    category: str = "direct"
    lang: str = "en"


@dataclass
class DataSet:
    name: str
    items: list[Item]
    queries: list[Query]
    namespace: str = "main"
    items_by_id: dict[str, Item] = field(init=False)

    def __post_init__(self) -> None:
        self.items_by_id = {i.id: i for i in self.items}

    def visible(self, item_id: str) -> bool:
        """What recall may show: active items of the queried namespace."""
        item = self.items_by_id.get(item_id)
        return item is not None and item.status == "active" and item.namespace == self.namespace

    def index(self, index: RecallIndex | None = None) -> RecallIndex:
        """Every item of the namespace in an index (statuses are filtered at query time, as stores do)."""
        index = index if index is not None else RecallIndex()
        for item in self.items:
            if item.namespace == self.namespace:
                index.upsert(RecallDoc(item.id, item.text, item.updated_at))
        return index


System = Callable[[Query], Sequence[str]]


@dataclass
class Scores:
    queries: int
    recall_any: float | None  # None: no query of the set has a relevant item (negatives only)
    recall_all: float | None
    mrr: float | None
    ndcg: float | None
    forbidden_hits: int
    block_bytes_mean: float
    block_bytes_max: int

    def row(self) -> dict[str, float | int | None]:
        def r(v: float | None) -> float | None:
            return None if v is None else round(v, 4)

        return {
            "queries": self.queries,
            "R@k any": r(self.recall_any),
            "R@k all": r(self.recall_all),
            "MRR": r(self.mrr),
            "NDCG@k": r(self.ndcg),
            "forbidden": self.forbidden_hits,
            "block B mean": round(self.block_bytes_mean, 1),
            "block B max": self.block_bytes_max,
        }


def block_bytes(ids: Iterable[str], data: DataSet) -> int:
    return sum(len(f"- {data.items_by_id[i].text}\n".encode()) for i in ids if i in data.items_by_id)


def score(data: DataSet, system: System, queries: Iterable[Query], k: int) -> Scores:
    qs = list(queries)
    any_hits = all_hits = 0
    rr: list[float] = []
    ndcg: list[float] = []
    forbidden = 0
    sizes: list[int] = []
    for q in qs:
        got = list(system(q))[:k]
        relevant = set(q.relevant)
        forbidden += sum(1 for i in got if i in q.forbidden or not data.visible(i))
        sizes.append(block_bytes(got, data))
        if not relevant:
            continue
        found = [i for i in got if i in relevant]
        any_hits += bool(found)
        all_hits += relevant <= set(got)
        first = next((rank for rank, i in enumerate(got, 1) if i in relevant), None)
        rr.append(1.0 / first if first else 0.0)
        dcg = sum(1.0 / math.log2(rank + 1) for rank, i in enumerate(got, 1) if i in relevant)
        ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(relevant), k) + 1))
        ndcg.append(dcg / ideal)
    graded = len(rr)
    return Scores(
        queries=len(qs),
        recall_any=any_hits / graded if graded else None,
        recall_all=all_hits / graded if graded else None,
        mrr=sum(rr) / graded if graded else None,
        ndcg=sum(ndcg) / graded if graded else None,
        forbidden_hits=forbidden,
        block_bytes_mean=statistics.fmean(sizes) if sizes else 0.0,
        block_bytes_max=max(sizes, default=0),
    )


# -- the data sets ---------------------------------------------------------------


def load_recall_v1() -> DataSet:
    """``gitmem-recall-v1``: written for this project (see bench/data/gitmem-recall-v1.md)."""
    raw = json.loads((DATA / "gitmem-recall-v1.json").read_text())
    items = [
        Item(
            i["id"],
            i["text"],
            float(i["updated_at"]),
            i.get("status", "active"),
            i.get("namespace", "main"),
            tuple(i.get("related_to", ())),
        )
        for i in raw["items"]
    ]
    queries = [
        Query(
            q["id"],
            q["query"],
            tuple(q.get("relevant", ())),
            tuple(q.get("forbidden", ())),
            q["category"],
            q.get("lang", "en"),
        )
        for q in raw["queries"]
    ]
    return DataSet("gitmem-recall-v1", items, queries)


def load_a3s_retrieval() -> tuple[DataSet, dict[str, object]]:
    """A3S ``durable-memory-retrieval-v1``: nodes in order, times all equal (ties fall to the id)."""
    raw = json.loads((A3S / "durable-memory-retrieval-v1.json").read_text())
    items = [
        Item(n["id"], n["content"], 0.0, n["status"], "main", tuple(n["related_to"]), tuple(n["conflicts_with"]))
        for n in raw["nodes"]
    ]
    queries = [Query(q["id"], q["query"], tuple(q["relevant_node_ids"]), (), q["category"]) for q in raw["queries"]]
    queries += [
        Query(q["id"], q["query"], (), tuple(q["forbidden_node_ids"]), "negative") for q in raw["negative_queries"]
    ]
    return DataSet("a3s-durable-memory-retrieval-v1", items, queries), raw


def load_a3s_multilingual() -> tuple[DataSet, dict[str, object]]:
    """A3S ``durable-memory-multilingual-v1``; the foreign node lives in another namespace."""
    raw = json.loads((A3S / "durable-memory-multilingual-v1.json").read_text())
    items = [Item(n["id"], n["content"], 0.0, n["status"]) for n in raw["nodes"]]
    foreign = raw["foreign_node"]
    items.append(Item(foreign["id"], foreign["content"], 0.0, foreign["status"], "foreign"))
    hidden = ("candidate-unverified-shortcut", foreign["id"])
    queries = [Query(q["id"], q["query"], (q["relevant_node_id"],), hidden, q["language"]) for q in raw["queries"]]
    queries += [Query(q["id"], q["query"], (), hidden, "negative") for q in raw["negative_queries"]]
    return DataSet("a3s-durable-memory-multilingual-v1", items, queries), raw


# -- the A3S policy ----------------------------------------------------------------


def a3s_system(data: DataSet, index: RecallIndex, policy: dict[str, object], *, related: bool) -> System:
    """The A3S durable recall policy over ``index``: active-only lexical, then optional one-hop reads."""
    limit = int(policy["max_results"])  # type: ignore[call-overload]
    floor = float(policy["min_lexical_score"])  # type: ignore[arg-type]
    reads = int(policy["max_related_lookups"]) if related else 0  # type: ignore[call-overload]

    def run(q: Query) -> list[str]:
        ids = [h.id for h in index.search(q.text, limit=limit, min_score=floor, accept=data.visible)]
        return one_hop(
            ids,
            lambda i: data.items_by_id[i].related_to,
            max_reads=reads,
            accept=data.visible,
            limit=limit,
        )

    return run


def a3s_conformance() -> dict[str, dict[str, float | int]]:
    """The locked A3S numbers as this port reproduces them (compare with each fixture's expectations)."""
    out: dict[str, dict[str, float | int]] = {}
    data, raw = load_a3s_retrieval()
    index = data.index()
    policy = raw["policy"]
    assert isinstance(policy, dict)
    graded = [q for q in data.queries if q.category != "negative"]
    negatives = [q for q in data.queries if q.category == "negative"]
    for name, related in (("lexical", False), ("relation", True)):
        system = a3s_system(data, index, policy, related=related)
        s = score(data, system, graded, 5)
        out[f"retrieval-v1 {name}"] = {
            "R@5": round(s.recall_any or 0.0, 4),
            "MRR": round(s.mrr or 0.0, 4),
            "forbidden": score(data, system, negatives, 5).forbidden_hits + s.forbidden_hits,
        }
    ml, raw_ml = load_a3s_multilingual()
    policy = raw_ml["policy"]
    assert isinstance(policy, dict)
    system = a3s_system(ml, ml.index(), policy, related=False)
    graded = [q for q in ml.queries if q.category != "negative"]
    s = score(ml, system, graded, 3)
    neg = score(ml, system, [q for q in ml.queries if q.category == "negative"], 3)
    out["multilingual-v1 lexical"] = {
        "R@3": round(s.recall_any or 0.0, 4),
        "MRR": round(s.mrr or 0.0, 4),
        "forbidden": s.forbidden_hits + neg.forbidden_hits,
        "max nodes per query": max(len(system(q)) for q in graded),
    }
    return out
