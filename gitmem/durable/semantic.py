"""Durable recall's semantic half: vectors refreshed from Active-only snapshots, and their health.

Vectors are never updated implicitly: a write to the repository does not touch
the vector index. A host (or :class:`SemanticMaintenance`, on an interval)
calls :meth:`SemanticRecall.refresh`, which

1. reads the index revision it starts from;
2. catches up a **complete Active-only snapshot** of the namespace at one commit
   (:class:`ActiveNodes`: the first refresh in a process reads every node file,
   later ones only those the change cursor names; when it shows that a node file
   of the namespace moved meanwhile, it catches up again; the
   :data:`ACTIVE_PARTITIONS` most recently refreshed namespaces are kept caught
   up, so a server touching many namespaces holds a bounded number: one dropped
   is read whole again on its next refresh);
3. embeds only the node revisions the partition does not hold yet (an unchanged
   revision keeps its vector), and deletes the revisions that are no longer
   active;
4. publishes all of it as ONE mutation of the partition, tagged with the commit
   and the serving generation, requiring the index revision of step 1 when the
   index can compare-and-swap (``index_revision_cas``): a refresh that started
   from an older snapshot never overwrites a newer index (``version_mismatch``).

A query searches only the namespace's partition at the serving generation (a
digest of the embedding identity, the index and the fusion profile: another
model never compares its vectors with the old ones); :mod:`gitmem.durable.recall`
re-reads every hit and requires it active, at the revision and with the content
digest its vector was made from.

Health (:meth:`SemanticRecall.health`, ``gitmem durable health``) compares the
partition with the head: the index revision, the commit it reflects, how many
node files of the namespace changed since (the lag), the last refresh, its
outcome and the failures since the last success. The outcomes are kept in a
small JSON file per namespace beside the index (derived state too).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from gitmem import derived
from gitmem.catchup import CatchUp
from gitmem.durable.identifiers import FUSION_PROFILE, SEMANTIC_BINDING_SCHEMA
from gitmem.durable.namespace import Namespace
from gitmem.durable.node import Node
from gitmem.durable.nodefile import decode_node, nodes_prefix
from gitmem.errors import MemoryStoreError
from gitmem.localfile import MB, load_local_json, local_folder_fd, open_folder, open_private, replace_file
from gitmem.model import Changes, FileText
from gitmem.recall.values import is_date_time
from gitmem.recall.vectors import (
    CONSISTENCY_ORDER,
    Consistency,
    IndexStatus,
    NodeRef,
    PartitionState,
    VectorHit,
    VectorIndex,
    VectorRecord,
)

if TYPE_CHECKING:
    from gitmem.store import BatchFileStore

#: Where a git mount keeps the embedded index and the refresh outcomes (deleted by purge and forget).
SEMANTIC_DIR: Final = ("gitmem", "derived", "semantic")
_SNAPSHOT_ATTEMPTS: Final = 5
#: How many namespaces' active nodes a :class:`SemanticRecall` keeps between refreshes (the most recently refreshed).
ACTIVE_PARTITIONS: Final = 64
_LOG_BYTES: Final = MB  # a refresh log holds five small fields
Outcome = Literal["published", "unchanged", "failed"]


@dataclass(frozen=True, slots=True)
class EmbeddingIdentity:
    """What makes a vector: provider, model, its revision and dimension (and who vouches for it).

    It is persisted in session bindings and digested into the serving
    generation, so it must hold no secret (no key, no endpoint credentials).
    """

    provider: str
    model: str
    revision: str
    dimension: int
    authority_digest: str | None = None

    def __post_init__(self) -> None:
        for name in ("provider", "model", "revision"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise MemoryStoreError("invalid_query", f"embedding {name} must be non-blank text")
        if isinstance(self.dimension, bool) or not isinstance(self.dimension, int) or self.dimension < 1:
            raise MemoryStoreError("invalid_query", "embedding dimension must be a positive whole number")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Embedder(Protocol):
    """A text-to-vector model for durable recall; ``identity`` names it exactly."""

    @property
    def identity(self) -> EmbeddingIdentity: ...

    def embed(self, texts: list[str]) -> Sequence[Sequence[float]]: ...

    def embed_queries(self, texts: list[str]) -> Sequence[Sequence[float]]: ...


class FixtureEmbedder:
    """Declared unit vectors, text by text (the A3S evaluations' provider): no model, no surprises.

    A text that was not declared fails like a provider would (``unavailable``).
    """

    def __init__(self, vectors: Mapping[str, Sequence[float]], identity: EmbeddingIdentity) -> None:
        self._identity = identity
        self._vectors: dict[str, tuple[float, ...]] = {}
        for text, vector in vectors.items():
            values = tuple(float(x) for x in vector)
            norm = math.sqrt(sum(x * x for x in values))
            if len(values) != identity.dimension or not norm or not all(math.isfinite(x) for x in values):
                raise MemoryStoreError("invalid_query", f"the declared vector for {text[:40]!r} is not usable")
            self._vectors[text] = tuple(x / norm for x in values)
        self.calls = 0

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._identity

    def embed(self, texts: list[str]) -> list[tuple[float, ...]]:
        self.calls += 1
        missing = [t for t in texts if t not in self._vectors]
        if missing:
            raise MemoryStoreError("unavailable", f"the fixture provider declares no vector for {missing[0][:40]!r}")
        return [self._vectors[t] for t in texts]

    def embed_queries(self, texts: list[str]) -> list[tuple[float, ...]]:
        return self.embed(texts)


@dataclass(frozen=True, slots=True)
class SemanticPolicy:
    """How many vector candidates a query takes (1-100) and the cosine they need."""

    candidate_limit: int = 20
    min_score: float = 0.0

    def __post_init__(self) -> None:
        n = self.candidate_limit
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 100:
            raise MemoryStoreError("invalid_query", "candidate_limit must be a whole number from 1 to 100")
        if not isinstance(self.min_score, (int, float)) or not -1.0 <= float(self.min_score) <= 1.0:
            raise MemoryStoreError("invalid_query", "the semantic min_score is a cosine between -1 and 1")


@dataclass(frozen=True, slots=True)
class RefreshReceipt:
    """What one refresh did; secret-free (identities, counts, revisions, no content)."""

    namespace: Namespace
    outcome: Outcome
    generation: str
    commit: str
    index_revision: int
    started_revision: int
    consistency: Consistency
    active: int
    embedded: int
    removed: int
    at: float


@dataclass(frozen=True, slots=True)
class SemanticHealth:
    """The semantic partition of one namespace against the repository head.

    ``state``: ``ready`` (the partition reflects the head), ``lagging`` (node
    files changed since), ``stale_generation`` (built for another embedding
    identity), ``missing`` (never refreshed), ``failing`` (the last refresh
    failed), ``damaged`` (the index cannot be opened or read, or holds damaged
    vectors: ``problem`` says why; it is derived state, so deleting it and
    refreshing rebuilds it). ``lag`` counts node files of the namespace changed
    since the indexed commit (``None`` when the change cursor cannot tell).
    """

    namespace: Namespace
    state: str
    head: str
    index: str
    consistency: Consistency
    index_revision: int
    generation: str | None
    partition_generation: str | None
    indexed_commit: str | None
    partition_revision: int | None
    vectors: int
    lag: int | None
    last_refresh_at: float | None
    last_outcome: str | None
    last_error: str | None
    failures: int
    refreshes: int
    problem: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["namespace"] = self.namespace.as_dict()
        return out


class RefreshLog:
    """The last refresh outcome per namespace: a JSON file each in ``folder`` (else in memory).

    Updates are read-modify-write under an exclusive ``flock`` of the file's lock
    file, so two processes refreshing at once do not lose a failure count. The
    files are derived state in a folder others may write (``root``: the mount):
    read through :mod:`gitmem.localfile` (bounded, no link, never blocking), and
    a planted log or lock reads as no log and is never written through.
    """

    def __init__(self, folder: str | None, *, root: str | None = None) -> None:
        self.folder = folder
        self.root = root if root is not None else mount_of(folder)
        self._memory: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def _path(self, partition: str) -> str:
        assert self.folder is not None
        return os.path.join(self.folder, "refresh-" + hashlib.sha256(partition.encode()).hexdigest()[:32] + ".json")

    def read(self, partition: str) -> dict[str, Any]:
        if self.folder is None:
            with self._lock:
                return dict(self._memory.get(partition, {}))
        # derived state: unreadable (a link, a FIFO, too big, not JSON) is as good as never refreshed
        return _log_fields(load_local_json(self._path(partition), _LOG_BYTES))

    def record(self, partition: str, outcome: Outcome, error: str | None, at: float) -> None:
        def update(prior: dict[str, Any]) -> dict[str, Any]:
            failed = outcome == "failed"
            return {
                "last_refresh_at": at,
                "last_outcome": outcome,
                "last_error": error,
                "failures": int(prior.get("failures", 0)) + 1 if failed else 0,
                "refreshes": int(prior.get("refreshes", 0)) + 1,
            }

        if self.folder is None:
            with self._lock:
                self._memory[partition] = update(self._memory.get(partition, {}))
            return
        try:
            if self.root is not None:  # written through the folder checked: one swapped for a link is not followed
                folder = local_folder_fd(self.folder, root=self.root)
            else:
                os.makedirs(self.folder, mode=0o700, exist_ok=True)
                folder = open_folder(self.folder, follow=True)
            try:
                name = os.path.basename(self._path(partition))
                lock = open_private(name + ".lock", os.O_RDWR | os.O_CREAT, dir_fd=folder)  # a FIFO or link: refused
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                    prior = _log_fields(load_local_json(name, _LOG_BYTES, dir_fd=folder))
                    replace_file(name, json.dumps(update(prior)), dir_fd=folder)  # replaces a planted link itself
                finally:
                    os.close(lock)
            finally:
                os.close(folder)
        except (OSError, MemoryStoreError):
            pass  # health is advisory; the refresh itself already succeeded or failed


def _log_fields(data: Any) -> dict[str, Any]:
    """The fields of a refresh log that have the types health reports; anything else is dropped."""
    if not isinstance(data, dict):
        return {}
    out: dict[str, Any] = {}
    at = data.get("last_refresh_at")
    if is_date_time(at):  # NaN, inf, 10**400, past the year 9999: dropped
        out["last_refresh_at"] = float(at)
    if data.get("last_outcome") in ("published", "unchanged", "failed"):
        out["last_outcome"] = data["last_outcome"]
    if isinstance(data.get("last_error"), str):
        out["last_error"] = data["last_error"][:500]
    for key in ("failures", "refreshes"):
        n = data.get(key)
        if isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 1 << 62:
            out[key] = n
    return out


def mount_of(folder: str | None) -> str | None:
    """The mount folder holding a semantic ``folder`` (``<mount>/gitmem/derived/semantic``), else ``None``.

    From the mount down no folder may be a link (:func:`gitmem.localfile.local_folder`).
    """
    if folder is None:
        return None
    parts = os.path.normpath(os.path.abspath(folder)).split(os.sep)
    if tuple(parts[-len(SEMANTIC_DIR) :]) != SEMANTIC_DIR:
        return None
    return os.sep.join(parts[: -len(SEMANTIC_DIR)]) or os.sep


def partition_of(namespace: Namespace) -> str:
    """The namespace's partition name in a vector index: its folder in the mount."""
    return namespace.folder.rstrip("/")


class ActiveNodes(CatchUp):
    """The active nodes of one namespace, caught up through the store's change cursor (:mod:`gitmem.catchup`).

    A refresh after one write re-reads that one node file instead of the
    namespace. A node file that does not parse is raised (``invalid_file``), as
    the refresh always has: the vectors are never published from part of a namespace.
    """

    def __init__(self, store: BatchFileStore, namespace: Namespace, generation: str | None) -> None:
        super().__init__(store, prefix=nodes_prefix(namespace))
        self.namespace = namespace
        self.generation = generation  # the history generation it was read under: another one means read again
        self.nodes: dict[str, Node] = {}  # the active ones, by id
        self._ids: dict[str, str] = {}  # node file path -> the id of the active node it holds

    def _put(self, path: str, file: FileText | None) -> None:
        held = self._ids.pop(path, None)
        if held is not None:
            del self.nodes[held]
        if file is not None:
            node = decode_node(file.text, path, self.namespace)
            if node.status == "active":
                self.nodes[node.id] = node
                self._ids[path] = node.id

    def _forget(self) -> None:
        self.nodes.clear()
        self._ids.clear()

    def at_one_commit(self) -> str:
        """Catch up until no node file of the namespace moved since; the commit the nodes are exactly those of.

        The files are read at the head after the cursor was asked for, so one
        written meanwhile can be newer than it: then the change cursor names it
        and the cache catches up again.
        """
        for _ in range(_SNAPSHOT_ATTEMPTS):
            moved = self.store.changes(self.refresh())
            if isinstance(moved, Changes) and not any(self.covers(p) for p in moved.paths):
                return moved.cursor
        raise MemoryStoreError("unavailable", f"namespace {self.namespace.label()} kept changing during the snapshot")


@dataclass
class SemanticRecall:
    """One embedder and one vector index serving durable recall (see the module docstring).

    ``index`` and ``log`` are attached by :class:`~gitmem.durable.repository.DurableRepository`
    when left out: ``index_factory(folder)`` when given (e.g.
    :func:`gitmem.adapters.lance_vectors.lance_index_in`), else the embedded
    :class:`~gitmem.recall.vectors.SqliteVectorIndex`, in the mount's
    ``gitmem/derived/semantic/`` (in memory for a store without a folder).
    """

    embedder: Embedder
    index: VectorIndex | None = None
    policy: SemanticPolicy = field(default_factory=SemanticPolicy)
    log: RefreshLog | None = None
    clock: Callable[[], float] = time.time
    #: Builds the index in the mount's semantic folder (``None``: a store without one) when ``index`` is left out.
    index_factory: Callable[[str | None], VectorIndex] | None = None
    _refreshing: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: How many partitions' active nodes are kept caught up between refreshes (least recently refreshed dropped).
    active_partitions: int = ACTIVE_PARTITIONS
    #: The active nodes of the recently refreshed partitions, most recent last (for the store last refreshed from).
    _active: OrderedDict[str, ActiveNodes] = field(default_factory=OrderedDict, repr=False, compare=False)

    def attach(self, folder: str | None) -> SemanticRecall:
        """Give this recall its default index and refresh log in ``folder`` (``None``: in memory)."""
        if self.index is None and self.index_factory is not None:
            self.index = self.index_factory(folder)
        if self.index is None:
            from gitmem.recall.vectors import SqliteVectorIndex

            self.index = (
                SqliteVectorIndex(":memory:")
                if folder is None
                else SqliteVectorIndex(os.path.join(folder, "vectors.sqlite3"), root=mount_of(folder))
            )
        if self.log is None:
            self.log = RefreshLog(folder)
        return self

    def _parts(self) -> tuple[VectorIndex, RefreshLog]:
        if self.index is None or self.log is None:
            self.attach(None)
        assert self.index is not None and self.log is not None
        return self.index, self.log

    # -- identity --

    def identity(self) -> dict[str, Any]:
        """The secret-free identity a session binding persists: embedding, index, fusion, policy."""
        index, _ = self._parts()
        return {
            "schema": SEMANTIC_BINDING_SCHEMA,
            "embedding": self.embedder.identity.as_dict(),
            "index": index.name,
            "consistency": index.consistency,
            "fusion": FUSION_PROFILE,
            "policy": {"candidate_limit": self.policy.candidate_limit, "min_score": float(self.policy.min_score)},
        }

    def generation(self, namespace: Namespace) -> str:
        """The serving generation of ``namespace``: a digest of the identity and the partition."""
        ident = self.identity()
        key = {k: ident[k] for k in ("schema", "embedding", "index", "fusion")}
        key["partition"] = partition_of(namespace)
        text = json.dumps(key, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()

    # -- refresh --

    def refresh(
        self, store: BatchFileStore, namespace: Namespace, *, consistency: Consistency = "partition_atomic"
    ) -> RefreshReceipt:
        """Publish the namespace's Active-only snapshot to its partition (module docstring).

        ``consistency`` is the least the index must offer: ``index_revision_cas``
        on an index without it fails before any read or embedding. The
        compare-and-swap is used whenever the index offers it.
        """
        index, log = self._parts()
        if consistency not in CONSISTENCY_ORDER:
            raise MemoryStoreError("invalid_query", f"unknown consistency {consistency!r}")
        if CONSISTENCY_ORDER[index.consistency] < CONSISTENCY_ORDER[consistency]:
            raise MemoryStoreError(
                "unavailable", f"the vector index {index.name} offers {index.consistency}, not {consistency}"
            )
        partition = partition_of(namespace)
        with self._refreshing:  # one refresh at a time per process; the CAS orders processes
            try:
                receipt = self._refresh(store, namespace, index, partition)
            except Exception as exc:
                log.record(partition, "failed", f"{type(exc).__name__}: {exc}"[:500], self.clock())
                if isinstance(exc, MemoryStoreError):
                    raise
                raise MemoryStoreError("unavailable", f"semantic refresh failed: {type(exc).__name__}: {exc}") from exc
            log.record(partition, receipt.outcome, None, receipt.at)
            return receipt

    def _refresh(
        self, store: BatchFileStore, namespace: Namespace, index: VectorIndex, partition: str
    ) -> RefreshReceipt:
        cas = index.consistency == "index_revision_cas"
        started = index.status().revision
        generation = self.generation(namespace)
        seen = derived.Generation.read(derived.stamp_of(store))  # before the nodes are read (gitmem.derived)
        active = self._active.get(partition)
        if active is None or active.store is not store or active.generation != seen.value:
            active = self._active[partition] = ActiveNodes(store, namespace, seen.value)  # erased history: read anew
        self._active.move_to_end(partition)
        while len(self._active) > max(self.active_partitions, 1):
            self._active.popitem(last=False)
        commit = active.at_one_commit()
        nodes = active.nodes
        state = index.partition(partition)
        held = index.entries(partition) if state is not None and state.generation == generation else {}
        fresh = [n for n in nodes.values() if held.get(n.id) != (n.revision, n.digest)]
        gone = [NodeRef(i, rev) for i, (rev, _) in held.items() if i not in nodes]
        fresh.sort(key=lambda n: n.id)
        ident = self.embedder.identity
        now = self.clock()
        if not fresh and not gone and state is not None and state.generation == generation:
            return RefreshReceipt(
                namespace, "unchanged", generation, commit, started, started,
                index.consistency, len(nodes), 0, 0, now,
            )  # fmt: skip
        records: list[VectorRecord] = []
        for at in range(0, len(fresh), 256):
            batch = fresh[at : at + 256]
            vectors = self.embedder.embed([n.content for n in batch])
            if len(vectors) != len(batch):
                raise MemoryStoreError(
                    "unavailable", f"{ident.provider} returned {len(vectors)} vectors for {len(batch)}"
                )
            for node, vector in zip(batch, vectors, strict=True):
                if len(vector) != ident.dimension:
                    raise MemoryStoreError(
                        "unavailable",
                        f"{ident.provider} returned a {len(vector)}-dimensional vector, not {ident.dimension}",
                    )
                records.append(VectorRecord(node.id, node.revision, node.digest, _unit(vector)))
        if not seen.current():
            raise MemoryStoreError("unavailable", "the memory's history was erased during the refresh; refresh again")
        revision = index.mutate(
            partition,
            generation=generation,
            commit=commit,
            upsert=records,
            delete=gone,
            expected_revision=started if cas else None,
        )
        if not seen.current():
            # A purge or forget overtook the publish: its vectors may be of erased nodes. Take them out again.
            index.mutate(
                partition, generation=generation, commit=commit, upsert=[], delete=[NodeRef(r.node_id, r.revision) for r in records]
            )
            raise MemoryStoreError("unavailable", "the memory's history was erased during the refresh; refresh again")
        return RefreshReceipt(
            namespace, "published", generation, commit, revision, started,
            index.consistency, len(nodes), len(records), len(gone), now,
        )  # fmt: skip

    # -- queries (called by gitmem.durable.recall) --

    def search(self, namespace: Namespace, query: str, depth: int) -> list[VectorHit]:
        """Vector hits for ``query`` in the namespace's partition at the serving generation."""
        index, _ = self._parts()
        (vector,) = self.embedder.embed_queries([query])
        limit = min(depth, self.policy.candidate_limit)
        return index.query(
            partition_of(namespace),
            self.generation(namespace),
            _unit(vector),
            limit=limit,
            min_score=float(self.policy.min_score),
        )

    # -- health --

    def health(self, store: BatchFileStore, namespace: Namespace) -> SemanticHealth:
        index, log = self._parts()
        return semantic_health(store, namespace, index, log, self.generation(namespace))


#: What a scheduled refresh (:class:`SemanticMaintenance`) always requires of the index.
SCHEDULED_CONSISTENCY: Final[Consistency] = "index_revision_cas"


def _unit(vector: Iterable[float]) -> tuple[float, ...]:
    values = tuple(float(x) for x in vector)
    norm = math.sqrt(sum(x * x for x in values))
    if not norm or not math.isfinite(norm):
        raise MemoryStoreError("unavailable", "the embedding provider returned a zero or non-finite vector")
    return tuple(x / norm for x in values)


def semantic_health(
    store: BatchFileStore, namespace: Namespace, index: VectorIndex, log: RefreshLog, generation: str | None = None
) -> SemanticHealth:
    """The partition of ``namespace`` against the head (``generation``: the one a binding serves)."""
    partition = partition_of(namespace)
    status: IndexStatus | None = None
    state: PartitionState | None = None
    try:  # an index that cannot be opened or read is reported, with why, not raised
        status = index.status()
        state = index.partition(partition)
        problem = index.check(partition)
    except MemoryStoreError as exc:
        problem = exc.message[:500]
    last = log.read(partition)
    head = store.head()
    lag: int | None = None
    if state is not None:
        try:
            moved: Changes | object = store.changes(state.commit)
        except MemoryStoreError as exc:  # the index names a commit the memory cannot start from
            problem = problem or f"the index reflects commit {state.commit[:80]!r}, which the memory cannot read: {exc.message}"[:500]
            moved = None
        if isinstance(moved, Changes):
            prefix = nodes_prefix(namespace)
            lag = sum(1 for p in moved.paths if p.startswith(prefix))
    if problem is not None:
        verdict = "damaged"
    elif state is None:
        verdict = "missing"
    elif generation is not None and state.generation != generation:
        verdict = "stale_generation"
    elif last.get("last_outcome") == "failed":
        verdict = "failing"
    elif lag == 0:
        verdict = "ready"
    else:
        verdict = "lagging"
    return SemanticHealth(
        namespace=namespace,
        state=verdict,
        head=head,
        index=index.name,
        consistency=index.consistency,
        index_revision=0 if status is None else status.revision,
        generation=generation,
        partition_generation=None if state is None else state.generation,
        indexed_commit=None if state is None else state.commit,
        partition_revision=None if state is None else state.revision,
        vectors=0 if state is None else state.count,
        lag=lag,
        last_refresh_at=last.get("last_refresh_at"),
        last_outcome=last.get("last_outcome"),
        last_error=last.get("last_error"),
        failures=int(last.get("failures", 0)),
        refreshes=int(last.get("refreshes", 0)),
        problem=problem,
    )


class SemanticMaintenance:
    """Refresh some namespaces every ``interval`` seconds on a daemon thread, until :meth:`close`.

    A scheduled refresh runs with nobody watching it, so it always requires the
    index's revision compare-and-swap (:data:`SCHEDULED_CONSISTENCY`): an index that
    offers only ``partition_atomic`` is refused here, before the thread starts
    (``unavailable``), and every round asks :meth:`SemanticRecall.refresh` for the
    CAS again. Refreshing such an index on demand keeps the caller's choice.
    Each round refreshes each namespace once; a failure is recorded in the
    refresh log (see :meth:`SemanticRecall.health`) and retried next round.
    """

    def __init__(
        self,
        recall: SemanticRecall,
        store: BatchFileStore,
        namespaces: Sequence[Namespace],
        *,
        interval: float,
    ) -> None:
        if not isinstance(interval, (int, float)) or not 0.01 <= interval <= 86400:
            raise MemoryStoreError("invalid_query", "the refresh interval is 0.01 to 86400 seconds")
        index, _ = recall._parts()
        if index.consistency != SCHEDULED_CONSISTENCY:
            raise MemoryStoreError(
                "unavailable",
                f"a scheduled semantic refresh requires {SCHEDULED_CONSISTENCY}; the vector index {index.name} "
                f"offers only {index.consistency} (refresh it on demand, or use an index with the revision CAS)",
            )
        self.recall = recall
        self.store = store
        self.namespaces = tuple(namespaces)
        self.interval = float(interval)
        self.rounds = 0
        self.last: dict[Namespace, RefreshReceipt | str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gitmem-semantic-refresh", daemon=True)
        self._thread.start()

    def refresh(self, namespace: Namespace) -> RefreshReceipt:
        """One scheduled refresh: always with the index-revision CAS."""
        return self.recall.refresh(self.store, namespace, consistency=SCHEDULED_CONSISTENCY)

    def _run(self) -> None:
        while not self._stop.is_set():
            for namespace in self.namespaces:
                try:
                    self.last[namespace] = self.refresh(namespace)
                except Exception as exc:  # recorded in the refresh log; the next round tries again
                    self.last[namespace] = f"{type(exc).__name__}: {exc}"
            self.rounds += 1
            self._stop.wait(self.interval)

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
