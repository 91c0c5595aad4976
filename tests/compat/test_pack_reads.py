"""Reads after many pack writes: what a new handle finds, and the folded packs it must not have to search.

A fold leaves the packs it copied for ``packwrite.GRACE_SECONDS`` (readers may
have listed them) and dates them so that readers search them last. A new
handle in the writing process reads exactly what libgit2 reads.
"""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from contract.support import assert_fsck_clean

from gitmem import GitFileStore
from gitmem.git import packwrite


def _folded(repo: Path) -> dict[str, float]:
    return packwrite._folded(str(repo))


def _idx_names(repo: Path) -> set[str]:
    return {p.name[:-4] for p in (repo / "objects" / "pack").glob("*.idx")}


def test_a_new_handle_in_the_writing_process_reads_what_libgit2_reads(tmp_path: Path) -> None:
    """Every commit is a pack of its own: a new handle finds each file as libgit2 does, also after a purge mark."""
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    paths = [f"t{n % 4}/s{n % 7}/f{n}.md" for n in range(40)]
    for n, path in enumerate(paths):
        store.write(path, f"{n}\n", expected=None)
    for n, path in enumerate(paths):
        fresh = GitFileStore.open(repo).sync
        got = fresh.read(path)
        assert got.text == f"{n}\n"
        assert got.version == str(pygit2.Repository(str(repo)).revparse_single(f"main:{path}").id)
    store.repo.bump_generation()  # what a purge or forget does: objects may be gone
    assert GitFileStore.open(repo).sync.read(paths[0]).text == "0\n"
    assert store.read(paths[-1]).text == f"{len(paths) - 1}\n"


def test_folded_packs_are_dated_before_every_live_pack_so_readers_search_them_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git and libgit2 search packs newest first; a folded pack's objects are all in the fold's pack."""
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    version = None
    for n in range(6):
        version = store.write("a.md", f"{n}\n", expected=version)
    with store.repo.lock.hold():
        store.repo.compact()
    folded = set(_folded(repo))
    live = _idx_names(repo) - folded
    assert folded and live
    pack_dir = repo / "objects" / "pack"
    newest_folded = max((pack_dir / f"{name}.pack").stat().st_mtime for name in folded)
    oldest_live = min((pack_dir / f"{name}.pack").stat().st_mtime for name in live)
    assert int(newest_folded) < int(oldest_live)  # whole seconds: what git and libgit2 compare
    assert GitFileStore.open(repo).sync.read("a.md").text == "5\n"
    assert_fsck_clean(repo)
