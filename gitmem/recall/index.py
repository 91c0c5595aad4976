"""An in-memory inverted index over recall documents, with three rankings.

- ``coverage``: the A3S lexical score, the share of the query's tokens a document
  holds; ties newest first, then by id. Exact and explainable, and what the
  durable-memory policy's minimum score is stated in.
- ``bm25``: Okapi BM25 over the same tokens (with their repeats), which prefers
  rare tokens and shorter documents.
- ``fused``: reciprocal-rank fusion (``1/(60 + rank)``) of the coverage ranking
  with a semantic ranking when an embedder is attached and working; otherwise the
  coverage ranking alone, scored the same way, and the fallback is reported.
  Under the ``conversation`` profile (:mod:`gitmem.recall.convo`), ``fused`` is
  BM25 with the semantic branch added lexical-led (:mod:`gitmem.recall.fusion`).

The index is derived data: it is never the source of truth, and the property
tests check it against a full scan of the same documents (and, under the
``conversation`` profile, against an index rebuilt from the documents it holds).
The values it takes and gives, and the checks of them, are in
:mod:`gitmem.recall.values` (importable from here too).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitmem.recall import bm25, convo, fusion, ordering, postings
from gitmem.recall.fusion import RRF_K, rrf
from gitmem.recall.postings import counted
from gitmem.recall.tokens import PROFILE as TOKEN_PROFILE
from gitmem.recall.tokens import token_list
from gitmem.recall.values import (
    MAX_LIMIT,
    PROFILES,
    RANKINGS,
    Profile,
    Ranking,
    RecallDoc,
    RecallHit,
    check_doc,
    check_min_score,
    check_query,
    order_key,
)

if TYPE_CHECKING:
    from gitmem.recall.semantic import SemanticBranch

__all__ = [  # the values live in gitmem.recall.values (rrf in .fusion); these names stay importable from here
    "MAX_LIMIT", "PROFILES", "RANKINGS", "RRF_K", "Profile", "Ranking", "RecallDoc", "RecallHit", "RecallIndex",
    "check_doc", "check_min_score", "check_query", "order_key", "rrf",
]  # fmt: skip
# Coverage counts a query's tokens per document on bitmaps from this many postings on.
COUNT_ON_BITMAPS = 1024


@dataclass(frozen=True, slots=True)
class _Entry:
    counts: dict[str, int] | None  # None: restored from a snapshot, tokenised when first needed
    length: int
    updated_at: float
    text: str
    follows: str | None = None


class RecallIndex:
    """Documents by id with an inverted index from token to documents; safe for many threads.

    Searches read a consistent state: writers and readers share one lock, and
    searching 10k documents takes about a millisecond, so a reader/writer split
    would not pay for itself.
    """

    def __init__(
        self,
        semantic: SemanticBranch | None = None,
        *,
        profile: Profile = "word-cjk-bigram",
        k1: float | None = None,
        b: float | None = None,
    ) -> None:
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {', '.join(PROFILES)}, not {profile!r}")
        self.profile: Profile = profile
        self._conversation = profile == "conversation"
        #: The profile's exact name with its tokeniser's version: a saved tokenised form carries it.
        self.token_profile: str = convo.PROFILE if self._conversation else TOKEN_PROFILE
        # BM25's parameters: the profile's own unless given.
        default = bm25.Params(convo.BM25_K1, convo.BM25_B) if self._conversation else bm25.DEFAULT
        self._params = bm25.Params(default.k1 if k1 is None else k1, default.b if b is None else b)
        self._lock = threading.RLock()
        self._docs: dict[str, _Entry] = {}
        # token -> {doc id: occurrences}; coverage reads the keys, BM25 the counts.
        self._postings: dict[str, dict[str, int]] = {}
        # token -> its postings grouped by BM25 impact, kept only for tokens with many postings.
        self._impacts: dict[str, bm25.Buckets] = {}
        # Each document has a slot (a small int, reused after a removal); a token with impact
        # groups also keeps its postings as a bitmap of slots, so a query counts how many of
        # its tokens each document holds with a few operations on big ints.
        self._slots: dict[str, int] = {}
        self._slot_ids: list[str | None] = []
        self._free: list[int] = []
        self._bits: dict[str, int] = {}
        self._lengths: dict[str, int] = {}  # doc id -> token count (BM25's length)
        # The pruning's tuning; the tests lower them to exercise every path on small corpora.
        self._bucketed = bm25.BUCKETED_POSTINGS
        self._count_after = bm25.COUNT_AFTER
        self._level_visit = bm25.LEVEL_VISIT
        self._bitmaps_from = COUNT_ON_BITMAPS
        self._total_length = 0
        # The tie order of every ranking, kept per document so ordering a level costs no Python key calls.
        self._keys: dict[str, tuple[float, str]] = {}
        # Postings restored from a snapshot and not decoded yet (token -> posting string over
        # ``_raw_ids``, see :mod:`gitmem.recall.postings`). A token is in ``_raw`` or in
        # ``_postings``, never both; ``_dead`` holds the ids of restored documents since removed
        # or replaced, which decoding leaves out (a replacement's own tokens are decoded first).
        self._raw: dict[str, str] = {}
        self._raw_ids: list[str] = []
        self._dead: set[str] = set()
        self.restored = False  # whether the last fill came from a saved tokenised form
        # Conversation profile: item id -> the ids of the items that follow it (whose context it is).
        self._followers: dict[str, set[str]] = {}
        self.semantic = semantic

    # -- writes --

    def upsert(self, doc: RecallDoc) -> None:
        check_doc(doc)
        listed = self._listed(doc)  # outside the lock: searches need not wait for it
        with self._lock:
            self._put(doc, listed)
            if self._followers:
                self._refollow(doc.id)
        if self.semantic is not None:
            self.semantic.note(doc.id, doc.text)

    def upsert_many(self, docs: Iterable[RecallDoc]) -> None:
        """:meth:`upsert` each of ``docs`` in turn, under one hold of the lock (a rebuild, a resumed snapshot)."""
        added: list[RecallDoc] = []
        ahead: dict[str, str] = {}
        if self._conversation:  # an item may come before the one it follows
            docs = list(docs)
            ahead = {doc.id: doc.text for doc in docs if isinstance(doc, RecallDoc)}
        with self._lock:
            was_empty = not self._docs  # then every follower was indexed with its context from ``ahead``
            for doc in docs:
                check_doc(doc)
                self._put(doc, self._listed(doc, ahead))
                added.append(doc)
            for doc in added if self._followers and not was_empty else ():
                self._refollow(doc.id)
        if self.semantic is not None:
            for doc in added:
                self.semantic.note(doc.id, doc.text)

    def _listed(self, doc: RecallDoc, ahead: dict[str, str] | None = None) -> list[str]:
        """Every token occurrence of ``doc`` under the index's profile.

        The conversation profile adds the head of the followed item's text as the
        index holds it now (else as ``ahead`` has it: a fill's other documents).
        """
        if not self._conversation:
            return token_list(doc.text)
        context = ""
        if doc.follows is not None and doc.follows != doc.id:
            if ahead and doc.follows in ahead:
                context = ahead[doc.follows]
            else:
                followed = self._docs.get(doc.follows)
                context = "" if followed is None else followed.text
        return convo.doc_tokens(doc.text, context, doc.updated_at)

    def _refollow(self, doc_id: str) -> None:
        """Index again the items that follow ``doc_id`` (its text is their context, and it changed or came late)."""
        for follower in sorted(self._followers.get(doc_id, ())):
            entry = self._docs.get(follower)
            if entry is not None and follower != doc_id:
                doc = RecallDoc(follower, entry.text, entry.updated_at, entry.follows)
                self._put(doc, self._listed(doc))

    def _put(self, doc: RecallDoc, listed: list[str]) -> None:
        length = len(listed)
        counts = counted(listed)
        if self._raw:  # decoded before anything changes: a damaged one re-tokenises first
            self._decode_all(counts)
        doc_id = doc.id
        entry = _Entry(counts, length, float(doc.updated_at), doc.text, doc.follows)
        self._drop(doc_id)
        self._docs[doc_id] = entry
        if doc.follows is not None and self._conversation:
            self._followers.setdefault(doc.follows, set()).add(doc_id)
        self._keys[doc_id] = (-entry.updated_at, doc_id)
        self._lengths[doc_id] = length
        self._total_length += length
        if self._free:
            slot = self._free.pop()
            self._slot_ids[slot] = doc_id
        else:
            slot = len(self._slot_ids)
            self._slot_ids.append(doc_id)
        self._slots[doc_id] = slot
        postings = self._postings
        for token, n in counts.items():
            try:
                postings[token][doc_id] = n
            except KeyError:
                postings[token] = {doc_id: n}
        impacts = self._impacts
        if impacts:
            bit = 1 << slot
            bits = self._bits
            for token in impacts.keys() & counts.keys():
                n = counts[token]
                impacts[token][(n << 32) | length].append(doc_id)
                bits[token] |= bit

    def remove(self, doc_id: str) -> None:
        with self._lock:
            self._drop(doc_id)
            if self._followers:  # its words leave the context of the items that follow it
                self._refollow(doc_id)
        if self.semantic is not None:
            self.semantic.forget(doc_id)

    def clear(self) -> None:
        with self._lock:
            self._docs.clear()
            self._keys.clear()
            self._postings.clear()
            self._impacts.clear()
            self._lengths.clear()
            self._slots.clear()
            self._slot_ids.clear()
            self._free.clear()
            self._bits.clear()
            self._followers.clear()
            self._total_length = 0
            self._raw, self._raw_ids, self._dead = {}, [], set()
        # The stemmer's memo is the process's, keyed by words: a rebuild (after a purge or
        # forget, maybe) leaves none of the old texts' words in it, at the price of stemming again.
        convo.forget_stems()
        if self.semantic is not None:
            self.semantic.forget_all()

    def rebuilt(self) -> None:
        """A rebuild (:meth:`clear`, then every document put back) is done: the semantic side drops the rest."""
        if self.semantic is not None:
            self.semantic.rebuilt()

    def _drop(self, doc_id: str) -> None:
        old = self._docs.pop(doc_id, None)
        if old is None:
            return
        if old.follows is not None and old.follows in self._followers:
            followers = self._followers[old.follows]
            followers.discard(doc_id)
            if not followers:
                del self._followers[old.follows]
        del self._keys[doc_id]
        del self._lengths[doc_id]
        self._total_length -= old.length
        slot = self._slots.pop(doc_id)
        self._slot_ids[slot] = None
        self._free.append(slot)
        keep = ~(1 << slot)
        counts = old.counts
        if counts is None:  # restored: left out of every decode from now on
            counts = counted(token_list(old.text))
            self._dead.add(doc_id)
        for token in counts:
            posting = self._postings.get(token)
            n = None if posting is None else posting.pop(doc_id, None)
            if posting is None or n is None:  # still in ``_raw`` (or a snapshot that left it out)
                continue
            groups = self._impacts.get(token)
            if groups is not None:
                key = (n << 32) | old.length
                group = groups[key]
                group.remove(doc_id)
                if not group:
                    del groups[key]
                self._bits[token] &= keep
            if not posting:
                del self._postings[token]
                self._impacts.pop(token, None)
                self._bits.pop(token, None)

    # -- the tokenised form (snapshots) --

    def export_tokens(self) -> dict[str, object]:
        """The index's tokenised form, JSON-ready: its ``profile``, ``ids``, their token counts, every token's posting string.

        :meth:`restore` takes it back with the same documents into an index of the
        same profile, and the index then answers exactly as one filled from their
        texts would, without tokenising them. The conversation profile's form is
        its name alone: its tokens depend on neighbours, so it is filled from texts.
        """
        if self._conversation:
            return {"profile": self.token_profile}
        with self._lock:
            self._decode_all(list(self._raw))
            ids = list(self._docs)
            position = {doc_id: at for at, doc_id in enumerate(ids)}
            lengths = [self._lengths[doc_id] for doc_id in ids]
            encoded = {token: postings.encode(posting, position) for token, posting in self._postings.items()}
        return {"profile": self.token_profile, "ids": ids, "lengths": lengths, "postings": encoded}

    def restore(self, docs: Iterable[RecallDoc], tokens: object) -> bool:
        """Fill the empty index with ``docs`` and their saved tokenised form (from :meth:`export_tokens`).

        Only the form's shape is checked here (the same ids as ``docs``, a whole
        token count each, a string per token); each posting string is decoded and
        checked when a query or a write first needs its token, and a bad one makes
        the index tokenise every text again. ``False`` (nothing changed): the form
        does not fit (another profile or tokeniser version's, another shape), fill
        the index with :meth:`upsert_many` instead.
        """
        if not isinstance(tokens, dict) or tokens.get("profile") != self.token_profile or self._conversation:
            # Another profile's (or tokeniser version's) tokens would answer other queries; the
            # conversation profile's tokens depend on neighbours: such an index is filled from texts.
            return False
        by_id: dict[str, RecallDoc] = {}
        for doc in docs:
            check_doc(doc)
            by_id[doc.id] = doc  # of two docs naming one id the later stands, as in upsert_many
        form = postings.form_of(tokens, by_id)
        if form is None:
            return False
        ids, lengths, encoded = form
        with self._lock:
            if self._docs or self._impacts:
                return False
            for at, (doc_id, length) in enumerate(zip(ids, lengths, strict=True)):
                doc = by_id[doc_id]
                entries_at = float(doc.updated_at)
                self._docs[doc_id] = _Entry(None, length, entries_at, doc.text, doc.follows)
                self._keys[doc_id] = (-entries_at, doc_id)
                self._lengths[doc_id] = length
                self._slots[doc_id] = at
            self._slot_ids = list(ids)
            self._total_length = sum(lengths)
            self._raw = encoded
            self._raw_ids = list(ids)
            self.restored = True
        if self.semantic is not None:
            for doc_id in ids:
                self.semantic.note(doc_id, by_id[doc_id].text)
        return True

    def _decode_all(self, tokens: Iterable[str]) -> None:
        """Decode the saved postings of ``tokens`` (under the lock); a bad one re-tokenises every text."""
        try:
            for token in tokens:
                if token in self._raw:
                    self._decode(token)
        except ValueError:
            self._retokenise()

    def _decode(self, token: str) -> None:
        """Move ``token``'s posting from ``_raw`` into ``_postings``; ``ValueError`` when it is damaged."""
        posting = postings.decode(self._raw.pop(token), self._raw_ids, self._dead)
        if posting:
            self._postings[token] = posting

    def _retokenise(self) -> None:
        """Throw away the saved tokenised form and index every text again, as :meth:`upsert_many` would."""
        docs = [RecallDoc(doc_id, e.text, e.updated_at, e.follows) for doc_id, e in self._docs.items()]
        semantic, self.semantic = self.semantic, None  # the semantic side keeps what it noted
        try:
            self.clear()
            self.upsert_many(docs)
        finally:
            self.semantic = semantic
        self.restored = False

    # -- reads --

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._docs

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._docs)

    def get(self, doc_id: str) -> RecallDoc | None:
        with self._lock:
            entry = self._docs.get(doc_id)
        return None if entry is None else RecallDoc(doc_id, entry.text, entry.updated_at, entry.follows)

    def tokens_of(self, doc_id: str) -> frozenset[str] | None:
        entry = self._docs.get(doc_id)
        if entry is None:
            return None
        if entry.counts is None and self._conversation:  # never: a conversation index is not restored
            return None
        return frozenset(entry.counts if entry.counts is not None else token_list(entry.text))

    def search(
        self,
        query: str,
        *,
        limit: int = 5,
        min_score: float = 0.0,
        ranking: Ranking = "coverage",
        accept: Callable[[str], bool] | None = None,
    ) -> list[RecallHit]:
        """The best ``limit`` documents for ``query``; ``accept`` filters before the limit is applied.

        Zero scores are never returned; ``min_score`` is in the ranking's own unit
        (coverage 0..1, BM25 raw) and for ``fused`` gates the lexical branch.
        Bad input raises ``invalid_query``.
        """
        tokens = check_query(query, limit, ranking, self.profile)
        floor = check_min_score(min_score)
        if self._raw:
            with self._lock:
                self._decode_all(tokens)
        if ranking == "bm25":
            return self._bm25(tokens, limit, floor, accept)
        if ranking == "coverage":
            return self._coverage(tokens, limit, floor, accept)
        return self._fused(query, tokens, limit, floor, accept)

    def _coverage(
        self, tokens: frozenset[str], limit: int, floor: float, accept: Callable[[str], bool] | None
    ) -> list[RecallHit]:
        hits: Counter[str] = Counter()
        with self._lock:
            size = len(tokens)
            docs = self._docs
            out: list[RecallHit] = []
            postings = [self._postings.get(token) for token in tokens]
            if floor <= 1.0 and all(postings):
                # Documents holding every query token score 1.0; found by intersecting from the
                # shortest posting, so a query of common words need not count every posting.
                # When they fill the limit nothing else can outrank them.
                ordered = sorted((p for p in postings if p), key=len)
                common = list(ordered[0])
                for other in ordered[1:]:
                    common = list(filter(other.__contains__, common))  # a loop in C
                for _, doc_id in sorted(map(self._keys.__getitem__, common)):
                    if accept is not None and not accept(doc_id):
                        continue
                    out.append(RecallHit(doc_id, 1.0, docs[doc_id].updated_at))
                    if len(out) == limit:
                        return out
                out.clear()
            if len(tokens) > 1 and sum(len(p) for p in postings if p) >= self._bitmaps_from:
                # How many query tokens each document holds, counted on slot bitmaps: a few big-int
                # operations instead of a step per posting; only the levels needed are listed.
                self._group(tokens)
                slots = len(self._slot_ids)
                masks = [
                    self._bits.get(t) or bm25.bitmap(p, self._slots, slots)
                    for t, p in zip(tokens, postings, strict=True)
                    if p
                ]
                levels = bm25.count_levels(masks, slots)
                ids = self._slot_ids
                counts = sorted(levels, reverse=True)

                def listed(n: int) -> list[str]:
                    return bm25.slot_members(levels[n], ids)

            else:
                for found in postings:
                    if found:
                        hits.update(found.keys())  # counted in C
                counts = sorted(set(hits.values()), reverse=True)

                def listed(n: int) -> list[str]:
                    return [d for d, c in hits.items() if c == n]

            # Score levels from the top; only the levels that fill the limit are listed and ordered.
            for n in counts:
                score = n / size
                if score < floor:
                    break
                members = listed(n)
                for _, doc_id in sorted(map(self._keys.__getitem__, members)):
                    if accept is not None and not accept(doc_id):
                        continue
                    out.append(RecallHit(doc_id, score, docs[doc_id].updated_at))
                    if len(out) == limit:
                        return out
            return out

    def _group(self, tokens: Iterable[str]) -> None:
        """Make the impact groups and bitmap of each common token of a query that has none yet.

        Made by the first query that needs them and kept up to date by every write after it.
        """
        for token in tokens:
            posting = self._postings.get(token)
            if posting is not None and len(posting) >= self._bucketed and token not in self._impacts:
                self._impacts[token] = bm25.buckets_of(posting, self._lengths)
                self._bits[token] = bm25.bitmap(posting, self._slots, len(self._slot_ids))

    def _bm25(
        self,
        tokens: frozenset[str],
        limit: int,
        floor: float,
        accept: Callable[[str], bool] | None,
        *,
        prune: bool = True,
    ) -> list[RecallHit]:
        """BM25's top ``limit``; ``prune=False`` scores every posting (the property tests compare the two)."""
        with self._lock:
            n_docs = len(self._docs)
            if not n_docs:
                return []
            avg = self._total_length / n_docs or 1.0
            if prune and len(tokens) <= bm25.MAX_PRUNED_TOKENS:
                self._group(tokens)
                scores = bm25.pruned_scores(
                    tokens,
                    self._postings,
                    self._impacts,
                    self._lengths,
                    bm25.Slots(self._slots, self._slot_ids, self._bits),
                    n_docs,
                    avg,
                    limit,
                    floor,
                    accept,
                    count_after=self._count_after,
                    level_visit=self._level_visit,
                    params=self._params,
                )
            else:
                scores = bm25.exhaustive_scores(tokens, self._postings, self._lengths, n_docs, avg, self._params)
            keys = self._keys
            ranked = [((-s, *keys[d]), d) for d, s in scores.items() if s > 0.0 and s >= floor]
            return ordering.take(ranked, limit, accept)

    def _fused(
        self, query: str, tokens: frozenset[str], limit: int, floor: float, accept: Callable[[str], bool] | None
    ) -> list[RecallHit]:
        depth = max(limit * 4, 20)
        top = min(depth, MAX_LIMIT)
        if self._conversation:  # BM25, with the semantic branch added past a confidence
            lexical = [(h.id, h.score) for h in self._bm25(tokens, top, floor, accept)]
            semantic = fusion.semantic_scores(self.semantic, query, depth, accept, self)
            fused = fusion.lexical_led(lexical, semantic, ideal=self._ideal(tokens))
        else:  # reciprocal-rank fusion of coverage with the semantic ranking (the A3S profile's)
            rankings = [[h.id for h in self._coverage(tokens, top, floor, accept)]]
            ranked = None if self.semantic is None else self.semantic.rank(query, depth, accept, self)
            fused = fusion.rrf(rankings if ranked is None else [*rankings, ranked])
        with self._lock:
            docs = self._docs
            ordered = sorted((order_key(s, docs[d].updated_at, d), d) for d, s in fused.items() if d in docs)
            return [RecallHit(d, -neg, docs[d].updated_at) for (neg, _, _), d in ordered[:limit]]

    def _ideal(self, tokens: frozenset[str]) -> float:
        """BM25 of a document holding every query token, each as often as its own words (see :mod:`.fusion`)."""
        with self._lock:
            n_docs = len(self._docs)
            k1 = self._params.k1
            found = (self._postings.get(t) for t in tokens)
            return sum(bm25.idf_weight(n_docs, len(p), k1) * 2 / (2 + k1) for p in found if p)
