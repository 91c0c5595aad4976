"""A read of a head this process just committed answers from the objects it wrote (gitmem.git.written).

Each answer must be the one a handle that never wrote gives (another process
reading the memory from its packs): a file just written, its neighbours, a
file in another folder, a missing path, a path through a file, a folder asked
as a file, a deleted or moved file. And what a forget erased is never served
from what the writer kept.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError, Origin

ADMIN = Origin("run-1", "admin", "call-1")

_READER = """
import json, sys
from gitmem import GitFileStore, MemoryStoreError
store = GitFileStore.open(sys.argv[1]).sync
out = {}
for path in json.loads(sys.argv[2]):
    try:
        found = store.read(path)
        out[path] = [found.text, found.version]
    except MemoryStoreError as exc:
        out[path] = exc.code
print(json.dumps(out))
"""


def _answers(store: object, paths: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for path in paths:
        try:
            found = store.read(path)  # type: ignore[attr-defined]
            out[path] = [found.text, found.version]
        except MemoryStoreError as exc:
            out[path] = exc.code
    return out


def _in_another_process(path: str, paths: list[str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _READER, path, json.dumps(paths)], capture_output=True, text=True, check=True
    )
    answers: dict[str, object] = json.loads(done.stdout)
    return answers


PATHS = [
    "a/b/c.md",
    "a/b/d.md",
    "a/e.md",
    "x/y/z.md",
    "a/b/missing.md",
    "a/b/c.md/under",
    "a/b",
    "a",
    "gone.md",
    "old/name.md",
    "new/name.md",
    "q.md",
]


def test_every_read_in_the_writing_process_answers_as_another_process_does(tmp_path: Path) -> None:
    path = str(tmp_path / "m.git")
    GitFileStore.init(path)
    sync = GitFileStore.open(path).sync
    for name in ("a/b/d.md", "a/e.md", "x/y/z.md", "gone.md", "old/name.md", "q.md"):
        sync.write(name, f"first {name}\n", expected=None)
    sync.write("a/b/c.md", "just written\n", expected=None)
    assert sync.repo.written.find(sync.repo.tree_id_of(sync.repo.head()), "a/b/c.md", sync.repo.history_mark())
    mine = _answers(sync, PATHS)
    assert mine["a/b/c.md"] == ["just written\n", mine["a/b/c.md"][1]]  # type: ignore[index]
    assert mine == _in_another_process(path, PATHS)
    sync.delete("gone.md", expected=sync.read("gone.md").version)
    sync.move("old/name.md", "new/name.md", expected=sync.read("old/name.md").version)
    sync.write("q.md", "second\n", expected=sync.read("q.md").version)
    mine = _answers(sync, PATHS)
    assert mine["gone.md"] == "not_found" and mine["old/name.md"] == "not_found"
    assert mine["q.md"][0] == "second\n"  # type: ignore[index]
    assert mine == _in_another_process(path, PATHS)
    fsck = subprocess.run(["git", "--git-dir", path, "fsck", "--strict"], capture_output=True)
    assert fsck.returncode == 0


def test_a_forget_elsewhere_is_never_answered_from_what_the_writer_kept(tmp_path: Path) -> None:
    path = str(tmp_path / "m.git")
    GitFileStore.init(path)
    writer = GitFileStore.open(path).sync
    writer.write("keep.md", "kept\n", expected=None)
    writer.write("ops/secret.md", "the code is 4711\n", expected=None)
    written_at = writer.repo.head()
    assert writer.read("ops/secret.md", rev=written_at).text == "the code is 4711\n"
    GitFileStore.open(path).sync.forget("ops/secret.md", origin=ADMIN)
    with pytest.raises(MemoryStoreError):
        writer.read("ops/secret.md")
    with pytest.raises(MemoryStoreError):  # the commit it made is gone with the history that named the secret
        writer.read("ops/secret.md", rev=written_at)
    assert writer.read("keep.md").text == "kept\n"
