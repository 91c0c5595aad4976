"""Active-only recall over one namespace, through the recall engine.

The policy is A3S's: the ``word-cjk-bigram`` coverage score (the share of the
query's tokens a node holds), zero scores dropped, a minimum score, at most
1-100 results, ties newest first then by id; then optionally a bounded number
of one-hop ``related_to`` reads (0-100, default 0) that add active neighbours
after the hits.

Only active nodes are indexed (``to_doc`` answers ``None`` for every other
status), and the index catches up with the store's head (through its change
cursor) at the start of every query, so a lexical hit is the node as it is at
that head: the node values come from the same catch-up, without a second read.

The optional semantic branch ranks by vectors: either a shared vector index
refreshed from Active-only snapshots (:class:`~gitmem.durable.semantic.SemanticRecall`,
whose hits carry the node revision and content digest each vector was made
from), or an in-process :class:`~gitmem.recall.semantic.SemanticBranch` per
namespace (e.g. an ``EmbeddingBranch``). Every semantic hit is re-read and must
be active, at the exact revision and with the content digest its vector was made
from (for an in-process branch: the ones the lexical index holds). Lexical and verified semantic ranks are fused by reciprocal-rank
fusion (``1/(60 + rank)``). Any failure of that branch - the provider raising or
answering ``None``, one hit failing verification - drops the branch, and the
answer is the lexical one, with ``fallback`` saying why.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from gitmem import derived
from gitmem.durable.namespace import Namespace
from gitmem.durable.node import Node
from gitmem.durable.nodefile import decode_node, node_path, nodes_prefix
from gitmem.errors import MemoryStoreError
from gitmem.model import FileText
from gitmem.recall import PROFILE, RecallDoc, StoreRecall, SyncSource, rrf
from gitmem.recall.convo import PROFILE as CONVERSATION_PROFILE
from gitmem.recall.index import MAX_LIMIT, Profile, check_min_score
from gitmem.recall.related import MAX_RELATED_READS, one_hop
from gitmem.recall.semantic import SemanticBranch
from gitmem.recall.vectors import VectorHit

SNAPSHOT_KEY: Final = "durable-active/1"
"""What the recall snapshot's documents are (active nodes' content); a new meaning needs a new key."""
Via = Literal["lexical", "fused", "related"]


@dataclass(frozen=True, slots=True)
class RecallPolicy:
    """How much to recall: 1-100 results, a minimum coverage, 0-100 one-hop related reads."""

    max_results: int = 5
    min_score: float = 0.0
    related_lookups: int = 0
    semantic: bool = False

    def __post_init__(self) -> None:
        n = self.max_results
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_LIMIT:
            raise MemoryStoreError("invalid_query", f"max_results must be a whole number from 1 to {MAX_LIMIT}")
        score = check_min_score(self.min_score)
        if not 0.0 <= score <= 1.0:
            raise MemoryStoreError("invalid_query", "min_score is a coverage between 0 and 1")
        r = self.related_lookups
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r <= MAX_RELATED_READS:
            raise MemoryStoreError(
                "invalid_query", f"related_lookups must be a whole number from 0 to {MAX_RELATED_READS}"
            )


@dataclass(frozen=True, slots=True)
class Recalled:
    """One active node at the revision that was read; ``via`` says how it was found."""

    node: Node
    score: float
    via: Via


@dataclass(frozen=True, slots=True)
class RecallAnswer:
    hits: tuple[Recalled, ...]
    profile: str = PROFILE
    fused: bool = False
    fallback: str | None = None  # why the semantic branch was dropped, when it was asked for


class VectorSearch(Protocol):
    """A shared vector index's side of recall (:class:`~gitmem.durable.semantic.SemanticRecall`)."""

    def search(self, namespace: Namespace, query: str, depth: int) -> Sequence[VectorHit]: ...


class NamespaceRecall:
    """The active nodes of one namespace kept in a recall index, caught up on every search."""

    def __init__(
        self,
        store: SyncSource,
        namespace: Namespace,
        semantic: SemanticBranch | None = None,
        vectors: VectorSearch | None = None,
        profile: Profile = "word-cjk-bigram",
    ) -> None:
        # ``profile``: the lexical profile, A3S's by default; "conversation" (gitmem.recall.convo)
        # is offered for nodes that are turns of a conversation. min_score stays a coverage.
        self.profile = profile
        self.store = store
        self.namespace = namespace
        self.vectors = vectors
        # id -> (revision, digest) of the active revision the index holds, and that node
        self.indexed: dict[str, tuple[int, str]] = {}
        self.active: dict[str, Node] = {}
        prefix = nodes_prefix(namespace)
        # A new process resumes from the snapshot the last one saved (keyed by the commit it
        # reflects) and catches up by tree diff. Not with an in-process semantic branch: its
        # vectors and the revisions they were made from live in this process only.
        snapshot = _snapshot_file(store, prefix) if semantic is None else None
        self.recall = StoreRecall(
            store,
            self._to_doc,
            prefix=prefix,
            semantic=semantic,
            snapshot=snapshot,
            snapshot_key=SNAPSHOT_KEY if profile == "word-cjk-bigram" else f"{SNAPSHOT_KEY}+{profile}",
            stamp=derived.stamp_of(store) if snapshot is not None else None,
            profile=profile,
            on_forget=self._forget,
        )

    def _forget(self) -> None:
        """Before a rebuild (a purge or forget may have erased what they hold): keep no node."""
        self.indexed.clear()
        self.active.clear()

    def _to_doc(self, file: FileText) -> RecallDoc | None:
        node = decode_node(file.text, file.path, self.namespace)
        if node.status != "active":
            self.indexed.pop(node.id, None)
            self.active.pop(node.id, None)
            return None
        self.indexed[node.id] = (node.revision, node.digest)
        self.active[node.id] = node
        return RecallDoc(node.id, node.content, node.updated_at.timestamp())

    def _reader(self) -> Callable[[str], Node | None]:
        seen: dict[str, Node | None] = {}

        def read(node_id: str) -> Node | None:
            if node_id not in seen:
                path = node_path(self.namespace, node_id)
                try:
                    seen[node_id] = decode_node(self.store.read(path).text, path, self.namespace)
                except MemoryStoreError as exc:
                    if exc.code not in ("not_found", "invalid_file"):  # a damaged node is passed over
                        raise
                    seen[node_id] = None
            return seen[node_id]

        return read

    def _current(self, node_id: str) -> Node | None:
        """The active node the index holds under ``node_id`` (``None``: not active at the head).

        A document resumed from a snapshot has no node value yet: the node is read
        once, and kept only if it is still active at the revision the index holds.
        """
        doc = self.recall.index.get(node_id)
        if doc is None:
            return None
        node = self.active.get(node_id)
        if node is None:
            path = node_path(self.namespace, node_id)
            try:
                node = decode_node(self.store.read(path).text, path, self.namespace)
            except MemoryStoreError as exc:
                if exc.code not in ("not_found", "invalid_file"):  # damaged since indexed: the next refresh skips it
                    raise
                return None
            if node.status != "active" or node.content != doc.text:
                return None  # changed since the index caught up: the next search sees it
            self.active[node_id] = node
            self.indexed[node_id] = (node.revision, node.digest)
        return node

    def search(self, query: str, policy: RecallPolicy) -> RecallAnswer:
        """Active nodes for ``query`` under ``policy`` (see the module docstring)."""
        # The semantic ranking may wait seconds on an embedding provider: it is asked first, not
        # under the cache's lock, which every other recall and write of the namespace takes. Its
        # ids are verified in the block, against the index as caught up there.
        semantic = self._semantic_ranking(query, policy) if policy.semantic else None
        with self.recall.caught_up():  # one whole index throughout, never a rebuild half-way
            return self._search(query, policy, semantic)

    def _search(self, query: str, policy: RecallPolicy, semantic: _Semantic | None) -> RecallAnswer:
        lexical = self.recall.index.search(query, limit=policy.max_results, min_score=policy.min_score)
        scores: dict[str, float] = {h.id: h.score for h in lexical}
        ranked = [h.id for h in lexical]
        fused, fallback = False, None
        if semantic is not None:
            ranking, fallback = self._fuse(query, policy, self._reader(), semantic)
            if ranking is not None:
                scores, fused = ranking, True
                ranked = list(ranking)
        nodes = {i: n for i in ranked if (n := self._current(i)) is not None}
        hits = [Recalled(nodes[i], scores[i], "fused" if fused else "lexical") for i in ranked if i in nodes]
        if policy.related_lookups:

            def related_of(node_id: str) -> tuple[str, ...]:
                node = self._current(node_id)
                return () if node is None else node.related("related_to")

            seeds = [h.node.id for h in hits]
            grown = one_hop(
                seeds,
                related_of,
                max_reads=policy.related_lookups,
                accept=lambda i: self._current(i) is not None,
                limit=policy.max_results,
            )
            hits += [Recalled(self.active[i], 0.0, "related") for i in grown[len(seeds) :]]
        profile = PROFILE if self.profile == "word-cjk-bigram" else CONVERSATION_PROFILE
        return RecallAnswer(tuple(hits[: policy.max_results]), profile, fused=fused, fallback=fallback)

    def _semantic_ranking(self, query: str, policy: RecallPolicy) -> _Semantic:
        """The semantic branch's ids for ``query``, best first, and the revisions their vectors were made from.

        ``None`` for the revisions: the ones the lexical index holds (an in-process
        branch, told of every document the index catches up to). ``None`` for the
        ids, with the reason: the branch cannot answer.
        """
        branch = self.recall.index.semantic
        if branch is None and self.vectors is None:
            return _Semantic(None, None, "no semantic branch is configured for this namespace")
        depth = _depth(policy)
        if self.vectors is None:
            self.recall.refresh()  # an in-process branch learns each document as the index catches up to it
        try:
            if self.vectors is not None:
                hits = self.vectors.search(self.namespace, query, depth)
                return _Semantic([h.node_id for h in hits], {h.node_id: (h.revision, h.digest) for h in hits})
            assert branch is not None
            ids = branch.rank(query, depth, None, self.recall.index)
        except Exception as exc:  # any provider or index failure keeps the lexical answer
            return _Semantic(None, None, f"semantic branch failed: {type(exc).__name__}: {exc}")
        if ids is None:
            return _Semantic(None, None, "semantic branch could not answer (provider failure)")
        return _Semantic(ids, None)

    def _fuse(
        self, query: str, policy: RecallPolicy, read: Callable[[str], Node | None], ranked: _Semantic
    ) -> tuple[dict[str, float] | None, str | None]:
        """Verified lexical and semantic ids fused by RRF (best first, with scores), or ``None`` and why not."""
        semantic = ranked.ids
        if semantic is None:
            return None, ranked.fallback
        made_from = self.indexed if ranked.made_from is None else ranked.made_from
        lexical = [h.id for h in self.recall.index.search(query, limit=_depth(policy), min_score=policy.min_score)]
        for node_id in semantic:
            # The node the index caught up to at this query's head (read once per change, kept);
            # only a hit the index does not hold as active is read here.
            node = self._current(node_id) or read(node_id)
            if node is None or node.status != "active":
                return None, f"semantic hit {node_id!r} is not an active node"
            if made_from.get(node_id) != (node.revision, node.digest):
                return (
                    None,
                    f"semantic hit {node_id!r} is not at the revision and content digest its vector was made from",
                )
        fused = rrf([lexical, semantic])
        index = self.recall.index

        def newest(node_id: str) -> float:
            doc = index.get(node_id)
            return doc.updated_at if doc is not None else 0.0

        order = sorted(fused, key=lambda i: (-fused[i], -newest(i), i))[: policy.max_results]
        return {i: fused[i] for i in order}, None


@dataclass(frozen=True, slots=True)
class _Semantic:
    """What the semantic branch answered for a query, asked before the index is held (see :meth:`NamespaceRecall.search`)."""

    ids: list[str] | None  # best first; ``None``: the branch could not answer, for ``fallback``
    made_from: dict[str, tuple[int, str]] | None  # id -> (revision, digest); ``None``: what the index holds
    fallback: str | None = None


def _depth(policy: RecallPolicy) -> int:
    """How many ids each branch ranks for fusion."""
    return min(max(policy.max_results * 4, 20), MAX_LIMIT)


def _snapshot_file(store: object, prefix: str) -> str | None:
    """The namespace's recall snapshot in a git store's ``gitmem/recall/`` (deleted by purge and forget); none in memory."""
    path = getattr(store, "path", None)
    if not isinstance(path, str) or not os.path.isdir(os.path.join(path, "gitmem")):
        return None
    digest = hashlib.sha256(prefix.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return os.path.join(path, "gitmem", "recall", f"durable-{digest}.json")
