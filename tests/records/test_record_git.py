"""Records in a git record mount: readable files, history with times, restore, forget, purge."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

from contract.support import assert_fsck_clean, error_of, git

from gitmem.records import RecordStore


def test_a_record_is_a_readable_file_git_can_show(git_backend: Any) -> None:
    store = RecordStore(git_backend, "alice")
    record = store.add("prefers green tea")
    (path,) = [e.path for e in git_backend.list() if e.path.endswith(".md")]
    assert re.fullmatch(rf"alice/[0-9a-f]{{2}}/{record.id}\.md", path)
    assert git_backend.read("alice/last-id").text == record.id + "\n"  # moved in the same commit
    trailers = git(git_backend.path, "log", "-1", "--format=%(trailers)").stdout
    assert f"Gitmem-Op: record-add\nGitmem-Path: {path}\n" in trailers or f"Gitmem-Path: {path}" in trailers
    assert f"Gitmem-Record-Id: {record.id}" in trailers and "Gitmem-Record-Namespace: alice" in trailers
    assert git(git_backend.path, "rev-list", "--count", "main").stdout.strip() == "2"  # init + one add
    shown = git(git_backend.path, "show", f"main:{path}").stdout
    assert shown.startswith(f"---\nid: {record.id}\ncreated: ") and shown.endswith("\n---\nprefers green tea\n")
    store.update(record.id, "prefers oolong tea")
    diff = git(git_backend.path, "diff", "main~1", "main", "--", path).stdout
    assert "-prefers green tea" in diff and "+prefers oolong tea" in diff
    assert_fsck_clean(git_backend.path)


def test_history_has_times_for_every_change(git_backend: Any) -> None:
    """mem0's history had no timestamps; every record change here is a dated commit."""
    store = RecordStore(git_backend, "alice")
    record = store.add("prefers green tea")
    store.update(record.id, "prefers oolong tea")
    store.delete(record.id)
    entries = store.log(record.id)
    assert [e.op for e in entries] == ["record-delete", "record-update", "record-add"]
    assert all(e.time.tzinfo is not None for e in entries)
    assert [e.time for e in entries] == sorted((e.time for e in entries), reverse=True)
    assert len(store.log()) == 3  # the namespace's whole history
    assert RecordStore(git_backend, "bob").log() == []


def test_a_deleted_record_can_be_restored_from_history(git_backend: Any) -> None:
    store = RecordStore(git_backend, "alice")
    record = store.add("prefers green tea")
    store.delete(record.id)
    added = store.log(record.id)[-1].commit
    restored = store.restore(record.id, added)
    assert restored is not None and restored.text == "prefers green tea"
    assert [r.id for r in store.search("green tea")] == [record.id]
    assert error_of(store.restore, "not-an-id", added).code == "record_not_found"


def test_restoring_a_record_to_before_it_existed_deletes_only_when_asked(git_backend: Any) -> None:
    store = RecordStore(git_backend, "alice")
    before = git_backend.head()
    record = store.add("prefers green tea")
    head = git_backend.head()
    assert error_of(store.restore, record.id, before).code == "not_found"
    assert git_backend.head() == head and store.get(record.id).text == "prefers green tea"
    assert store.restore(record.id, before, delete=True) is None
    assert error_of(store.get, record.id).code == "record_not_found"
    assert_fsck_clean(git_backend.path)


def test_forget_erases_one_record_from_all_history(git_backend: Any) -> None:
    store = RecordStore(git_backend, "alice")
    secret = store.add("lives at 12 Secret Street")
    kept = store.add("prefers green tea")
    store.update(secret.id, "lives at 12 Secret Street, flat 3")
    store.forget(secret.id)
    everything = git(git_backend.path, "log", "--all", "-p").stdout
    assert "Secret Street" not in everything and "prefers green tea" in everything
    assert [r.id for r in store.list().records] == [kept.id]
    assert store.search("secret street") == []
    assert error_of(store.forget, secret.id).code == "record_not_found"
    assert_fsck_clean(git_backend.path)


def test_purge_erases_the_namespace_history_and_keeps_the_others(git_backend: Any) -> None:
    alice = RecordStore(git_backend, "alice")
    bob = RecordStore(git_backend, "bob")
    a = alice.add("alice drinks green tea")
    alice.update(a.id, "alice drinks jasmine tea")
    bob.add("bob drinks black coffee")
    alice.purge()
    everything = git(git_backend.path, "log", "--all", "-p").stdout
    assert "alice drinks" not in everything and "bob drinks black coffee" in everything
    # No object of the purged namespace survives anywhere in the repository.
    objects = subprocess.run(
        ["git", "-C", git_backend.path, "cat-file", "--batch-all-objects", "--batch"], capture_output=True, check=True
    ).stdout
    assert b"alice drinks" not in objects and b"bob drinks" in objects
    assert alice.list().records == () and alice.search("drinks tea") == []
    assert alice.log() == [] and alice.log(a.id) == [] and len(bob.log()) == 1
    assert [r.text for r in bob.search("drinks coffee")] == ["bob drinks black coffee"]
    assert_fsck_clean(git_backend.path)


def test_commit_messages_name_records_by_id_and_never_carry_their_text(git_backend: Any) -> None:
    """So a purge, which keeps the emptied commits' messages, leaves no record text in them."""
    alice = RecordStore(git_backend, "alice")
    a = alice.add("alice drinks green tea")
    alice.update(a.id, "alice drinks jasmine tea")
    alice.delete(alice.add("alice owns a red bicycle").id)
    messages = git(git_backend.path, "log", "--all", "--format=%B").stdout
    assert a.id in messages and "drinks" not in messages and "bicycle" not in messages
    alice.purge()
    messages = git(git_backend.path, "log", "--all", "--format=%B").stdout
    assert "drinks" not in messages and "bicycle" not in messages


def test_a_file_mount_is_refused_by_kind(tmp_path: Any) -> None:
    from gitmem import Root

    root = Root(tmp_path)
    files = root.mount("notes", create=True)
    assert files.kind == "file"
    assert error_of(root.mount, "notes", kind="record").code == "wrong_kind"
    records = root.mount("facts", create=True, kind="record")
    assert RecordStore(records.sync, "alice").kind == "record"


def test_a_new_process_resumes_search_from_the_snapshot(git_backend: Any) -> None:
    store = RecordStore(git_backend, "alice")
    for i in range(5):
        store.add(f"fact {i} about tea")
    assert len(store.search("tea")) == 5  # the first search builds the index and saves it
    assert store.snapshot is not None and os.path.exists(store.snapshot)
    later = store.add("a later fact about tea")
    again = RecordStore(git_backend, "alice")  # as a new process would
    assert len(again.search("tea", limit=10)) == 6  # resumed, then caught up with the later add
    assert again._recall is not None and again._recall.resumed_from_snapshot
    again.delete(later.id)
    assert later.id not in {r.id for r in again.search("tea", limit=10)}


def test_purge_and_forget_delete_the_snapshot_that_holds_the_texts(git_backend: Any) -> None:
    alice, bob = RecordStore(git_backend, "alice"), RecordStore(git_backend, "bob")
    secret = alice.add("lives at 12 Secret Street")
    alice.add("prefers green tea")
    bob.add("bob likes tea")
    alice.search("street")
    bob.search("tea")
    assert alice.snapshot is not None and bob.snapshot is not None
    assert "Secret Street" in Path(alice.snapshot).read_text(encoding="utf-8")
    alice.forget(secret.id)
    assert not os.path.exists(alice.snapshot)
    alice.search("tea")  # rebuilt without the forgotten record, saved again
    assert "Secret Street" not in Path(alice.snapshot).read_text(encoding="utf-8")
    alice.purge()
    assert not os.path.exists(alice.snapshot)  # (a git purge or forget drops every recall snapshot: all derived)
    leftovers = [p for p in Path(git_backend.path).rglob("*") if p.is_file() and b"green tea" in p.read_bytes()]
    assert leftovers == []
    assert [r.text for r in RecordStore(git_backend, "bob").search("tea")] == ["bob likes tea"]


def test_forget_or_purge_through_the_file_store_also_drop_record_snapshots(git_backend: Any) -> None:
    """An admin erasing a record file directly (gitmem forget / purge) leaves no snapshot holding its text."""
    alice = RecordStore(git_backend, "alice")
    record = alice.add("lives at 12 Secret Street")
    alice.search("street")
    assert alice.snapshot is not None and os.path.exists(alice.snapshot)
    git_backend.forget(alice.folder)
    assert not os.path.exists(alice.snapshot)
    assert RecordStore(git_backend, "alice").search("street") == []
    alice.add("prefers green tea")
    alice.search("tea")
    git_backend.purge()
    assert not os.path.exists(alice.snapshot)
    assert error_of(alice.get, record.id).code == "record_not_found"
