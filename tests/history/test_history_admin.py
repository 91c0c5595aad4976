"""fsck and gc wrap git's own integrity check and packing; every call also works async."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError, SyncGitFileStore
from tests.loosen import loosen

from .conftest import Git


def test_fsck_is_clean_on_gitmem_commits_and_reports_damage(store: SyncGitFileStore, git: Git) -> None:
    store.write("a.md", "content\n", expected=None)
    loosen(store.path)  # a loose object to damage (writes are packed)
    report = store.fsck()
    assert report.ok, report.messages

    blob = store.read("a.md").version
    loose = Path(store.path, "objects", blob[:2], blob[2:])
    os.chmod(loose, 0o644)
    loose.write_bytes(b"not a zlib stream")

    broken = store.fsck()
    assert not broken.ok
    assert any(blob in m for m in broken.messages)


def test_gc_packs_loose_objects_and_the_store_keeps_working(store: SyncGitFileStore, git: Git) -> None:
    v = store.write("a.md", "one\n", expected=None)
    v = store.write("a.md", "two\n", expected=v)

    report = store.gc()

    # The root commit is loose; each write is a small pack of its own (gitmem.git.packwrite).
    assert report.before.loose > 0 and report.before.packs == 2
    assert report.after.loose == 0 and report.after.packs == 1 and report.after.packed >= report.before.loose + 6
    assert store.read("a.md").text == "two\n"
    store.write("a.md", "three\n", expected=v)
    assert [e.op for e in store.log("a.md")] == ["edit", "edit", "create"]
    assert store.fsck().ok


def test_history_calls_on_a_deleted_memory(store: SyncGitFileStore) -> None:
    store.write("a.md", "x\n", expected=None)
    head = store.head()
    shutil.rmtree(store.path)
    calls = (
        store.fsck,
        store.gc,
        store.log,
        lambda: store.show(head, "a.md"),
        lambda: store.diff(head),
        lambda: store.blame("a.md"),
        lambda: store.restore("a.md", head, expected=None),
        lambda: store.revert(head),
        lambda: store.forget("a.md"),
    )
    for call in calls:
        with pytest.raises(MemoryStoreError) as err:
            call()
        assert err.value.code == "memory_deleted"


def test_every_history_call_has_an_async_twin(tmp_path: Path) -> None:
    async def main() -> None:
        store = GitFileStore.init(tmp_path / "m.git")
        v = await store.write("a.md", "one\n", expected=None)
        first = store.sync.head()
        await store.write("a.md", "two\n", expected=v)
        assert [e.op for e in await store.log("a.md")] == ["edit", "create"]
        assert (await store.show(first, "a.md")).text == "one\n"
        assert [d.path for d in await store.diff(first)] == ["a.md"]
        assert [b.text for b in await store.blame("a.md")] == ["two"]
        reverted = await store.revert("main")
        assert reverted is not None and (await store.read("a.md")).text == "one\n"
        assert await store.restore("a.md", "main~1", expected=v) is not None
        assert (await store.fsck()).ok
        assert (await store.gc()).after.packs == 1

    asyncio.run(main())
