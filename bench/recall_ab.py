"""Same-run A/B of the recall engine's speed-only mechanisms (``bench_records.py --variant NAME``).

Each mechanism is switched off from here, by putting the plain way in place of the
one function or constant that holds it (nothing in gitmem reads a switch), and
each call is timed with it on and off alternately, in random order per round, on
one record memory of ``size`` records (a git record mount under ``--dir``):

- ``prune``: BM25 pruned (Fagin's threshold over impact groups) against every
  posting scored (``bm25.MAX_PRUNED_TOKENS = -1``); op: ``RecordStore.search``
  (BM25, the record store's default ranking), index warm.
- ``partial``: ``ordering.take``'s partial sort of BM25's scored documents against
  sorting them all; op: search by BM25, a question and a run's recall input cut to
  2000 characters (more tokens than BM25 prunes: every posting scored).
- ``bitmaps``: coverage counting query tokens on slot bitmaps against a
  ``Counter`` over the postings; op: search by coverage.
- ``tokens``: the snapshot's tokenised form (:mod:`gitmem.recall.postings`,
  ``RecallIndex.restore``, postings decoded per token when first needed) against a
  snapshot of texts only, tokenised on load; op: the first search of a new process.
- ``norms``: BM25's length norm kept per length within a search (``bm25._Norms``)
  against computed at every posting; op: search by BM25, a question and a 2000-char input.
- ``stem``: the light stemmer's ``lru_cache`` (conversation profile) against the plain
  function; ops: the first search of a new process without a snapshot (the index built
  from git, every token stemmed; the cache emptied before each call, as in a new
  process) and a warm search.
- ``workers``: recall threads that stay for the next recall against a new
  thread per recall (``_Workers.run`` replaced); op: a run's recall over the mount
  (``RecordMemoryCapability.recall``), CPU of the whole process.

CPU ms (``thread_time``; process time for ``workers``), p50 and mean; on / off
below 1 means the mechanism pays.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from gitmem.recall import bm25, convo, ordering, stemming
from gitmem.recall.index import RecallIndex
from gitmem.recall.values import RecallHit
from gitmem.records import RecordStore
from gitmem.tools import recall_blocks
from gitmem.tools.records import RecordMemoryCapability, RecordMount

VARIANTS = ("prune", "partial", "bitmaps", "workers", "tokens", "norms", "stem")


class _PlainNorms:
    """BM25's length norm computed at every posting (``bm25._Norms`` without its memory)."""

    def __init__(self, avg: float, params: bm25.Params = bm25.DEFAULT) -> None:
        self.avg = avg
        self.k1, self.b = params

    def __getitem__(self, length: int) -> float:
        return self.k1 * (1.0 - self.b + self.b * length / self.avg)


def _take_sorted(ranked: list[Any], limit: int, accept: Callable[[str], bool] | None) -> list[RecallHit]:
    out: list[RecallHit] = []
    for (neg, neg_at, _), doc_id in sorted(ranked):
        if accept is None or accept(doc_id):
            out.append(RecallHit(doc_id, -neg, -neg_at))
            if len(out) == limit:
                break
    return out


_RESTORE = RecallIndex.restore


def _fresh_thread(job: recall_blocks.Job) -> None:
    threading.Thread(target=lambda: job()(), name="gitmem-recall", daemon=True).start()


@contextlib.contextmanager
def switched_off(name: str, off: bool, index: RecallIndex | None = None) -> Iterator[None]:
    """``name`` switched off (the plain way in place) for the block when ``off``."""
    if not off:
        yield
        return
    saved: list[tuple[object, str, object]] = []

    def put(owner: object, attr: str, value: object) -> None:
        saved.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, value)

    if name == "prune":
        put(bm25, "MAX_PRUNED_TOKENS", -1)
    elif name == "partial":
        put(ordering, "take", _take_sorted)
    elif name == "bitmaps":
        assert index is not None
        put(index, "_bitmaps_from", 1 << 62)
    elif name == "tokens":
        put(RecallIndex, "export_tokens", lambda self: {"profile": "none"})
        put(RecallIndex, "restore", lambda self, docs, tokens: False)
    elif name == "workers":
        put(recall_blocks._WORKERS, "run", _fresh_thread)
    elif name == "norms":
        put(bm25, "_Norms", _PlainNorms)
    elif name == "stem":
        put(convo, "stem", stemming.stem.__wrapped__)
    try:
        yield
    finally:
        for owner, attr, value in reversed(saved):
            setattr(owner, attr, value)


def _cpu(fn: Callable[[], object], whole_process: bool = False) -> float:
    clock = time.process_time if whole_process else time.thread_time
    start = clock()
    fn()
    return clock() - start


def run(
    name: str, records: RecordStore, coverage: RecordStore, questions: list[str], rounds: int, rng: random.Random
) -> dict[str, dict[bool, list[float]]]:
    """``op -> {off: CPU seconds per call}`` for mechanism ``name``, on and off alternately."""
    out: dict[str, dict[bool, list[float]]] = {}

    def sample(op: str, call: Callable[[], object], index: RecallIndex | None = None, whole: bool = False) -> None:
        order = [False, True]
        rng.shuffle(order)
        for off in order:
            with switched_off(name, off, index):
                out.setdefault(op, {False: [], True: []})[off].append(_cpu(call, whole))

    cov_index = coverage._recall_index().index
    loop = asyncio.new_event_loop()
    capability = RecordMemoryCapability([RecordMount("facts", records)])
    snapdirs = tempfile.mkdtemp(prefix="snap-", dir=os.path.dirname(str(records.store.path)))
    try:
        if name == "tokens":  # one snapshot with the tokenised form, one with the texts only
            for off in (False, True):
                with switched_off(name, off):
                    RecordStore(records.store, records.namespace, snapshot_dir=f"{snapdirs}/{off}").search("warm up")
        cold_rounds = max(rounds // 20, 5)
        if name == "stem":
            talk = RecordStore(records.store, records.namespace, snapshot_dir=f"{snapdirs}/warm", profile="conversation")
            talk.search("warm up")
        for i in range(rounds):
            q = questions[i % len(questions)]
            if name in ("prune", "partial", "norms"):
                sample("search (bm25)", lambda q=q: records.search(q, limit=5))
            if name == "bitmaps":
                sample("search (coverage)", lambda q=q: coverage.search(q, limit=5), cov_index)
            if name in ("partial", "norms"):  # a run's recall input, cut to 2000 characters: every posting scored
                long = " ".join(questions[(i + j) % len(questions)] for j in range(60))[:2000]
                sample("search (bm25), 2000-char input", lambda long=long: records.search(long, limit=5))
            if name == "tokens":

                def resumed(q: str = q) -> object:
                    off = RecallIndex.restore is not _RESTORE
                    store = RecordStore(records.store, records.namespace, snapshot_dir=f"{snapdirs}/{off}")
                    return store.search(q, limit=5)

                sample("first search of a new process, snapshot", resumed)
            if name == "stem":
                sample("search (bm25), warm, conversation profile", lambda q=q: talk.search(q, limit=5))
                if i < cold_rounds:

                    def cold(q: str = q) -> object:
                        shutil.rmtree(f"{snapdirs}/cold", ignore_errors=True)
                        stemming.forget_stems()
                        store = RecordStore(
                            records.store, records.namespace, snapshot_dir=f"{snapdirs}/cold", profile="conversation"
                        )
                        return store.search(q, limit=5)

                    sample("first search of a new process, no snapshot, conversation profile", cold)
            if name == "workers":
                sample("recall, 1 mount", lambda q=q: loop.run_until_complete(capability.recall(q)), whole=True)
    finally:
        loop.close()
    return out


def report(name: str, size: int, where: str, out: dict[str, dict[bool, list[float]]]) -> list[str]:
    lines = []
    for op, series in out.items():
        on, off = series[False], series[True]
        p50 = statistics.median(on) / statistics.median(off)
        mean = statistics.fmean(on) / statistics.fmean(off)
        lines.append(
            f"| {name} | {op} | {where} | {size} | {p50:.2f}x ({statistics.median(on) * 1e3:.3f} / "
            f"{statistics.median(off) * 1e3:.3f}) | {mean:.2f}x | {len(on)} |"
        )
    return lines
