"""The CLI's fast-forward pull (:mod:`gitmem.remotepull`) against what changes while it runs.

The quick path looks at the mount (its refs, the erasure ledger) before it fetches, and
lands the fetched commits under the writer lock. Whatever a concurrent writer, forget or
purge did in between must be seen under the lock: a ledger written meanwhile still keeps
what it names out, as the store's pull keeps it out.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from serve.support import _literal, commit_all, git, seed, write

from gitmem import MemoryStoreError, Origin, Root, remotepull, remotes
from gitmem.fileformat import FileFormat
from gitmem.git.peek import Peek
from gitmem.git.peekreader import PeekReader
from gitmem.git.pushcheck import RefUpdate, check_commits, check_updates

ADMIN = Origin("run-9", "admin", "call-9")
MAIN = "refs/heads/main"
SECRET = "office wifi is on the third floor, ask Dana at the desk\n"


def test_a_forget_between_the_look_and_the_lock_keeps_its_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Root(tmp_path / "root")
    store = root.mount("m", create=True, hooks=False)
    sync = store.sync
    sync.write("ops/wifi.md", SECRET, expected=None)
    sync.write("keep.md", "keep\n", expected=None)
    forge = tmp_path / "forge.git"
    git("init", "-q", "--bare", "-b", "main", str(forge))
    remotes.add(store, "origin", str(forge))
    work = tmp_path / "work"
    looked = remotepull._durable

    def forget_meanwhile(folder: str, remote: str) -> bool:
        # The quick path has seen no ledger and no other ref; now a forget runs to its end, and the
        # remote (a hostile one, or a stale clone rebased on the rewritten history) brings the text back.
        sync.forget("ops/wifi.md", origin=ADMIN)
        sync.write("after.md", "an agent writes on\n", expected=None)  # main is a loose ref again
        git("push", "-q", "-f", str(forge), "main", cwd=sync.repo.path)
        git("clone", "-q", str(forge), str(work))
        write(work, "ops/wifi.md", SECRET)
        commit_all(work, "the wifi again")
        git("push", "-q", "origin", "main", cwd=work)
        return looked(folder, remote)

    monkeypatch.setattr(remotepull, "_durable", forget_meanwhile)
    with pytest.raises(MemoryStoreError) as caught:
        remotepull.pull_named(root, "m", "origin")
    assert caught.value.code == "forbidden" and "erased" in caught.value.message
    assert "ops/wifi.md" not in git("ls-tree", "-r", "--name-only", "main", cwd=sync.repo.path).stdout


FMT = FileFormat(max_file_bytes=64_000)


def _tree_commit(tmp_path: Path, mode: bytes, name: bytes = b"new.md") -> tuple[Path, Path, str, str]:
    """A mount, a clone of it, and a commit on the clone's main whose new entry has mode ``mode`` (raw)
    and name ``name``."""
    store = Root(tmp_path / "root").mount("m", create=True, hooks=False)
    head = seed(store)
    work = tmp_path / "work"
    git("clone", "-q", store.sync.repo.path, str(work))
    write(work, "new.md", "new note\n")
    git("add", "new.md", cwd=work)
    blob = git("rev-parse", ":new.md", cwd=work).stdout.strip()
    seed_blob = git("rev-parse", "HEAD:seed.md", cwd=work).stdout.strip()
    entries = mode + b" " + name + b"\0" + bytes.fromhex(blob) + b"100644 seed.md\0" + bytes.fromhex(seed_blob)
    tree = _literal(work, "tree", entries)
    who = b"Mallory <m@example.com> 1700000000 +0000"
    raw = f"tree {tree}\nparent {head}\n".encode() + b"author " + who + b"\ncommitter " + who + b"\n\nodd mode\n"
    return Path(store.sync.repo.path), work, head, _literal(work, "commit", raw)


@pytest.mark.parametrize("mode", [b"100644\n", b"\t100644", b"100_644", b"+100644", b"1100644"], ids=repr)
def test_a_mode_neither_git_nor_libgit2_reads_is_refused_by_both_readers_and_by_check(
    tmp_path: Path, mode: bytes
) -> None:
    """Python's ``int(x, 8)`` reads whitespace, ``_``, a sign and any size; git reads none of them (its
    fsck calls the tree malformed) and libgit2 only the sign (past 16 bits it cannot parse the tree).
    ``gitmem check`` runs no strict object check first: the rules must not call such an entry a file."""
    mount, work, head, new = _tree_commit(tmp_path, mode)
    objects = str(work / ".git" / "objects")
    update = [RefUpdate(MAIN, head, new)]
    by_libgit2 = check_updates(str(mount), update, FMT, object_dirs=[objects])[MAIN]
    reader = PeekReader(Peek(str(mount), extra_objects=[objects]), head)
    by_peek = check_updates(str(mount), update, FMT, object_dirs=[objects], reader=reader)[MAIN]
    assert by_libgit2 and by_peek == by_libgit2
    try:  # `gitmem check`: no strict object check runs before these rules
        verdicts = check_commits(str(work / ".git"), new, FMT, hide=[head])
    except MemoryStoreError as exc:
        assert exc.code == "unavailable"
    else:
        assert any(v.refusals for v in verdicts)


def test_an_entry_whose_name_holds_a_slash_is_refused_by_both_readers_and_by_check(tmp_path: Path) -> None:
    """``a/b.md`` as one entry's name: its path passes every path rule, and git's fsck only warns
    (``fullPathname``), so ``gitmem check``, which runs no strict object check, let it through."""
    mount, work, head, new = _tree_commit(tmp_path, b"100644", b"a/b.md")
    objects = str(work / ".git" / "objects")
    update = [RefUpdate(MAIN, head, new)]
    by_libgit2 = check_updates(str(mount), update, FMT, object_dirs=[objects])[MAIN]
    reader = PeekReader(Peek(str(mount), extra_objects=[objects]), head)
    by_peek = check_updates(str(mount), update, FMT, object_dirs=[objects], reader=reader)[MAIN]
    assert [(r.rule, r.path) for r in by_libgit2] == [("invalid_path", "a/b.md")]
    assert by_peek == by_libgit2
    verdicts = check_commits(str(work / ".git"), new, FMT, hide=[head])
    assert [(r.rule, r.path) for v in verdicts for r in v.refusals] == [("invalid_path", "a/b.md")]
