"""The listing file of the quick ``ls`` path: used when it fits, never stale, erased with history.

``gitmem ls`` keeps the listing of ``main``'s tree in ``<repo>/gitmem/derived/listing``
so the next call need not inflate every blob for its size and description. These
tests hold it to what derived state must be: answered only for the tree, limits and
code it was made for, rebuilt whenever it is missing or damaged, and gone after
``purge`` and ``forget`` even when a listing of the old history was being built meanwhile.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from gitmem import gitstore, quickread
from gitmem.gitcache import ReadCache
from gitmem.model import FileEntry
from gitmem.root import Root


@pytest.fixture
def root(tmp_path: Path) -> Root:
    root = Root(tmp_path / "root")
    store = root.mount("user", create=True).sync
    store.write("plain.md", "no frontmatter here\nsecond line\n", expected=None)
    store.write("a/described.md", "---\ndescription: a described note\n---\nbody\n", expected=None)
    store.write("odd.md", "---\ndescription: with \r a carriage return\n---\n", expected=None)
    store.write("z.md", "", expected=None)
    return root


def listing_file(root: Root) -> Path:
    return root.mount_path("user") / quickread.DERIVED_DIR / quickread.LISTING_FILE


def listed(root: Root) -> list[FileEntry]:
    """The quick listing, checked against the store's own."""
    found = quickread.list_files(root, "user")
    assert found == root.mount("user").sync.list()
    return found


def test_the_folder_is_the_one_purge_and_forget_delete() -> None:
    assert quickread.DERIVED_DIR == gitstore.DERIVED_DIR


def test_the_first_listing_is_saved_and_the_next_one_read_from_it(root: Root, monkeypatch: pytest.MonkeyPatch) -> None:
    first = listed(root)
    saved = listing_file(root)
    assert saved.is_file() and saved.stat().st_mode & 0o777 == 0o600
    # A second call inflates no blob: the answer comes from the file alone.
    monkeypatch.setattr(ReadCache, "listing", lambda *a: pytest.fail("the saved listing was not used"))
    assert quickread.list_files(root, "user") == first


def test_a_saved_listing_is_what_is_shown(root: Root) -> None:
    listed(root)
    saved = listing_file(root)
    made, tree, _, body = saved.read_bytes().decode().split("\n", 3)
    body = body.replace("a described note", "from the file")
    checksum = hashlib.sha1(f"{tree}\n{body}".encode()).hexdigest()
    saved.write_bytes(f"{made}\n{tree}\n{checksum}\n{body}".encode())
    assert "from the file" in [e.description for e in quickread.list_files(root, "user")]


def test_after_a_write_only_the_new_blobs_are_read(root: Root, monkeypatch: pytest.MonkeyPatch) -> None:
    from gitmem.git.peek import Peek

    listed(root)
    store = root.mount("user").sync
    store.write("new.md", "---\ndescription: brand new\n---\n", expected=None)
    version = store.write("plain.md", "changed\n", expected=store.read("plain.md").version)
    read: list[str] = []
    blob = Peek.blob

    def counted(self: Peek, oid: str) -> bytes:
        read.append(oid)
        return blob(self, oid)

    monkeypatch.setattr(Peek, "blob", counted)
    descriptions = [e.description for e in listed(root)]
    assert "brand new" in descriptions and "changed" in descriptions
    assert len(read) == 2 and version in read


def test_a_new_head_is_never_answered_from_an_old_listing(root: Root) -> None:
    store = root.mount("user").sync
    listed(root)
    version = store.read("plain.md").version
    store.write("plain.md", "---\ndescription: changed\n---\n", expected=version)
    store.write("new/file.md", "new\n", expected=None)
    assert "changed" in [e.description for e in listed(root)]
    store.delete("z.md", expected=store.read("z.md").version)
    assert "z.md" not in [e.path for e in listed(root)]


def test_changed_limits_make_a_new_listing(root: Root) -> None:
    listed(root)
    subprocess.run(["git", "-C", str(root.mount_path("user")), "config", "gitmem.maxDescriptionChars", "5"], check=True)
    assert "a des" in [e.description for e in listed(root)]


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "folder"])
def test_a_damaged_listing_is_rebuilt(root: Root, damage: str) -> None:
    first = listed(root)
    saved = listing_file(root)
    data = saved.read_bytes()
    if damage == "truncate":
        saved.write_bytes(data[: len(data) - 7])
    elif damage == "flip":
        saved.write_bytes(data.replace(b"second", b"SECOND").replace(b"no frontmatter", b"no frontmatteR"))
    elif damage == "garbage":
        saved.write_bytes(b"\xff\xfe\x00garbage")
    elif damage == "empty":
        saved.write_bytes(b"")
    else:
        saved.unlink()
        saved.mkdir()
    assert listed(root) == first
    if damage != "folder":
        assert saved.read_bytes() == data  # saved again, whole


def test_purge_and_forget_delete_the_listing(root: Root) -> None:
    listed(root)
    root.mount("user").sync.forget("a/described.md")
    assert not listing_file(root).exists()
    assert "a described note" not in [e.description for e in listed(root)]
    root.mount("user").sync.purge()
    assert not listing_file(root).exists()
    assert listed(root) == []


def test_a_listing_of_history_purged_meanwhile_is_not_kept(root: Root, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ls`` read the old head; purge deleted the derived folder before the save: the saved file goes."""
    built = ReadCache.listing

    def listing_then_purge(self: ReadCache, *args: object) -> list[FileEntry]:
        entries = built(self, *args)  # type: ignore[arg-type]
        Root(root.path).mount("user").sync.purge()
        return entries

    monkeypatch.setattr(ReadCache, "listing", listing_then_purge)
    old = quickread.list_files(root, "user")
    assert "a described note" in [e.description for e in old]
    folder = listing_file(root).parent
    assert not folder.exists() or not list(folder.iterdir())  # neither the listing nor a temporary file


def test_only_the_mounts_owner_saves_a_listing(root: Root, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)
    listed(root)
    assert not listing_file(root).exists()


def test_a_description_with_nul_is_listed_but_not_saved(root: Root, tmp_path: Path) -> None:
    """A foreign git client may commit such a file (gitmem's own writes refuse NUL bytes)."""
    repo = root.mount_path("user")
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "index")}

    def git(*args: str, data: bytes | None = None) -> str:
        done = subprocess.run(["git", "-C", str(repo), *args], input=data, env=env, capture_output=True, check=True)
        return done.stdout.decode().strip()

    blob = git("hash-object", "-w", "--stdin", data=b"a\0b\n")
    git("read-tree", "main")
    git("update-index", "--add", "--cacheinfo", f"100644,{blob},nul.md")
    commit = git("commit-tree", git("write-tree"), "-p", "main", "-m", "foreign", data=b"")
    git("update-ref", "refs/heads/main", commit)
    assert "a\0b" in [e.description for e in listed(root)]
    assert not listing_file(root).exists()
