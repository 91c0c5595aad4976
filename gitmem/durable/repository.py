"""The durable repository: change sets become single commits on a durable mount.

:meth:`DurableRepository.apply` is the one write path. It stages the change set
(:func:`gitmem.durable.rules.stage`) against the files it reads, then hands the
store ONE atomic batch: the new node files (each expected at the version read,
or absent for a create), every node it only read (expected unchanged, so a
graph check cannot pass on a neighbour that moved meanwhile), and the
idempotency record (expected absent). The store commits it with one compare-
and-swap of ``main``:

- a writer that committed an unrelated node meanwhile does not matter: the
  store rebuilds the batch on the new head (its files are untouched);
- a writer that changed a node this batch read makes the store refuse with
  ``version_mismatch``; the change set is staged again on the new head, where
  a stale ``expected_revision`` is ``revision_mismatch`` (a re-read that still
  matches just goes ahead);
- two writers with the same idempotency key: the ref CAS lets one record in,
  the other finds it on its next try and answers as a replay (same digest) or
  ``idempotency_conflict``.

Every commit says what it did in its trailers, so ``git log`` answers "who
activated this, with what evidence": ``Gitmem-Durable-Namespace``,
``Gitmem-Durable-Key``, one ``Gitmem-Durable-Node: <id>@<revision> <status>
<why>`` per node, and ``Gitmem-Durable-Evidence: <id>@<revision> <kind> <uri>``
for the evidence that authorised an activation; the author is the origin's
principal.
"""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from gitmem import derived
from gitmem.durable.ledger import AccessEvent, Ledger, Usage
from gitmem.durable.namespace import Namespace, check_identifier
from gitmem.durable.node import Evidence, Node, Status, format_time
from gitmem.durable.nodefile import (
    DURABLE_FORMAT,
    KeyRecord,
    decode_node,
    encode_node,
    key_path,
    node_path,
    nodes_prefix,
)
from gitmem.durable.recall import NamespaceRecall, RecallAnswer, RecallPolicy
from gitmem.durable.staging import Known, WriteCache
from gitmem.errors import LOST_RACE, MemoryStoreError, if_found
from gitmem.model import Applied, Edit, FileText, Origin
from gitmem.recall.semantic import SemanticBranch

OP: Final = "durable"
T_NAMESPACE: Final = "Gitmem-Durable-Namespace"
T_KEY: Final = "Gitmem-Durable-Key"
T_NODE: Final = "Gitmem-Durable-Node"
T_EVIDENCE: Final = "Gitmem-Durable-Evidence"
_ATTEMPTS: Final = 50

if TYPE_CHECKING:  # the change-set values and staging rules load when a change is applied, not to recall
    from gitmem.durable.changes import ChangeSet
    from gitmem.durable.rules import Staged
    from gitmem.durable.semantic import RefreshReceipt, SemanticHealth, SemanticMaintenance, SemanticRecall
    from gitmem.recall.vectors import Consistency
    from gitmem.store import BatchFileStore

Clock = Callable[[], datetime]


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class ChangeResult:
    """What applying a change set did.

    ``refs`` are the changed nodes as ``id@revision`` in first-touched order;
    ``nodes`` the node values (empty for a replay, whose nodes may have moved on
    since: read them with :meth:`DurableRepository.get`). ``commit`` is the
    commit that applied it (for a replay, the first application's, when the
    store keeps history).
    """

    idempotency_key: str
    digest: str
    occurred_at: str
    refs: tuple[str, ...]
    commit: str | None
    replayed: bool = False
    nodes: tuple[Node, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeRevision:
    """One revision of a node as git history holds it."""

    commit: str
    time: datetime
    principal: str | None
    node: Node


class DurableRepository:
    """Namespaced durable nodes over a store that can apply atomic batches (one commit each)."""

    def __init__(
        self,
        store: BatchFileStore,
        *,
        clock: Clock = _utcnow,
        ledger: Ledger | None = None,
        semantic: Callable[[Namespace], SemanticBranch] | None = None,
        semantic_recall: SemanticRecall | None = None,
    ) -> None:
        """``ledger`` keeps admissions and uses (default: a file beside a git mount, else in memory);
        ``semantic`` builds a namespace's in-process vector branch (the host owns provider and index);
        ``semantic_recall`` serves the semantic branch from a shared vector index instead, refreshed
        by :meth:`refresh_semantic_recall` (default index: in the mount's ``gitmem/derived/semantic/``)."""
        self.store = store
        self.clock = clock
        where = getattr(store, "path", None)
        if ledger is None:
            ledger = (
                Ledger(f"{where}/gitmem/durable-ledger.sqlite3", stamp=derived.stamp_of(store), root=where)
                if isinstance(where, str)
                else Ledger(":memory:")
            )
        self.ledger = ledger
        self.semantic = semantic
        if semantic_recall is not None:
            from gitmem.durable.semantic import SEMANTIC_DIR

            semantic_recall.attach(os.path.join(where, *SEMANTIC_DIR) if isinstance(where, str) else None)
        self.semantic_recall = semantic_recall
        from gitmem.durable.sessions import SESSIONS_DIR, SessionBindings

        self.sessions = (
            SessionBindings(os.path.join(where, *SESSIONS_DIR), root=where)
            if isinstance(where, str)
            else SessionBindings(None)
        )
        self._recalls: dict[Namespace, NamespaceRecall] = {}
        self._recalls_lock = threading.Lock()
        self._cache = WriteCache()

    @classmethod
    def open(
        cls, root: str | os.PathLike[str], name: str, *, create: bool = False, **options: object
    ) -> DurableRepository:
        """The durable mount ``name`` under the root folder ``root`` (``wrong_kind`` for another kind).

        With ``create=True`` a missing mount is made, with the limits a durable
        node needs (:data:`~gitmem.durable.nodefile.DURABLE_FORMAT`).
        """
        from gitmem.root import Root

        mount = Root(root).mount(name, create=create, fmt=DURABLE_FORMAT if create else None, kind="durable")
        return cls(getattr(mount, "sync", mount), **options)  # type: ignore[arg-type]

    def for_run(self, run_id: str) -> DurableRepository:
        """This repository as agent run ``run_id`` sees it: with the review gate on, its
        change sets go to ``refs/heads/proposals/<run>`` and it reads its own proposal."""
        view = self.store.for_run(run_id)  # type: ignore[attr-defined]
        return DurableRepository(
            view, clock=self.clock, ledger=self.ledger, semantic=self.semantic, semantic_recall=self.semantic_recall
        )

    # -- recall (active nodes only) and the ledger of admissions and uses --

    def recall(self, namespace: Namespace, query: str, policy: RecallPolicy | None = None) -> RecallAnswer:
        """Active nodes of ``namespace`` for ``query`` (see :mod:`gitmem.durable.recall`)."""
        with self._recalls_lock:
            engine = self._recalls.get(namespace)
            if engine is None:
                branch = self.semantic(namespace) if self.semantic is not None else None
                engine = self._recalls[namespace] = NamespaceRecall(
                    self.store, namespace, branch, vectors=self.semantic_recall
                )
        return engine.search(query, policy or RecallPolicy())

    # -- the semantic index: refreshed on demand or on a schedule, never by a write --

    def _semantic(self) -> SemanticRecall:
        if self.semantic_recall is None:
            raise MemoryStoreError("unavailable", "no semantic recall (embedder and vector index) is configured")
        return self.semantic_recall

    def refresh_semantic_recall(
        self, namespace: Namespace, *, consistency: Consistency = "partition_atomic"
    ) -> RefreshReceipt:
        """Publish ``namespace``'s Active-only snapshot to the vector index (:mod:`gitmem.durable.semantic`)."""
        return self._semantic().refresh(self.store, namespace, consistency=consistency)

    def semantic_health(self, namespace: Namespace) -> SemanticHealth:
        """The namespace's vector partition against the head: revision, lag, last refresh, failures.

        Without a configured semantic recall this reads the mount's embedded index
        (no embedder needed; the serving generation is then not checked).
        """
        if self.semantic_recall is not None:
            return self.semantic_recall.health(self.store, namespace)
        from gitmem.durable.semantic import SEMANTIC_DIR, RefreshLog, semantic_health
        from gitmem.recall.vectors import SqliteVectorIndex

        where = getattr(self.store, "path", None)
        folder = os.path.join(where, *SEMANTIC_DIR) if isinstance(where, str) else None
        index = (
            SqliteVectorIndex(":memory:")
            if folder is None
            else SqliteVectorIndex(os.path.join(folder, "vectors.sqlite3"), root=where)
        )
        try:
            return semantic_health(self.store, namespace, index, RefreshLog(folder))
        finally:
            index.close()

    def semantic_maintenance(self, namespaces: Sequence[Namespace], *, interval: float) -> SemanticMaintenance:
        """Refresh ``namespaces`` every ``interval`` seconds on a background thread (``close()`` it).

        Every scheduled refresh requires the index-revision CAS: an index without it
        is refused (``unavailable``) before anything starts (:class:`~gitmem.durable.semantic.SemanticMaintenance`).
        """
        from gitmem.durable.semantic import SemanticMaintenance

        return SemanticMaintenance(self._semantic(), self.store, namespaces, interval=interval)

    def record_admission(self, event: AccessEvent) -> bool:
        """Record that ``event.revision`` of an active node went into a model's context.

        Only the current revision of an active node can be admitted
        (``revision_mismatch`` for a stale one, ``invalid_transition`` for a node
        that is not active). ``False`` when the same event was recorded before.
        """
        seen = derived.Generation.read(self.ledger.stamp)  # before the node is read (gitmem.derived)
        node = self.node(event.namespace, event.node_id)
        if node.revision != event.revision:
            raise MemoryStoreError(
                "revision_mismatch",
                f"node {node.id!r} is at revision {node.revision}; revision {event.revision} cannot be admitted",
            )
        if node.status != "active":
            raise MemoryStoreError(
                "invalid_transition", f"node {node.id!r} is {node.status}; only active nodes are admitted"
            )
        if event.occurred_at < node.updated_at:
            raise MemoryStoreError("invalid_change_set", "an admission cannot precede the node revision it admits")
        return self.ledger.record("admission", event, seen=seen)

    def record_use(self, event: AccessEvent) -> bool:
        """Record that a model actually used ``event.revision`` of a node (any revision it had)."""
        seen = derived.Generation.read(self.ledger.stamp)
        node = self.node(event.namespace, event.node_id)
        if event.revision > node.revision:
            raise MemoryStoreError("revision_mismatch", f"node {node.id!r} has no revision {event.revision} yet")
        if event.revision == node.revision and event.occurred_at < node.updated_at:
            raise MemoryStoreError("invalid_change_set", "a use cannot precede the node revision it uses")
        return self.ledger.record("use", event, seen=seen)

    def usage(self, namespace: Namespace, node_id: str) -> Usage:
        """How many admissions and uses ``node_id`` has (``node_not_found`` for an unknown node)."""
        self.node(namespace, node_id)
        return self.ledger.usage(namespace, node_id)

    # -- reads --

    def _read(self, path: str) -> FileText | None:
        return if_found(self.store.read, path)

    def get(self, namespace: Namespace, node_id: str) -> Node | None:
        """The node's current revision, or ``None`` when the namespace has no such node."""
        check_identifier("node_id", node_id)
        path = node_path(namespace, node_id)
        file = self._read(path)
        return None if file is None else decode_node(file.text, path, namespace)

    def node(self, namespace: Namespace, node_id: str) -> Node:
        """Like :meth:`get`, but ``node_not_found`` when it is not there."""
        found = self.get(namespace, node_id)
        if found is None:
            raise MemoryStoreError("node_not_found", f"no node {node_id!r} in namespace {namespace.label()}")
        return found

    def nodes(self, namespace: Namespace, statuses: Iterable[Status] | None = None) -> builtins.list[Node]:
        """Every node of ``namespace`` (only those in ``statuses`` when given), by id."""
        wanted = None if statuses is None else frozenset(statuses)
        prefix = nodes_prefix(namespace)
        out = []
        for entry in self.store.list():
            if entry.path.startswith(prefix):
                node = decode_node(self.store.read(entry.path).text, entry.path, namespace)
                if wanted is None or node.status in wanted:
                    out.append(node)
        return sorted(out, key=lambda n: n.id)

    def history(self, namespace: Namespace, node_id: str, *, limit: int = 100) -> builtins.list[NodeRevision]:
        """The node's revisions, newest first, read back from git history (``unavailable`` without it)."""
        log = getattr(self.store, "log", None)
        if log is None:
            raise MemoryStoreError("unavailable", "this store keeps no history")
        path = node_path(namespace, node_id)
        out = []
        for entry in log(path, limit=limit):
            file = if_found(self.store.read, path, rev=entry.commit)  # type: ignore[call-arg]
            if file is not None:
                node = decode_node(file.text, path, namespace)
                out.append(NodeRevision(entry.commit, entry.time, entry.origin.principal_id, node))
        if not out and self.get(namespace, node_id) is None:
            raise MemoryStoreError("node_not_found", f"no node {node_id!r} in namespace {namespace.label()}")
        return out

    # -- the write path --

    def apply(
        self,
        change: ChangeSet | Mapping[str, object],
        *,
        origin: Origin | None = None,
        trailers: Sequence[tuple[str, str]] = (),
    ) -> ChangeResult:
        """Apply ``change`` as one commit, all or nothing (see the module docstring).

        The first try reads nothing it can guess: the idempotency record is taken
        to be absent (the batch expects it so), created ids to be free, and nodes
        this handle wrote or read since the head last moved come from its
        :class:`~gitmem.durable.staging.WriteCache`. A staging refusal or a store
        conflict under those guesses is decided again on real reads, where an
        existing record makes the call a replay; so no outcome rests on a guess.
        """
        from gitmem.durable.changes import ChangeSet, parse_change_set

        if not isinstance(change, ChangeSet):
            change = parse_change_set(change)
        namespace = change.namespace
        record_path = key_path(namespace, change.idempotency_key)
        optimistic = True
        for _ in range(_ATTEMPTS):
            if optimistic:
                self._cache.catch_up(self.store)
            else:
                prior = self._read(record_path)
                if prior is not None:
                    return self._replay(change, KeyRecord.decode(prior.text, record_path), record_path)
            try:
                staged, files = self._stage(change, optimistic=optimistic)
            except MemoryStoreError:
                if not optimistic:
                    raise
                optimistic = False  # the refusal may rest on a guess: decide on what is really there
                continue
            edits = self._edits(change, staged, files, record_path)
            try:
                applied = self.store.apply(
                    edits,
                    origin=origin,
                    op=OP,
                    summary=_summary(change, staged),
                    trailers=(*_trailers(change, staged), *trailers),
                )
            except MemoryStoreError as exc:
                if exc.code in LOST_RACE:
                    self._cache.clear()  # someone else wrote: what this handle knew may be stale
                    optimistic = False
                    continue  # something this change read moved: stage again on the new head
                raise
            self._learn(staged, files, edits, applied)
            return self._result(change, staged, applied)
        raise MemoryStoreError("unavailable", "the nodes of this change set kept changing; try again")

    def _stage(self, change: ChangeSet, *, optimistic: bool = False) -> tuple[Staged, dict[str, Known | None]]:
        """Stage ``change`` on the files as they are now; also returns every file it read.

        ``optimistic``: the ids the change set creates are not read but taken to be
        free (their edits then expect the path absent, which the store checks), and
        nodes in the write cache are taken from it (their edits expect the cached
        version). A staging refusal or a store conflict under those guesses is
        decided again with real reads, so errors never rest on them.
        """
        from gitmem.durable.changes import Create
        from gitmem.durable.rules import stage

        files: dict[str, Known | None] = {}
        namespace = change.namespace
        created = {op.node.id for op in change.operations if isinstance(op, Create)} if optimistic else set()

        def lookup(node_id: str) -> Node | None:
            path = node_path(namespace, node_id)
            if node_id in created:
                files[path] = None
                return None
            known = self._cache.get(path) if optimistic else None
            if known is None:
                file = self._read(path)
                if file is not None:
                    known = Known(file, decode_node(file.text, path, namespace))
                    self._cache.put(known)
            files[path] = known
            return None if known is None else known.node

        return stage(change, lookup, self.clock()), files

    def _edits(
        self, change: ChangeSet, staged: Staged, files: dict[str, Known | None], record_path: str
    ) -> builtins.list[Edit]:
        """The batch: the staged nodes (in order), then every file only read, then the idempotency record."""
        edits: builtins.list[Edit] = []
        written = set()
        for node in staged.nodes:
            path = node_path(change.namespace, node.id)
            before = files.get(path)
            edits.append(Edit(path, encode_node(node), expected=None if before is None else before.file.version))
            written.add(path)
        for path, known in files.items():
            if path in written:
                continue
            # Read only: the batch goes ahead only if it is still as read (absent stays absent).
            edits.append(
                Edit(path, None, expected=None)
                if known is None
                else Edit(path, known.file.text, expected=known.file.version)
            )
        record = KeyRecord(
            change.idempotency_key, change.digest(), format_time(staged.occurred_at), tuple(n.ref for n in staged.nodes)
        )
        edits.append(Edit(record_path, record.encode(), expected=None))
        return edits

    def _learn(self, staged: Staged, files: dict[str, Known | None], edits: Sequence[Edit], applied: Applied) -> None:
        """Remember the nodes as the commit left them, so the next change set need not read them."""
        if applied.commit is None or len(applied.versions) != len(edits):
            return
        learned: builtins.list[Known] = []
        written = set()
        # The batch opens with the staged nodes, in order (see _edits).
        for edit, version, node in zip(edits, applied.versions, staged.nodes, strict=False):
            written.add(edit.path)
            if edit.text is not None and version is not None:
                learned.append(Known(FileText(edit.path, edit.text, version), node))
        learned += [k for path, k in files.items() if k is not None and path not in written]  # read, unchanged
        self._cache.learn(applied.commit, learned)

    def _result(self, change: ChangeSet, staged: Staged, applied: Applied) -> ChangeResult:
        return ChangeResult(
            change.idempotency_key,
            change.digest(),
            format_time(staged.occurred_at),
            tuple(n.ref for n in staged.nodes),
            applied.commit,
            replayed=False,
            nodes=staged.nodes,
        )

    def _replay(self, change: ChangeSet, record: KeyRecord, record_path: str) -> ChangeResult:
        if record.key != change.idempotency_key or record.digest != change.digest():
            raise MemoryStoreError(
                "idempotency_conflict",
                f"idempotency key {change.idempotency_key!r} was already used in namespace "
                f"{change.namespace.label()} for a different change set",
            )
        commit = None
        log = getattr(self.store, "log", None)
        if log is not None:
            entries = log(record_path, limit=1)
            commit = entries[-1].commit if entries else None
        return ChangeResult(record.key, record.digest, record.occurred_at, record.nodes, commit, replayed=True)

    # -- conveniences over apply --

    def activate(
        self,
        namespace: Namespace,
        node_id: str,
        expected_revision: int,
        evidence: Sequence[Evidence],
        *,
        idempotency_key: str | None = None,
        origin: Origin | None = None,
        trailers: Sequence[tuple[str, str]] = (),
    ) -> ChangeResult:
        """Activate one exact candidate revision on new ``manual`` or ``verification`` evidence."""
        from gitmem.durable.changes import Activate, ChangeSet

        key = idempotency_key or f"activate/{node_id}@{expected_revision}"
        change = ChangeSet(namespace, key, (Activate(node_id, expected_revision, tuple(evidence)),))
        return self.apply(change, origin=origin, trailers=trailers)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _summary(change: ChangeSet, staged: Staged) -> str:
    ops = change.operations
    if len(ops) == 1:
        op = ops[0]
        ref = staged.nodes[0].ref if staged.nodes else op.node_id
        return f"durable {op.op} {_short(ref)}"
    names = sorted({op.op for op in ops})
    return _short(f"durable: {len(ops)} operations ({', '.join(names)}) on {len(staged.nodes)} nodes", 200)


def _trailers(change: ChangeSet, staged: Staged) -> builtins.list[tuple[str, str]]:
    from gitmem.durable.changes import Activate, Create

    out = [(T_NAMESPACE, change.namespace.label()), (T_KEY, change.idempotency_key)]
    out += [(T_NODE, f"{n.ref} {n.status} {n.revision_kind}") for n in staged.nodes]
    final = {n.id: n for n in staged.nodes}
    for op in change.operations:
        granted: tuple[Evidence, ...] = ()
        if isinstance(op, Activate):
            granted = op.evidence
        elif isinstance(op, Create) and op.node.status == "active":
            granted = op.node.evidence
        node = final.get(op.node_id)
        for item in granted:
            if item.authorises and node is not None:
                out.append((T_EVIDENCE, f"{node.ref} {item.kind} {item.uri}"))
    return out
