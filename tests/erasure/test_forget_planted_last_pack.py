"""Anything planted at gitmem/last-pack (a folder) never makes forget fail after its prune: the history
mark moves and the ledger records the erasure, so the erased content is refused by the next write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError, Origin
from gitmem.git import written

ADMIN = Origin("run-1", "admin", "call-1")
SECRET = "the vault code is 4711\n"


def test_a_folder_at_the_copy_neither_fails_forget_nor_lets_erased_content_back(tmp_path: Path) -> None:
    path = str(tmp_path / "m.git")
    GitFileStore.init(path)
    w = GitFileStore.open(path).sync
    w.write("ops/secret.md", SECRET, expected=None)
    w.write("keep.md", "k\n", expected=None)
    hint = Path(path) / written.LAST_PACK
    hint.unlink()
    hint.mkdir()
    failed = None
    try:
        GitFileStore.open(path).sync.forget("ops/secret.md", origin=ADMIN)
    except MemoryStoreError as exc:
        failed = exc.message
    print("forget:", failed, "| generation bumped:", os.path.exists(Path(path) / "gitmem" / "generation"))
    os.rmdir(hint)
    with pytest.raises(MemoryStoreError) as err:
        GitFileStore.open(path).sync.write("again.md", SECRET, expected=None)
    assert err.value.code == "forbidden", failed
