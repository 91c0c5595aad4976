"""A packed object whose bytes do not match its id is an error, never the wrong text.

A read takes a file's blob straight from the pack backend (``GitRepo.blob``), past
the object database that would check the id; it checks the id itself. Here a pack
holds, under a blob's id, other bytes that inflate cleanly (a pack written by a
buggy or hostile tool), so only that check can catch it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError
from gitmem.git import packwrite, treeedit


def test_a_packed_blob_with_other_bytes_than_its_id_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.git"
    store = GitFileStore.init(path).sync
    head = store.repo.head()
    pending = treeedit.PendingObjects()
    blob = treeedit.object_id(b"blob", b"the real text\n")
    pending.objects[blob] = (b"blob", b"not the text!\n")  # the id of one content, the bytes of another
    tree = pending.add(b"tree", treeedit.tree_bytes({b"a.md": (b"100644", bytes.fromhex(blob))}))
    sig = b"t <t@example.com> 1700000000 +0000"
    commit = pending.add(b"commit", packwrite.commit_bytes(tree, [head], sig, sig, "corrupt\n"))
    packwrite.write_pack(str(path), pending, durable=False)
    subprocess.run(["git", "--git-dir", str(path), "update-ref", "refs/heads/main", commit, head], check=True)
    fresh = GitFileStore.open(path).sync  # a handle that meets the pack in its first scan
    for reader in (fresh, store):
        with pytest.raises(MemoryStoreError) as caught:
            reader.read("a.md")
        assert caught.value.code == "unavailable"
