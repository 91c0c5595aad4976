"""Recall snapshots shared across processes: keyed by commit, under the history generation, caught up by diff.

Record, session and durable recall each save what they indexed beside the
repository; a new handle (a new process) resumes from it and reads only what
changed since. Snapshots hold texts, so they follow the erasure rule: none is
loaded under another history generation, and none is published when the
generation moved while it was made.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitmem import SyncGitFileStore, catchup, derived
from gitmem.durable.recall import RecallPolicy
from gitmem.durable.repository import DurableRepository
from gitmem.records import RecordStore
from gitmem.session.location import open_session_memory
from tests.durable.support import NS, change, create


def bump(mount: str, text: str) -> None:
    """What purge and forget do to the stamp (the text is theirs to choose)."""
    with open(os.path.join(mount, "gitmem", "generation"), "w") as f:
        f.write(text)


def test_publish_refuses_when_the_generation_moves_before_or_after_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mount = tmp_path / "m.git"
    (mount / "gitmem").mkdir(parents=True)
    stamp = str(mount / "gitmem" / "generation")
    target = tmp_path / "snap.json"
    seen = derived.Generation.read(stamp)
    bump(str(mount), "g2")  # moved before the write: nothing written
    assert not catchup.publish_json(target, {"a": 1}, seen)
    assert not target.exists()
    seen = derived.Generation.read(stamp)
    real = catchup._write_json

    def write_then_erase(*args: object) -> None:
        real(*args)  # type: ignore[arg-type]
        bump(str(mount), "g3")  # moved between the rename and the check after it

    monkeypatch.setattr(catchup, "_write_json", write_then_erase)
    assert not catchup.publish_json(target, {"a": 1}, seen)
    assert not target.exists() and [p.name for p in tmp_path.iterdir()] == ["m.git"]
    monkeypatch.undo()
    assert catchup.publish_json(target, {"a": 1}, derived.Generation.read(stamp))
    assert target.exists()


def test_a_stamp_that_is_not_a_regular_file_never_matches(tmp_path: Path) -> None:
    stamp = tmp_path / "generation"
    assert derived.Generation.read(stamp).value is None
    stamp.write_text("abc\n")
    assert derived.Generation.read(stamp).value == "abc\n"
    stamp.unlink()
    os.mkfifo(stamp)  # never opened blocking, never equal
    assert derived.Generation.read(stamp).value != derived.Generation.read(stamp).value


@pytest.fixture
def records(tmp_path: Path) -> SyncGitFileStore:
    store = SyncGitFileStore.init(tmp_path / "r.git", kind="record")
    rs = RecordStore(store, "alice")
    for text in ["prefers green tea", "works at the Berlin office", "has a dog named Rex"]:
        rs.add(text)
    assert [r.text for r in rs.search("dog")] == ["has a dog named Rex"]
    return store


def test_a_new_record_handle_resumes_and_catches_up_by_diff(records: SyncGitFileStore) -> None:
    RecordStore(records, "alice").add("drives a blue bicycle")
    fresh = RecordStore(records, "alice")
    assert [r.text for r in fresh.search("bicycle")] == ["drives a blue bicycle"]
    recall = fresh._recall_index()
    assert recall.resumed_from_snapshot and recall.full_rebuilds == 0


def test_a_record_snapshot_of_another_generation_is_not_loaded(records: SyncGitFileStore) -> None:
    bump(records.path, "after a forget\n")
    fresh = RecordStore(records, "alice")
    assert [r.text for r in fresh.search("dog")] == ["has a dog named Rex"]
    recall = fresh._recall_index()
    assert not recall.resumed_from_snapshot and recall.full_rebuilds == 1
    again = RecordStore(records, "alice")  # the rebuild saved one under the new stamp
    again.search("dog")
    assert again._recall_index().resumed_from_snapshot


def test_a_record_snapshot_made_while_the_generation_moved_is_not_published(
    records: SyncGitFileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot = RecordStore(records, "alice").snapshot
    assert snapshot is not None and os.path.exists(snapshot)
    os.unlink(snapshot)
    real = derived._read
    reads = {"n": 0}

    def moving(path: str) -> str | None:
        reads["n"] += 1
        return real(path) if reads["n"] == 1 else "erased meanwhile"  # the first read is the refresh's

    monkeypatch.setattr(derived, "_read", moving)
    fresh = RecordStore(records, "alice")
    assert [r.text for r in fresh.search("tea")] == ["prefers green tea"]
    assert not os.path.exists(snapshot)


def test_a_forget_leaves_no_record_snapshot_and_the_next_one_is_of_the_new_history(records: SyncGitFileStore) -> None:
    rs = RecordStore(records, "alice")
    rex = rs.search("dog")[0]
    path = rs._path(rex.id)
    records.forget(path)
    folder = os.path.join(records.path, "gitmem", "recall")
    assert not os.path.isdir(folder) or not os.listdir(folder)
    fresh = RecordStore(records, "alice")
    assert fresh.search("dog") == []
    recall = fresh._recall_index()
    assert not recall.resumed_from_snapshot
    with open(fresh.snapshot or "", encoding="utf-8") as f:
        saved = f.read()
    assert "Rex" not in saved and derived.Generation.read(records.generation_file).value is not None


def durable_repo(path: Path) -> DurableRepository:
    store = SyncGitFileStore.open(path) if path.exists() else SyncGitFileStore.init(path, kind="durable")
    return DurableRepository(store)


def test_durable_recall_resumes_from_its_snapshot_in_a_new_handle(tmp_path: Path) -> None:
    mount = tmp_path / "d.git"
    repo = durable_repo(mount)
    repo.apply(
        change(
            "k1",
            create("n1", "the deploy key lives in the vault", status="active"),
            create("n2", "standups are at nine", status="active"),
            create("n3", "a candidate about the vault", status="candidate"),
        )
    )
    first = [h.node.id for h in repo.recall(NS, "vault key").hits]
    assert first == ["n1"]
    fresh = durable_repo(mount)
    answer = fresh.recall(NS, "vault key", RecallPolicy(max_results=5))
    assert [h.node.id for h in answer.hits] == first
    assert answer.hits[0].node.content == "the deploy key lives in the vault"
    engine = fresh._recalls[NS]
    assert engine.recall.resumed_from_snapshot and engine.recall.full_rebuilds == 0
    # a change made by another handle is caught up by tree diff
    repo.apply(change("k2", create("n4", "the vault moved to the second floor", status="active")))
    assert {h.node.id for h in fresh.recall(NS, "vault").hits} == {"n1", "n4"}
    assert engine.recall.full_rebuilds == 0


def test_durable_snapshot_is_not_used_under_another_generation(tmp_path: Path) -> None:
    mount = tmp_path / "d.git"
    repo = durable_repo(mount)
    repo.apply(change("k1", create("n1", "the deploy key lives in the vault", status="active")))
    repo.recall(NS, "vault")
    bump(str(mount), "purged\n")
    fresh = durable_repo(mount)
    assert [h.node.id for h in fresh.recall(NS, "vault").hits] == ["n1"]
    engine = fresh._recalls[NS]
    assert not engine.recall.resumed_from_snapshot and engine.recall.full_rebuilds == 1


def test_session_catalogue_snapshot_follows_the_generation(tmp_path: Path) -> None:
    memory = open_session_memory(tmp_path / "mem")
    memory.remember("the build needs python 3.11", tags=["build"])
    assert memory.recall_similar("python build")
    mount = memory.catalogue.store.path  # type: ignore[attr-defined]
    again = open_session_memory(tmp_path / "mem")
    assert again.recall_similar("python build")
    assert again.catalogue.resumed_from_snapshot
    bump(mount, "forgotten\n")
    third = open_session_memory(tmp_path / "mem")
    assert third.recall_similar("python build")
    assert not third.catalogue.resumed_from_snapshot
