"""Durable recall's vector index on LanceDB: the same client code embedded here and on a shared store.

Needs the ``vectors-lance`` extra (``lancedb``, which brings ``pyarrow``), imported
on first use. docs/durable.md says why LanceDB (measured against Qdrant and Milvus
Lite) and how the adapter keeps the contract: LanceDB has no index revision with
compare-and-swap, so a small SQLite side table (``revisions.sqlite3``) holds it and
each partition's **published Lance version**; readers check out that version, so a
writer killed between its Lance commit and the side table's is never served, and
the next writer restores the published version first. Every library failure
becomes ``MemoryStoreError("unavailable")`` where it enters.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final

from gitmem.errors import MemoryStoreError
from gitmem.localfile import local_folder, open_private
from gitmem.recall.vectors import (
    IndexStatus,
    NodeRef,
    PartitionState,
    SideTable,
    VectorHit,
    VectorRecord,
    check_mutation,
    check_vector,
    claim_revision,
)

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta VALUES ('revision', 0);
CREATE TABLE IF NOT EXISTS partitions (
    name TEXT PRIMARY KEY, generation TEXT NOT NULL, commit_id TEXT NOT NULL, revision INTEGER NOT NULL,
    dimension INTEGER NOT NULL, published_at REAL NOT NULL, tbl TEXT NOT NULL, version INTEGER NOT NULL,
    count INTEGER NOT NULL);
"""
_COLUMNS: Final = ["node_id", "revision", "digest"]


def _quote(text: str) -> str:
    """A SQL string literal for a Lance filter (quotes doubled; NUL cannot occur in a node id)."""
    if "\x00" in text:
        raise MemoryStoreError("invalid_query", "a node id cannot hold NUL")
    return "'" + text.replace("'", "''") + "'"


def _delete_filter(delete: Sequence[NodeRef]) -> str:
    """``(revision = R AND node_id IN (...)) OR ...``: grouped by revision, so the expression stays shallow."""
    by_revision: dict[int, list[str]] = {}
    for ref in delete:
        by_revision.setdefault(int(ref.revision), []).append(ref.node_id)
    return " OR ".join(
        f"(revision = {rev} AND node_id IN ({', '.join(_quote(i) for i in sorted(ids))}))"
        for rev, ids in sorted(by_revision.items())
    )


def _table_name(partition: str) -> str:
    return "p-" + hashlib.sha256(partition.encode("utf-8", "surrogatepass")).hexdigest()[:40]


class LanceVectorIndex(SideTable):
    """A :class:`~gitmem.recall.vectors.VectorIndex` on LanceDB (see the module docstring).

    ``folder`` holds the revision bookkeeping and, unless ``uri`` says otherwise,
    the Lance tables (``folder/lance``). ``uri`` and ``connect_options`` go to
    ``lancedb.connect`` unchanged (an object-store URI and its storage options,
    or a LanceDB server and its key).
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        uri: str | None = None,
        connect_options: Mapping[str, Any] | None = None,
        busy_timeout: float = 10.0,
        root: str | os.PathLike[str] | None = None,
    ) -> None:
        self.folder = os.fspath(folder)
        root_path = None if root is None else os.fspath(root)
        super().__init__(os.path.join(self.folder, "revisions.sqlite3"), self.folder, busy_timeout, root_path)
        self.uri = uri if uri is not None else os.path.join(self.folder, "lance")
        self.connect_options = dict(connect_options or {})
        self._lance: Any = None
        self._readers: dict[str, Any] = {}  # table name -> a handle checked out at a published version

    @property
    def name(self) -> str:
        return "gitmem-lancedb-vectors-v1"

    # -- the side table and the Lance connection: both reopened when the folder was deleted --

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        with super()._conn() as db:
            try:
                yield db
            except (MemoryStoreError, sqlite3.Error):
                raise
            except Exception as exc:  # lancedb and pyarrow raise ValueError, OSError, RuntimeError, their own
                raise MemoryStoreError(
                    "unavailable", f"the LanceDB vector index {self.uri} failed: {type(exc).__name__}: {exc}"
                ) from exc

    def _make_folder(self) -> None:
        if self.root is None:
            os.makedirs(self.folder, mode=0o700, exist_ok=True)
            return
        # SQLite and LanceDB open these folders by name themselves: checked here, then opened by path, which a
        # folder swapped for a link in between defeats; neither library takes a folder descriptor to open through.
        local_folder(self.folder, root=self.root)
        if self.uri == os.path.join(self.folder, "lance"):
            local_folder(self.uri, root=self.root)  # LanceDB writes there itself: it must be the mount's

    def _prepare(self, db: sqlite3.Connection) -> None:
        if db.execute("SELECT count(*) FROM sqlite_master WHERE name IN ('meta', 'partitions')").fetchone()[0] < 2:
            db.executescript(_SCHEMA)  # a write: only when the side table is new, so opening never queues

    def _drop_caches(self) -> None:
        self._lance = None
        self._readers.clear()

    def _connect(self) -> Any:
        if self._lance is None:
            import lancedb

            self._lance = lancedb.connect(self.uri, **self.connect_options)
        return self._lance

    # -- reads --

    def status(self) -> IndexStatus:
        with self._conn() as db:
            revision = db.execute("SELECT value FROM meta WHERE key='revision'").fetchone()[0]
            parts, count = db.execute("SELECT count(*), coalesce(sum(count), 0) FROM partitions").fetchone()
        return IndexStatus(self.name, self.consistency, int(revision), int(parts), int(count))

    def partition(self, partition: str) -> PartitionState | None:
        with self._conn() as db:
            row = self._row(db, partition)
        if row is None:
            return None
        return PartitionState(partition, row[0], row[1], int(row[2]), int(row[7]), int(row[3]), float(row[4]))

    @staticmethod
    def _row(db: sqlite3.Connection, partition: str) -> Any:
        return db.execute(
            "SELECT generation, commit_id, revision, dimension, published_at, tbl, version, count "
            "FROM partitions WHERE name=?",
            (partition,),
        ).fetchone()

    def _reader(self, table: str, version: int) -> Any:
        """The partition's table as published: a cached handle, checked out again when the version moved."""
        handle = self._readers.get(table)
        if handle is None:
            handle = self._connect().open_table(table)
            self._readers[table] = handle
        if handle.version != version:
            handle.checkout(version)
        return handle

    def entries(self, partition: str) -> dict[str, tuple[int, str]]:
        with self._conn() as db:
            row = self._row(db, partition)
            if row is None or not row[6]:
                return {}
            data = self._reader(row[5], int(row[6])).search().select(_COLUMNS).limit(None).to_arrow().to_pydict()
        return {i: (int(r), d) for i, r, d in zip(data["node_id"], data["revision"], data["digest"], strict=True)}

    def query(
        self, partition: str, generation: str, vector: Sequence[float], *, limit: int, min_score: float = 0.0
    ) -> list[VectorHit]:
        with self._conn() as db:
            row = self._row(db, partition)
            if row is None or row[0] != generation or not row[6] or not row[7] or limit <= 0:
                return []
            query = check_vector(vector, int(row[3]))
            found = (
                self._reader(row[5], int(row[6]))
                .search(list(query))
                .distance_type("dot")  # Lance's dot distance is 1 - the dot product
                .select([*_COLUMNS, "_distance"])
                .limit(limit)
                .to_arrow()
                .to_pydict()
            )
        scored = sorted(
            (1.0 - float(d), i, int(r), g)
            for i, r, g, d in zip(found["node_id"], found["revision"], found["digest"], found["_distance"], strict=True)
        )
        scored.sort(key=lambda s: (-s[0], s[1]))  # ties by id: deterministic, like the embedded default
        return [VectorHit(i, r, g, s) for s, i, r, g in scored if s >= min_score and s > 0.0]

    def check(self, partition: str) -> str | None:
        try:
            with self._conn() as db:
                damage = [r[0] for r in db.execute("PRAGMA quick_check(3)").fetchall() if r[0] != "ok"]
                if damage:
                    return f"the vector index's side table {self.path} is damaged: {'; '.join(damage)}"[:500]
                row = self._row(db, partition)
                if row is None or not row[6]:
                    return None
                handle = self._reader(row[5], int(row[6]))
                count = int(handle.count_rows())
                field = handle.schema.field("vector").type
        except MemoryStoreError as exc:
            return exc.message[:500]
        if count != int(row[7]):
            return f"the LanceDB table of partition {partition!r} holds {count} vectors, its bookkeeping {int(row[7])}"
        if getattr(field, "list_size", None) != int(row[3]):
            return f"the LanceDB table of partition {partition!r} does not hold {int(row[3])}-dimensional vectors"
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
        for node_id, *_ in rows:
            _quote(node_id)
        where = _delete_filter(delete) if delete else ""
        with self._conn() as db, self._writer(), self._writing(db):
            return self._mutate(db, partition, generation, commit, rows, dims, where, expected_revision)

    @contextmanager
    def _writer(self) -> Iterator[None]:
        """Writers queue on a ``flock`` first: a Lance commit holds the lock for a while, and SQLite's
        busy wait (polling) can starve a writer behind others that take it back at once."""
        try:
            fd = open_private(os.path.join(self.folder, "write.lock"), os.O_RDWR | os.O_CREAT)  # no link, no FIFO
        except OSError as exc:
            raise MemoryStoreError(
                "unavailable", f"cannot open the vector index's lock in {self.folder}: {exc}"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released by close, also when the process is killed
            yield
        finally:
            os.close(fd)

    def _mutate(
        self,
        db: sqlite3.Connection,
        partition: str,
        generation: str,
        commit: str,
        rows: list[tuple[str, int, str, Any]],
        dims: set[int],
        where: str,
        expected_revision: int | None,
    ) -> int:
        revision = claim_revision(db, expected_revision)
        row = self._row(db, partition)
        table = _table_name(partition)
        same = row is not None and row[0] == generation and bool(row[6])
        held = int(row[3]) if same and row[7] else 0
        dimension = next(iter(dims)) if dims else (int(row[3]) if row is not None else 0)
        if dims and held and dimension != held:
            raise MemoryStoreError(
                "invalid_query", f"partition {partition!r} holds {held}-dimensional vectors, not {dimension}"
            )
        lance = self._connect()
        if same and held:  # change the published table: deletes and upserts as one commit
            assert row is not None
            handle = lance.open_table(table)
            if handle.version != int(row[6]):
                handle.restore(int(row[6]))  # a killed writer's unpublished commit is discarded
            if rows:
                merge = handle.merge_insert("node_id").when_matched_update_all().when_not_matched_insert_all()
                if where:
                    merge = merge.when_not_matched_by_source_delete(where)
                merge.execute(self._arrow(rows, dimension))
            elif where:
                handle.delete(where)
            version, count = int(handle.version), int(handle.count_rows())
        elif rows:  # a new partition or generation (or an empty one filled): the table is replaced whole
            exists = self._exists(lance, table)
            handle = lance.create_table(
                table, data=self._arrow(rows, dimension), mode="overwrite" if exists else "create"
            )
            version, count = int(handle.version), int(handle.count_rows())
        else:  # nothing to hold: an empty partition needs no table version
            version, count = 0, 0
        revision += 1
        db.execute("UPDATE meta SET value=? WHERE key='revision'", (revision,))
        db.execute(
            "INSERT OR REPLACE INTO partitions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (partition, generation, commit, revision, dimension, time.time(), table, version, count),
        )
        return revision

    # -- upkeep --

    def optimize(self, *, keep_seconds: float = 600.0) -> int:
        """Compact every partition's table and delete its versions older than ``keep_seconds``; how many tables.

        Each refresh adds a Lance version (new fragments, deletion files); nothing
        is reclaimed until this runs. The content and the index revision stay the
        same (a refresh's compare-and-swap is not disturbed): only the published
        version moves to the compacted one. ``keep_seconds`` leaves older versions
        to readers in other processes that may still be querying them.
        """
        from datetime import timedelta

        if not isinstance(keep_seconds, (int, float)) or not keep_seconds >= 1:
            raise MemoryStoreError("invalid_query", "keep_seconds must be 1 second or more (readers may be at them)")
        done = 0
        with self._conn() as db, self._writer():
            for name, table, version in db.execute(
                "SELECT name, tbl, version FROM partitions WHERE version > 0"
            ).fetchall():
                with self._writing(db):
                    handle = self._connect().open_table(table)
                    if handle.version != int(version):
                        handle.restore(int(version))
                    handle.optimize(cleanup_older_than=timedelta(seconds=keep_seconds))
                    db.execute("UPDATE partitions SET version=? WHERE name=?", (int(handle.version), name))
                done += 1
        return done

    @staticmethod
    def _exists(lance: Any, table: str) -> bool:
        try:
            lance.open_table(table)
        except ValueError:  # lancedb: "Table '...' was not found"
            return False
        return True

    @staticmethod
    def _arrow(rows: list[tuple[str, int, str, Any]], dimension: int) -> Any:
        import pyarrow as pa

        # array('f') holds native float32s, as Arrow buffers do: the bytes go over without a copy per value
        flat = pa.Array.from_buffers(
            pa.float32(), len(rows) * dimension, [None, pa.py_buffer(b"".join(v.tobytes() for *_, v in rows))]
        )
        schema = pa.schema(
            [
                ("node_id", pa.string()),
                ("revision", pa.int64()),
                ("digest", pa.string()),
                ("vector", pa.list_(pa.float32(), dimension)),
            ]
        )
        return pa.table(
            {
                "node_id": [r[0] for r in rows],
                "revision": [r[1] for r in rows],
                "digest": [r[2] for r in rows],
                "vector": pa.FixedSizeListArray.from_arrays(flat, dimension),
            },
            schema=schema,
        )


def lance_index_in(folder: str | None) -> LanceVectorIndex:
    """An :class:`LanceVectorIndex` in a mount's semantic folder (``SemanticRecall(index_factory=...)``).

    A store without a folder has nowhere to keep Lance tables: refused as ``unavailable``.
    """
    if folder is None:
        raise MemoryStoreError("unavailable", "the LanceDB vector index needs a folder (a git mount)")
    from gitmem.durable.semantic import mount_of

    return LanceVectorIndex(os.path.join(folder, "lancedb"), root=mount_of(folder))
