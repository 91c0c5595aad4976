"""Deciding a batch compares versions: file text is read only when something needs it.

A prune deletes thousands of items by version in one batch; reading each blob
only to compare its id (which the tree entry already gives) was most of its cost.
A refusal still hands the caller the whole file, as a plain FileText.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem import Root
from gitmem.errors import MemoryStoreError
from gitmem.git.snapshot import Snapshot
from gitmem.model import ANY, Edit, FileText


def test_deletes_and_overwrites_by_version_read_no_blob(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Root(tmp_path).mount("m", create=True).sync
    versions = {f"items/{i}.md": store.write(f"items/{i}.md", f"item {i}\n", expected=None) for i in range(20)}
    reads: list[str] = []
    real = Snapshot.raw

    def counting(self: Snapshot, oid: str) -> bytes:
        reads.append(oid)
        return real(self, oid)

    monkeypatch.setattr(Snapshot, "raw", counting)
    edits = [Edit(p, None, v) for p, v in list(versions.items())[:10]]
    edits += [Edit(p, f"new {p}\n", v) for p, v in list(versions.items())[10:]]
    applied = store.apply(edits)
    assert applied.commit is not None
    assert not set(reads) & set(versions.values())  # no old blob was read to decide
    monkeypatch.undo()
    assert [e.path for e in store.list()] == sorted(list(versions)[10:])


def test_a_refusal_still_carries_the_whole_file_as_a_plain_file_text(tmp_path: Path) -> None:
    store = Root(tmp_path).mount("m", create=True).sync
    version = store.write("a.md", "alpha\n", expected=None)
    store.write("b.md", "beta\n", expected=None)
    with pytest.raises(MemoryStoreError) as caught:
        store.apply([Edit("b.md", None, ANY), Edit("a.md", "x\n", "0" * 40)])
    assert caught.value.code == "version_mismatch"
    assert type(caught.value.current) is FileText
    assert caught.value.current == FileText("a.md", "alpha\n", version)
    with pytest.raises(MemoryStoreError) as again:
        store.move("b.md", "a.md", expected=store.read("b.md").version)
    assert again.value.code == "already_exists" and type(again.value.current) is FileText

