"""Benchmark the framework adapters against the frameworks' own stores, in the same run.

- **LangGraph**: ``GitMemStore`` (a git file mount) against LangGraph's
  ``InMemoryStore`` and its ``SqliteStore`` (a file database), each first filled with
  ``--items`` items spread over 20 user namespaces. Then ``put`` (an update of an
  existing item: for gitmem a read and one commit), ``get``, ``search`` with a
  filter and ``search`` with a query are timed, one store after another per sample
  in a shuffled order, so load spikes hit all three. A query search is compared
  like for like, every store ranking by the query: gitmem with BM25 through its
  recall engine, LangGraph's stores by vector distance over an embedding index of
  the item text (LangGraph's stores ignore a query without one). The embedder is
  a hashed bag of words (``hashed_words``, 64 dimensions, microseconds a text),
  so the time is the store's own. ``SqliteStore`` needs SQLite extension loading
  for its vector index (``sqlite-vec``), which this Python's ``sqlite3`` may lack:
  the ``pysqlite3`` module is used for it then, and without either the query row
  of ``SqliteStore`` is its unranked listing, marked so. The ranked ``SqliteStore``
  is a second database, so its puts (which embed) do not slow the ``put`` row.
- **Agents SDK**: ``GitMemSession`` against ``SQLiteSession`` (a file database):
  ``add_items`` of one item to a session of ``--turns`` items, ``get_items``
  (all of them, and the last 10), ``pop_item``.

Ratios are gitmem's p50 over the framework store's p50, measured in this run.

Usage::

    .venv/bin/python bench/bench_frameworks.py            # 2000 items, 300 samples
    .venv/bin/python bench/bench_frameworks.py --quick    # 500 items, 100 samples
    .venv/bin/python bench/bench_frameworks.py --workdir /mnt/ext4/fw   # the stores on that file system
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import math
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORDS = (
    "tea coffee morning evening likes dislikes allergic peanuts meeting project deadline garden "
    "python rust review weekly travel train flight hotel budget music jazz piano running"
).split()


DIMS = 64


def hashed_words(texts: list[str]) -> list[list[float]]:
    """A bag of words hashed into :data:`DIMS` buckets, unit length: an embedder that costs next to nothing."""
    out: list[list[float]] = []
    for t in texts:
        vector = [0.0] * DIMS
        for word in t.lower().split():
            vector[int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little") % DIMS] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        out.append([x / norm for x in vector])
    return out


def ranked_sqlite(path: Path) -> Any | None:
    """A ``SqliteStore`` with a vector index of the item text, or ``None`` when no SQLite here loads extensions."""
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    module: Any = sqlite3
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        try:
            import pysqlite3.dbapi2 as module  # type: ignore[import-not-found, no-redef]
        except ImportError:
            return None
    conn = module.connect(str(path), check_same_thread=False, isolation_level=None)  # as from_conn_string
    store = SqliteStore(conn, index={"dims": DIMS, "embed": hashed_words, "fields": ["text"]})
    store.setup()
    return store


def text(rng: random.Random, n: int = 8) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def p50(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def report(title: str, results: dict[str, dict[str, list[float]]], ours: str) -> None:
    print(f"\n{title}")
    names = list(results)
    ops = list(results[ours])
    print(
        f"  {'op':<16}"
        + "".join(f"{n + ' p50 ms':>22}" for n in names)
        + "".join(f"{'gitmem/' + n:>22}" for n in names if n != ours)
    )
    for op in ops:
        row = f"  {op:<16}" + "".join(f"{p50(results[n][op]):>22.3f}" for n in names)
        row += "".join(f"{p50(results[ours][op]) / p50(results[n][op]):>21.2f}x" for n in names if n != ours)
        print(row)


def bench_langgraph(folder: Path, items: int, samples: int, rng: random.Random) -> None:
    from langgraph.store.base import PutOp
    from langgraph.store.memory import InMemoryStore
    from langgraph.store.sqlite import SqliteStore

    from gitmem.adapters.langgraph_store import GitMemStore

    sqlite_cm = SqliteStore.from_conn_string(str(folder / "store.sqlite"))
    sqlite = sqlite_cm.__enter__()
    sqlite.setup()
    stores: dict[str, Any] = {
        "gitmem": GitMemStore.open(folder / "root"),
        "InMemoryStore": InMemoryStore(index={"dims": DIMS, "embed": hashed_words, "fields": ["text"]}),
        "SqliteStore": sqlite,
    }
    ranking = {"gitmem": stores["gitmem"], "InMemoryStore": stores["InMemoryStore"]}
    ranked = ranked_sqlite(folder / "ranked.sqlite")
    ranking["SqliteStore"] = ranked if ranked is not None else sqlite
    query_op = "search query" if ranked is not None else "search query*"
    data = [(("users", f"u{i % 20}"), f"k{i}", {"text": text(rng), "n": i % 7}) for i in range(items)]
    fill = {**stores, **({"SqliteStore (vectors)": ranked} if ranked is not None else {})}
    for name, store in fill.items():
        start = time.perf_counter()
        if name == "gitmem":  # one commit per put, as an agent makes them
            for ns, key, value in data:
                store.put(ns, key, value)
        else:
            store.batch([PutOp(ns, key, value) for ns, key, value in data])
        print(f"  filled {name} with {items} items in {time.perf_counter() - start:.1f} s")
    results: dict[str, dict[str, list[float]]] = {
        n: {"put": [], "get": [], "search filter": [], query_op: []} for n in stores
    }
    for _ in range(samples):
        ns, key, _value = rng.choice(data)
        value = {"text": text(rng), "n": rng.randrange(7)}
        query = " ".join(rng.sample(WORDS, 2))
        order = list(stores.items())
        rng.shuffle(order)
        for name, store in order:
            results[name]["put"].append(timed(lambda s=store, n=ns, k=key, v=value: s.put(n, k, v)))
            results[name]["get"].append(timed(lambda s=store, n=ns, k=key: s.get(n, k)))
            results[name]["search filter"].append(timed(lambda s=store, n=ns: s.search(n, filter={"n": 3}, limit=10)))
            if ranked is not None and name == "SqliteStore":  # its twin with a vector index: the same update
                ranked.put(ns, key, value)
            results[name][query_op].append(
                timed(lambda s=ranking[name], q=query: s.search(("users",), query=q, limit=10))
            )
    report(f"LangGraph store, {items} items, {samples} samples", results, "gitmem")
    if ranked is None:
        print("  * SqliteStore cannot load sqlite-vec here (no extension loading, no pysqlite3): its query row is unranked")
    else:
        ranked.conn.close()
    sqlite_cm.__exit__(None, None, None)


def bench_agents(folder: Path, turns: int, samples: int) -> None:
    from agents import SQLiteSession

    from gitmem.adapters.openai_session import GitMemSession

    sessions: dict[str, Any] = {
        "gitmem": GitMemSession.open("bench", folder / "root"),
        "SQLiteSession": SQLiteSession("bench", str(folder / "session.sqlite")),
    }

    async def run() -> dict[str, dict[str, list[float]]]:
        out: dict[str, dict[str, list[float]]] = {
            n: {"add_items": [], "get_items": [], "get_items(10)": [], "pop_item": []} for n in sessions
        }
        for session in sessions.values():
            await session.add_items([{"role": "user", "content": f"turn {i}"} for i in range(turns)])
        for i in range(samples):
            for name, session in sessions.items():
                item = {"role": "assistant", "content": f"answer {i} " * 20}
                start = time.perf_counter()
                await session.add_items([item])
                out[name]["add_items"].append(time.perf_counter() - start)
                start = time.perf_counter()
                await session.get_items()
                out[name]["get_items"].append(time.perf_counter() - start)
                start = time.perf_counter()
                await session.get_items(limit=10)
                out[name]["get_items(10)"].append(time.perf_counter() - start)
                start = time.perf_counter()
                await session.pop_item()
                out[name]["pop_item"].append(time.perf_counter() - start)
        return out

    report(f"Agents SDK session, {turns} items, {samples} samples", asyncio.run(run()), "gitmem")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="500 items, 50 turns, 100 samples")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", help="a folder on the file system to measure (default: the temp folder)")
    parser.add_argument("--only", choices=("langgraph", "agents"), help="one of the two benchmarks")
    args = parser.parse_args()
    if args.quick:
        args.items, args.turns, args.samples = 500, 50, 100
    rng = random.Random(args.seed)
    if args.workdir:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        (Path(tmp) / "lg").mkdir()
        (Path(tmp) / "ag").mkdir()
        if args.only != "agents":
            bench_langgraph(Path(tmp) / "lg", args.items, args.samples, rng)
        if args.only != "langgraph":
            bench_agents(Path(tmp) / "ag", args.turns, args.samples)


if __name__ == "__main__":
    main()
