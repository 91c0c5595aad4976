"""Random atomic batches (``apply``) give the same tree on both stores.

A git commit's edits are applied folder by folder, each tree written once
(libgit2's tree builder, ``tests/contract/libgit2_trees.py``); the in-memory store applies them path by path.
Over batches that create, overwrite and delete nested files, delete missing ones,
and collide files with folders, both must end with the same files and refuse the
same batches with the same code.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from gitmem import InMemoryFileStore, MemoryStoreError, SyncGitFileStore
from gitmem.gitstore import GitFileStore
from gitmem.model import ANY, Edit

PATHS = ["a", "a/b", "a/c", "a/b/d", "a/b/e", "x/y/z", "x/y/w", "x/q", "x", "m/n/o/p"]
TEXTS = [None, "one\n", "two\n", "one\n"]

batches = st.lists(
    st.lists(
        st.tuples(st.sampled_from(PATHS), st.sampled_from(TEXTS)), min_size=1, max_size=6, unique_by=lambda e: e[0]
    ),
    min_size=1,
    max_size=6,
)


def outcome(store: InMemoryFileStore | SyncGitFileStore, edits: list[Edit]) -> str:
    try:
        store.apply(edits)
    except MemoryStoreError as exc:
        return exc.code
    return "ok"


def files(store: InMemoryFileStore | SyncGitFileStore) -> dict[str, str]:
    return {e.path: store.read(e.path).text for e in store.list()}


def folders_in_git(repo: Path) -> set[str]:
    """Every folder (tree) of ``main`` as git sees it: none may be empty."""
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "-t", "--format=%(objecttype) %(path)", "main"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("tree ")}


def parents(paths: list[str]) -> set[str]:
    return {"/".join(p.split("/")[:i]) for p in paths for i in range(1, p.count("/") + 1)}


@given(batches)
def test_batches_leave_the_same_tree_on_both_stores(plan: list[list[tuple[str, str | None]]]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="gitmem-batch-twins-"))
    try:
        git = GitFileStore.init(folder / "m.git").sync
        memory = InMemoryFileStore()
        for batch in plan:
            edits = [Edit(path, text, ANY) for path, text in batch]
            assert outcome(git, edits) == outcome(memory, edits), batch
            assert files(git) == files(memory), batch
            assert folders_in_git(folder / "m.git") == parents(list(files(git))), batch
    finally:
        shutil.rmtree(folder, ignore_errors=True)
