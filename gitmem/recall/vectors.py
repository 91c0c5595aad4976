"""A vector index outside the process: the ``VectorIndex`` protocol and its embedded default.

The index is **derived state** that many processes share (docs/durable.md states
its contract): every hit is re-read from the repository and checked (active, same
revision, same content digest) before anyone sees it, so a stale or damaged index
can lose recall but never serve a wrong node. :class:`SqliteVectorIndex` is one
SQLite file in WAL mode; a mutation is one ``BEGIN IMMEDIATE`` transaction, so the
revision check and the publication are one linearization point across processes
and a killed writer leaves the previous state.
"""

from __future__ import annotations

import math
import os
import sqlite3
import sys
import threading
import time
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from gitmem.errors import MemoryStoreError
from gitmem.localfile import connect_local_sqlite

#: How a backend orders mutations: ``partition_atomic`` (each mutation is all or
#: nothing) or ``index_revision_cas`` (also a compare-and-swap on the index revision).
Consistency = Literal["partition_atomic", "index_revision_cas"]
CONSISTENCY_ORDER: Final[dict[str, int]] = {"partition_atomic": 0, "index_revision_cas": 1}
MAX_DIMENSION: Final = 8192


@dataclass(frozen=True, slots=True)
class VectorRecord:
    """One node revision's vector (unit length is the caller's business: scores are dot products)."""

    node_id: str
    revision: int
    digest: str
    vector: Sequence[float]


@dataclass(frozen=True, slots=True)
class NodeRef:
    """A node revision, for deletes: the entry goes only if it still holds that revision."""

    node_id: str
    revision: int


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A query answer: the node revision and digest the vector was made from, and its score."""

    node_id: str
    revision: int
    digest: str
    score: float


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What one partition holds: its generation, the commit it reflects, when and at which revision."""

    partition: str
    generation: str
    commit: str
    revision: int  # the index revision of the mutation that last published it
    count: int
    dimension: int
    published_at: float


@dataclass(frozen=True, slots=True)
class IndexStatus:
    name: str
    consistency: Consistency
    revision: int
    partitions: int
    vectors: int


class VectorIndex(Protocol):
    """A shared vector index with one revision and compare-and-swap mutations (module docstring)."""

    @property
    def name(self) -> str: ...

    @property
    def consistency(self) -> Consistency: ...

    def status(self) -> IndexStatus: ...

    def partition(self, partition: str) -> PartitionState | None: ...

    def entries(self, partition: str) -> dict[str, tuple[int, str]]:
        """node id -> (revision, digest) of every vector in the partition."""
        ...

    def mutate(
        self,
        partition: str,
        *,
        generation: str,
        commit: str,
        upsert: Sequence[VectorRecord] = (),
        delete: Sequence[NodeRef] = (),
        expected_revision: int | None = None,
    ) -> int:
        """Apply ``delete`` then ``upsert`` to the partition as one mutation; returns the new index revision.

        A partition at another generation is emptied first (a new generation
        replaces it whole). ``expected_revision``: refuse with ``version_mismatch``
        unless the index is still at that revision.
        """
        ...

    def query(
        self, partition: str, generation: str, vector: Sequence[float], *, limit: int, min_score: float = 0.0
    ) -> list[VectorHit]:
        """The best ``limit`` entries of the partition at ``generation`` by dot product, at least ``min_score``."""
        ...

    def check(self, partition: str) -> str | None:
        """Why the partition cannot be served as published (a damaged or unreadable index), else ``None``.

        Health calls it, so a damaged index is never reported ``ready``; it reads
        the whole partition (and may check the whole file), so queries do not.
        """
        ...

    def close(self) -> None: ...


def check_mutation(
    partition: str, generation: str, upsert: Sequence[VectorRecord]
) -> tuple[list[tuple[str, int, str, array[float]]], set[int]]:
    """The checks every index makes before a mutation: its rows ``(id, revision, digest, vector)`` and their dimensions."""
    if not partition or not generation:
        raise MemoryStoreError("invalid_query", "a vector mutation names its partition and generation")
    rows = [(r.node_id, int(r.revision), r.digest, check_vector(r.vector)) for r in upsert]
    dims = {len(v) for *_, v in rows}
    if len(dims) > 1:
        raise MemoryStoreError("invalid_query", "the vectors of one mutation must have one dimension")
    return rows, dims


def check_vector(vector: Sequence[float], dimension: int | None = None) -> array[float]:
    """``vector`` as float32, refused unless finite and of the expected dimension."""
    try:
        out = array("f", (float(x) for x in vector))
    except (TypeError, ValueError) as exc:
        raise MemoryStoreError("invalid_query", f"a vector must be a sequence of numbers: {exc}") from exc
    if not 1 <= len(out) <= MAX_DIMENSION or (dimension is not None and len(out) != dimension):
        want = f"{dimension}" if dimension is not None else f"1 to {MAX_DIMENSION}"
        raise MemoryStoreError("invalid_query", f"a vector must have {want} dimensions, not {len(out)}")
    if not all(math.isfinite(x) for x in out):
        raise MemoryStoreError("invalid_query", "a vector must hold finite numbers only")
    return out


def claim_revision(db: sqlite3.Connection, expected: int | None) -> int:
    """The index revision, read under the write lock; ``version_mismatch`` unless it is ``expected``."""
    revision = int(db.execute("SELECT value FROM meta WHERE key='revision'").fetchone()[0])
    if expected is not None and revision != expected:
        raise MemoryStoreError(
            "version_mismatch",
            f"the vector index is at revision {revision}, not {expected}: another refresh published first",
        )
    return revision


def _blob(vector: array[float]) -> bytes:
    if sys.byteorder != "little":
        vector = array("f", vector)
        vector.byteswap()
    return vector.tobytes()


_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta VALUES ('revision', 0);
CREATE TABLE IF NOT EXISTS partitions (
    name TEXT PRIMARY KEY, generation TEXT NOT NULL, commit_id TEXT NOT NULL, revision INTEGER NOT NULL,
    dimension INTEGER NOT NULL, published_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
    partition TEXT NOT NULL, node_id TEXT NOT NULL, revision INTEGER NOT NULL, digest TEXT NOT NULL,
    vector BLOB NOT NULL, PRIMARY KEY (partition, node_id));
"""


@dataclass(slots=True)
class _Loaded:
    """One partition as a matrix, valid while the partition is at ``revision``."""

    revision: int
    generation: str
    ids: list[str]
    revisions: list[int]
    digests: list[str]
    matrix: Any  # numpy (n, dim) float32


class SideTable:
    """The SQLite file of an index that processes share, and its one write transaction.

    One connection per handle, opened again when the file was deleted or replaced
    (purge and forget delete derived state) instead of serving the deleted file. A
    mutation runs in :meth:`_writing` (``BEGIN IMMEDIATE``), where it reads, checks
    (:func:`claim_revision`) and bumps the index revision: one linearization point
    across processes, and a killed writer leaves the previous state.
    """

    def __init__(self, path: str, where: str, busy_timeout: float, root: str | None) -> None:
        self.path = path
        self.where = where  # how messages name the index
        self.busy_timeout = busy_timeout
        #: The mount folder holding ``path``, if any: no folder from it down may be a link (``connect_local_sqlite``).
        self.root = root
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._ino: tuple[int, int] | None = None

    @property
    def consistency(self) -> Consistency:
        return "index_revision_cas"

    def _make_folder(self) -> None:
        """Make (or check) the folders the file goes in."""

    def _prepare(self, db: sqlite3.Connection) -> None:
        """Set the new connection up (its schema)."""

    def _drop_caches(self) -> None:
        """Forget what was read through the connection that is closing."""

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            ino: tuple[int, int] | None = (0, 0)
            if self.path != ":memory:":
                try:
                    st = os.lstat(self.path)
                    ino = (st.st_dev, st.st_ino)
                except FileNotFoundError:
                    ino = None
            if self._db is None or ino is None or ino != self._ino:
                self._open()
            assert self._db is not None
            try:
                yield self._db
            except sqlite3.Error as exc:
                raise MemoryStoreError("unavailable", f"the vector index {self.where} failed: {exc}") from exc

    def _open(self) -> None:
        self.close()
        memory = self.path == ":memory:"
        options: dict[str, Any] = {"timeout": self.busy_timeout, "isolation_level": None, "check_same_thread": False}
        try:
            if memory:
                db = sqlite3.connect(":memory:", **options)
            else:
                self._make_folder()
                # a link, FIFO or hard link planted as the file (or its -wal/-shm) is refused, never written through
                db = connect_local_sqlite(self.path, root=self.root, wal=True, **options)
        except (OSError, sqlite3.Error) as exc:
            raise MemoryStoreError("unavailable", f"cannot open the vector index {self.where}: {exc}") from exc
        try:
            self._prepare(db)
            st = None if memory else os.lstat(self.path)
        except (OSError, sqlite3.Error) as exc:
            db.close()
            raise MemoryStoreError(
                "unavailable",
                f"cannot open the vector index {self.where}: {exc} (it is derived: delete it and refresh)",
            ) from exc
        self._db, self._ino = db, (0, 0) if st is None else (st.st_dev, st.st_ino)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
            self._db = None
            self._drop_caches()

    @staticmethod
    @contextmanager
    def _writing(db: sqlite3.Connection) -> Iterator[None]:
        """One write transaction: the revision is read and bumped under SQLite's write lock."""
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


class SqliteVectorIndex(SideTable):
    """The embedded :class:`VectorIndex`: one SQLite file, shared by processes (module docstring)."""

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout: float = 10.0, root: str | os.PathLike[str] | None = None
    ) -> None:
        super().__init__(os.fspath(path), os.fspath(path), busy_timeout, None if root is None else os.fspath(root))
        self._loaded: dict[str, _Loaded] = {}

    @property
    def name(self) -> str:
        return "gitmem-sqlite-vectors-v1"

    def _make_folder(self) -> None:
        if self.root is None:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), mode=0o700, exist_ok=True)

    def _prepare(self, db: sqlite3.Connection) -> None:
        db.execute("PRAGMA synchronous=NORMAL")  # derived state: a lost last mutation is a refresh away
        db.executescript(_SCHEMA)

    def _drop_caches(self) -> None:
        self._loaded.clear()

    # -- reads --

    def status(self) -> IndexStatus:
        with self._conn() as db:
            revision = db.execute("SELECT value FROM meta WHERE key='revision'").fetchone()[0]
            parts = db.execute("SELECT count(*) FROM partitions").fetchone()[0]
            count = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
        return IndexStatus(self.name, self.consistency, int(revision), int(parts), int(count))

    def partition(self, partition: str) -> PartitionState | None:
        with self._conn() as db:
            row = db.execute(
                "SELECT generation, commit_id, revision, dimension, published_at FROM partitions WHERE name=?",
                (partition,),
            ).fetchone()
            if row is None:
                return None
            count = db.execute("SELECT count(*) FROM vectors WHERE partition=?", (partition,)).fetchone()[0]
        return PartitionState(partition, row[0], row[1], int(row[2]), int(count), int(row[3]), float(row[4]))

    def entries(self, partition: str) -> dict[str, tuple[int, str]]:
        with self._conn() as db:
            rows = db.execute("SELECT node_id, revision, digest FROM vectors WHERE partition=?", (partition,))
            return {r[0]: (int(r[1]), r[2]) for r in rows}

    def check(self, partition: str) -> str | None:
        try:
            with self._conn() as db:
                damage = [r[0] for r in db.execute("PRAGMA quick_check(3)").fetchall() if r[0] != "ok"]
                if damage:
                    return f"the vector index {self.path} is damaged: {'; '.join(damage)}"[:500]
                row = db.execute("SELECT dimension FROM partitions WHERE name=?", (partition,)).fetchone()
                if row is None:
                    return None
                bad = db.execute(
                    "SELECT count(*) FROM vectors WHERE partition=? AND (typeof(vector) != 'blob' OR length(vector) != ?)",
                    (partition, 4 * int(row[0])),
                ).fetchone()[0]
        except MemoryStoreError as exc:
            return exc.message[:500]
        except (TypeError, ValueError) as exc:
            return f"the vector index {self.path} is damaged: {exc}"[:500]
        if bad:
            return f"the vector index {self.path} holds {bad} vectors of partition {partition!r} that are not {row[0]}-dimensional"
        return None

    # -- the one mutation --

    def mutate(
        self,
        partition: str,
        *,
        generation: str,
        commit: str,
        upsert: Sequence[VectorRecord] = (),
        delete: Sequence[NodeRef] = (),
        expected_revision: int | None = None,
    ) -> int:
        rows, dims = check_mutation(partition, generation, upsert)
        with self._conn() as db, self._writing(db):
            revision = claim_revision(db, expected_revision)
            row = db.execute("SELECT generation, dimension FROM partitions WHERE name=?", (partition,)).fetchone()
            dimension = next(iter(dims)) if dims else (row[1] if row is not None else 0)
            if row is None or row[0] != generation:
                db.execute("DELETE FROM vectors WHERE partition=?", (partition,))
            elif (
                dims
                and row[1]
                and dimension != row[1]
                and db.execute("SELECT 1 FROM vectors WHERE partition=? LIMIT 1", (partition,)).fetchone()
            ):
                raise MemoryStoreError(
                    "invalid_query", f"partition {partition!r} holds {row[1]}-dimensional vectors, not {dimension}"
                )
            db.executemany(
                "DELETE FROM vectors WHERE partition=? AND node_id=? AND revision=?",
                [(partition, d.node_id, int(d.revision)) for d in delete],
            )
            db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?)",
                [(partition, i, rev, dig, _blob(v)) for i, rev, dig, v in rows],
            )
            revision += 1
            db.execute("UPDATE meta SET value=? WHERE key='revision'", (revision,))
            db.execute(
                "INSERT OR REPLACE INTO partitions VALUES (?, ?, ?, ?, ?, ?)",
                (partition, generation, commit, revision, dimension, time.time()),
            )
        return revision

    # -- queries --

    def _matrix(self, db: sqlite3.Connection, partition: str, generation: str) -> _Loaded | None:
        row = db.execute("SELECT revision, generation, dimension FROM partitions WHERE name=?", (partition,)).fetchone()
        if row is None or row[1] != generation:
            return None
        loaded = self._loaded.get(partition)
        if loaded is not None and loaded.revision == row[0] and loaded.generation == generation:
            return loaded
        import numpy as np

        ids, revisions, digests, blobs = [], [], [], []
        for node_id, rev, dig, blob in db.execute(
            "SELECT node_id, revision, digest, vector FROM vectors WHERE partition=?", (partition,)
        ):
            ids.append(node_id)
            revisions.append(int(rev))
            digests.append(dig)
            blobs.append(blob)
        dim = int(row[2]) or 1
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), dim) if ids else np.zeros((0, dim))
        loaded = _Loaded(int(row[0]), generation, ids, revisions, digests, matrix.astype(np.float32, copy=False))
        self._loaded[partition] = loaded
        return loaded

    def query(
        self, partition: str, generation: str, vector: Sequence[float], *, limit: int, min_score: float = 0.0
    ) -> list[VectorHit]:
        import numpy as np

        with self._conn() as db:
            loaded = self._matrix(db, partition, generation)
        if loaded is None or not loaded.ids or limit <= 0:
            return []
        query = np.asarray(check_vector(vector, loaded.matrix.shape[1]), dtype=np.float32)
        # einsum, not BLAS: a BLAS gemv spins threads a shared 2-core machine cannot give it
        sims = np.einsum("ij,j->i", loaded.matrix, query)
        n = len(loaded.ids)
        top = min(limit, n)
        part = np.argpartition(-sims, top - 1)[:top] if top < n else np.arange(n)
        ids = loaded.ids
        out = []
        for r in sorted(part.tolist(), key=lambda r: (-float(sims[r]), ids[r])):  # ties by id: deterministic
            score = float(sims[r])
            if score < min_score or score <= 0.0:
                break
            out.append(VectorHit(loaded.ids[r], loaded.revisions[r], loaded.digests[r], score))
        return out
