"""Readers in other processes while a writer commits and folds: no read may fail.

Folds copy the small per-commit packs into one; a later fold deletes the packs
copied at least ``GRACE_SECONDS`` (0.25 s) before (``gitmem.git.packwrite.compact``).
libgit2 and git's normal reads list the packs again when an object is in none
they know, and a pack they opened stays readable once unlinked; git's quick
look-ups (``git mktree``) never list again, and a reader stalled between its
listing and its search misses too, which is why a folded pack is not deleted
at once. Each kind of reader runs in its own process the
whole time: a gitmem store, a raw pygit2 handle that never reopens, a
long-lived ``git cat-file --batch``, ``git log -p``, ``git clone`` (upload-pack)
and ``git mktree``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from race_support import assert_fsck_clean

from gitmem import GitFileStore
from gitmem.git import engine, packwrite

pytestmark = pytest.mark.slow

READER = Path(__file__).with_name("pack_reader.py")
MODES = ("gitmem", "pygit2", "catfile", "log", "clone", "mktree")


def test_readers_of_every_kind_never_fail_while_packs_are_folded_and_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "MAX_PACKS", 3)  # a fold every few commits
    deletions: list[bool] = []
    compact = packwrite.compact

    def counted(*args: object) -> bool:
        deleted = compact(*args)  # type: ignore[arg-type]
        deletions.append(deleted)
        return deleted

    monkeypatch.setattr(packwrite, "compact", counted)
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    versions = {n: store.write(f"f{n}.md", "0\n", expected=None) for n in range(5)}
    stop = tmp_path / "stop"
    readers = {
        mode: subprocess.Popen(
            [sys.executable, str(READER), mode, str(repo), str(stop)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for mode in MODES
    }
    try:
        time.sleep(0.5)  # let every reader start and list the packs before the folds begin
        value = 0
        while sum(deletions) < 20 or value < 60:
            value += 1
            for n in range(5):
                versions[n] = store.write(f"f{n}.md", f"{value}\n", expected=versions[n])
            if value > 2000:
                break
    finally:
        stop.touch()
    results = {mode: proc.communicate(timeout=120) for mode, proc in readers.items()}
    for mode, (out, err) in results.items():
        assert readers[mode].returncode == 0 and out.startswith("ok "), f"{mode}: {out} {err}"
        assert int(out.split()[1]) > 0, f"{mode} never completed a read"
    assert sum(deletions) >= 20  # the readers ran across many folds that deleted packs
    time.sleep(packwrite.GRACE_SECONDS)
    with store.repo.lock.hold():
        store.repo.compact()
    pack_files = [p for p in (repo / "objects" / "pack").iterdir() if p.suffix == ".idx"]
    leftovers = list(packwrite._folded(str(repo)))
    assert len(pack_files) == packwrite.pack_count(str(repo)) + len(leftovers)
    assert len(pack_files) <= 4 * engine.MAX_PACKS + 8  # live packs plus one fold's leftovers, never a pile
    assert store.read("f0.md").text == f"{value}\n"
    assert_fsck_clean(repo)
    print("\n[pack readers] " + ", ".join(f"{m} {o.split()[1]} loops" for m, (o, _) in results.items()))


def test_a_quick_git_lookup_started_before_a_fold_finds_the_folded_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git mktree`` lists the packs once and never looks again: the packs a fold copied must outlive it."""
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    for n in range(5):
        store.write(f"f{n}.md", f"{n}\n", expected=None)
    entries = {line.split("\t")[1]: line for line in git_lines(repo, "ls-tree", "main")}
    mktree = subprocess.Popen(
        ["git", "--git-dir", str(repo), "mktree"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert mktree.stdin is not None
    mktree.stdin.write(entries["f0.md"] + "\n")  # its first look-up lists the packs (and opens the ones it searched)
    mktree.stdin.flush()
    time.sleep(0.5)
    before = {p.name for p in (repo / "objects" / "pack").glob("*.idx")}
    with store.repo.lock.hold():
        store.repo.compact()  # every small pack is copied into one, the old ones left in place
    assert packwrite.pack_count(str(repo)) < len(before)
    leftovers = {f"{name}.idx" for name in list(packwrite._folded(str(repo)))}
    assert leftovers and leftovers <= before
    for name in ("f1.md", "f2.md", "f3.md", "f4.md"):
        mktree.stdin.write(entries[name] + "\n")
    out, err = mktree.communicate(timeout=60)
    assert mktree.returncode == 0, err
    assert out.strip() == git_lines(repo, "rev-parse", "main^{tree}")[0]
    # A later fold deletes them; readers that look again (libgit2, git's normal reads) never notice.
    monkeypatch.setattr(packwrite, "GRACE_SECONDS", 0.0)
    store.write("f5.md", "5\n", expected=None)
    with store.repo.lock.hold():
        store.repo.compact()
    assert not leftovers & {p.name for p in (repo / "objects" / "pack").glob("*.idx")}
    assert store.read("f4.md").text == "4\n"
    assert_fsck_clean(repo)


def git_lines(repo: Path, *argv: str) -> list[str]:
    done = subprocess.run(["git", "--git-dir", str(repo), *argv], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_gitmem_readers_never_fail_while_git_repacks_and_gcs_without_grace(tmp_path: Path) -> None:
    """``git repack -ad`` and ``git gc`` delete the old packs at once (no grace as a fold has).

    A reader whose handle missed the new pack in its rescan must look again on a
    new handle rather than call the memory unavailable; meanwhile a writer keeps
    committing through the same repacks.
    """
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    versions = {n: store.write(f"f{n}.md", "0\n", expected=None) for n in range(5)}
    stop = tmp_path / "stop"
    readers = [
        subprocess.Popen(
            [sys.executable, str(READER), "gitmem", str(repo), str(stop)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        time.sleep(0.5)
        for value in range(1, 41):
            for n in range(5):
                versions[n] = store.write(f"f{n}.md", f"{value}\n", expected=versions[n])
            command = ["gc", "--prune=now", "--quiet"] if value % 4 == 0 else ["repack", "-adq"]
            subprocess.run(["git", "-C", str(repo), *command], check=True, capture_output=True)
    finally:
        stop.touch()
    for reader in readers:
        out, err = reader.communicate(timeout=120)
        assert reader.returncode == 0 and out.startswith("ok "), f"{out} {err}"
        assert int(out.split()[1]) > 0
    assert store.read("f0.md").text == "40\n"
    assert_fsck_clean(repo)
