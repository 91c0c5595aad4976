"""A derived file built before a forget is never left on disk after it (:mod:`gitmem.derived`), per store.

Each test starts a real process that reads the mount and then stops right
before it renames its derived file into place (its ``os.replace`` waits for a
flag file). The parent forgets the text meanwhile, then lets the writer go.
Whatever the order, no file of the mount may hold the erased text once both
are done, and the next reader rebuilds without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitmem import GitFileStore
from gitmem.records import RecordStore
from gitmem.session import SessionMemory

SECRET = "Dana lives at 4 Elm Road"
WAIT = 60.0

WORKER = r"""
import os, sys, time
from pathlib import Path
kind, repo, flags = sys.argv[1:]

def hold():
    Path(flags, "ready").touch()
    deadline = time.monotonic() + 60
    while not Path(flags, "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)

from gitmem import GitFileStore
store = GitFileStore.open(repo).sync
if kind == "records":
    from gitmem import catchup
    from gitmem.records import RecordStore
    real_publish = catchup.publish_json

    def held_publish(*args, **kwargs):
        hold()  # the records are read; the snapshot is about to be written
        return real_publish(*args, **kwargs)

    catchup.publish_json = held_publish
    RecordStore(store, namespace="people").search("Elm Road")
else:
    from gitmem import catchup
    from gitmem.session import SessionMemory
    real_write = catchup._write_json

    def held_write(*args, **kwargs):
        hold()  # the items are read and the stamp checked; the catalogue is about to be written
        return real_write(*args, **kwargs)

    catchup._write_json = held_write
    SessionMemory(store, catalogue_file=os.path.join(repo, "gitmem", "derived", "session-catalogue.json")).refresh()
"""


def _holders(repo: str) -> list[str]:
    found = []
    for folder, _, files in os.walk(os.path.join(repo, "gitmem")):
        for name in files:
            path = os.path.join(folder, name)
            try:
                if SECRET.encode() in Path(path).read_bytes():
                    found.append(os.path.relpath(path, repo))
            except OSError:
                continue
    return found


def _race(tmp_path: Path, repo: str, kind: str, erase: object) -> None:
    flags = tmp_path / "flags"
    flags.mkdir()
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, kind, repo, str(flags)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + WAIT
        while not (flags / "ready").exists():
            assert worker.poll() is None, worker.communicate()
            assert time.monotonic() < deadline, "the worker never reached its write"
            time.sleep(0.01)
        assert callable(erase)
        erase()  # the worker has read the text and is about to publish its file
        (flags / "go").touch()
        _, err = worker.communicate(timeout=WAIT)
        assert worker.returncode == 0, err
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert _holders(repo) == []


@pytest.mark.parametrize("late", [False, True], ids=["forget-first", "write-first"])
def test_a_record_recall_snapshot_read_before_a_forget_is_not_left_after_it(tmp_path: Path, late: bool) -> None:
    store = GitFileStore.init(tmp_path / "rec.git", kind="record").sync
    records = RecordStore(store, namespace="people")
    secret = records.add(SECRET)
    records.add("Bo likes tea")

    def erase() -> None:
        if late:  # let the worker finish renaming first: the forget's own deletion must remove it
            (tmp_path / "flags" / "go").touch()
            time.sleep(0.5)
        records.forget(secret.id)

    _race(tmp_path, store.path, "records", erase)
    # The next search rebuilds from what is left.
    assert [r.text for r in RecordStore(store, namespace="people").search("Elm Road")] == []


@pytest.mark.parametrize("late", [False, True], ids=["forget-first", "write-first"])
def test_a_session_catalogue_read_before_a_forget_is_not_left_after_it(tmp_path: Path, late: bool) -> None:
    store = GitFileStore.init(tmp_path / "ses.git", kind="session").sync
    memory = SessionMemory(store)
    memory.remember("Bo likes tea")
    memory.remember(SECRET)
    secret_path = next(e.path for e in store.list() if SECRET in store.read(e.path).text)

    def erase() -> None:
        if late:
            (tmp_path / "flags" / "go").touch()
            time.sleep(0.5)
        store.forget(secret_path)

    _race(tmp_path, store.path, "session", erase)
    assert [i.content for i in SessionMemory(store).items()] == ["Bo likes tea"]


STATS_WORKER = r"""
import sys, time
from pathlib import Path
workspace, flags = sys.argv[1:]
from gitmem.session import stats
from gitmem.session.location import open_session_memory
real_append = stats.FileAccessStats._append

def held_append(self, line):
    Path(flags, "ready").touch()  # the items are recalled; their ids are about to be logged
    deadline = time.monotonic() + 60
    while not Path(flags, "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return real_append(self, line)

stats.FileAccessStats._append = held_append
memory = open_session_memory(workspace, create=False)
assert memory.recall_similar("Elm Road"), "the worker recalled nothing"
"""


def _run_held(tmp_path: Path, script: str, args: list[str], erase: object) -> None:
    flags = tmp_path / "flags"
    flags.mkdir()
    worker = subprocess.Popen(
        [sys.executable, "-c", script, *args, str(flags)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + WAIT
        while not (flags / "ready").exists():
            assert worker.poll() is None, worker.communicate()
            assert time.monotonic() < deadline, "the worker never reached its write"
            time.sleep(0.01)
        assert callable(erase)
        erase()
        (flags / "go").touch()
        _, err = worker.communicate(timeout=WAIT)
        assert worker.returncode == 0, err
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_session_access_statistics_read_before_a_forget_do_not_name_the_erased_item(tmp_path: Path) -> None:
    from gitmem.session.location import open_session_memory

    workspace = tmp_path / "ws"
    memory = open_session_memory(workspace)
    secret = memory.remember(SECRET)
    memory.remember("Bo likes tea")
    store = memory.store
    secret_path = next(e.path for e in store.list() if SECRET in store.read(e.path).text)
    stats_file = Path(store.path, "gitmem", "session-stats")  # type: ignore[attr-defined]

    _run_held(tmp_path, STATS_WORKER, [str(workspace)], lambda: store.forget(secret_path))  # type: ignore[attr-defined]

    assert not stats_file.exists() or secret.id not in stats_file.read_text()
    # A recall after the forget is counted again.
    open_session_memory(workspace, create=False).recall_similar("tea")
    assert stats_file.exists() and secret.id not in stats_file.read_text()


LEDGER_WORKER = r"""
import sys, time
from datetime import UTC, datetime, timedelta
from pathlib import Path
folder, revision, flags = sys.argv[1:]
from gitmem.durable import ledger
from gitmem.durable.ledger import AccessEvent
from gitmem.durable.namespace import Namespace
from gitmem.durable.repository import DurableRepository
from gitmem.errors import MemoryStoreError
real_record = ledger.Ledger.record

def held_record(self, *args, **kwargs):
    Path(flags, "ready").touch()  # the node is read and checked; the admission is about to be written
    deadline = time.monotonic() + 60
    while not Path(flags, "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return real_record(self, *args, **kwargs)

ledger.Ledger.record = held_record
repo = DurableRepository.open(folder, "durable")
event = AccessEvent("turn-1/n", Namespace("acme", "alice", "repo-gitmem"), "dana-address", int(revision),
                    datetime.now(UTC) + timedelta(seconds=1))
try:
    repo.record_admission(event)
except MemoryStoreError as exc:
    assert exc.code == "node_not_found", exc
"""


def test_a_durable_admission_read_before_a_forget_is_not_recorded_after_it(tmp_path: Path) -> None:
    from durable.support import NS, activate, change, create

    from gitmem.durable.nodefile import node_path
    from gitmem.durable.repository import DurableRepository

    folder = tmp_path / "d"
    repo = DurableRepository.open(folder, "durable", create=True)
    repo.apply(change("seed", create("dana-address", SECRET), activate("dana-address", 1)))
    revision = repo.node(NS, "dana-address").revision
    store = repo.store
    where = str(store.path)  # type: ignore[attr-defined]

    def erase() -> None:
        store.forget(node_path(NS, "dana-address"))  # type: ignore[attr-defined]

    _run_held(tmp_path, LEDGER_WORKER, [str(folder), str(revision)], erase)

    for suffix in ("", "-wal"):
        held = Path(where, "gitmem", "durable-ledger.sqlite3" + suffix)
        assert not held.exists() or b"dana-address" not in held.read_bytes()


SEMANTIC_WORKER = r"""
import sys, time
from pathlib import Path
root, flags = sys.argv[1:]
from gitmem.durable import DurableRepository
from gitmem.durable.namespace import Namespace
from gitmem.durable.semantic import EmbeddingIdentity, FixtureEmbedder, SemanticRecall
from gitmem.errors import MemoryStoreError

class Held(FixtureEmbedder):
    def embed(self, texts):
        Path(flags, "ready").touch()  # the active nodes are read; their vectors are about to be published
        deadline = time.monotonic() + 60
        while not Path(flags, "go").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return super().embed(texts)

TEXT = "Dana lives at 4 Elm Road"
embedder = Held({TEXT: [1, 0, 0], "Bo likes tea": [0, 1, 0]}, EmbeddingIdentity("fixture", "unit", "r1", 3))
repo = DurableRepository.open(root, "team", semantic_recall=SemanticRecall(embedder))
try:
    repo.refresh_semantic_recall(Namespace("acme", "alice", "repo-gitmem"))
except MemoryStoreError as exc:
    assert exc.code == "unavailable", exc
"""


def test_semantic_vectors_read_before_a_forget_are_not_published_after_it(tmp_path: Path) -> None:
    from durable.support import NS, change, create

    from gitmem.durable.nodefile import node_path
    from gitmem.durable.repository import DurableRepository

    root = tmp_path / "root"
    repo = DurableRepository.open(root, "team", create=True)
    repo.apply(change("seed", create("dana-address", SECRET, status="active"), create("bo-tea", "Bo likes tea", status="active")))
    store = repo.store

    def erase() -> None:
        store.forget(node_path(NS, "dana-address"))  # type: ignore[attr-defined]

    _run_held(tmp_path, SEMANTIC_WORKER, [str(root)], erase)

    semantic = Path(str(store.path), "gitmem", "derived", "semantic")  # type: ignore[attr-defined]
    for file in semantic.rglob("*") if semantic.exists() else ():
        assert b"dana-address" not in file.read_bytes(), file
