"""A read of a head just committed answers from the objects its writer made (gitmem.git.written).

In the writing process from what it kept; in another process from the copy of its
last commit's objects the writer left in ``gitmem/last-pack``. Each answer must be the one a new process
gives (reading the memory through libgit2 alone): a file just written, its
neighbours, a file in another folder, a missing path, a path through a file, a
folder asked as a file, a deleted or moved file. A planted, torn or stale copy changes
no answer and fails no write, a copy's objects are kept under the ids their bytes
hash to, and what a forget erased is never served from what the writer kept nor left in the copy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitmem import GitFileStore, MemoryStoreError, Origin
from gitmem.git import packwrite, treeedit, written

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
    assert sync.repo.written.walk(sync.repo.path, sync.repo.head(), "a/b/c.md", sync.repo.history_mark(), {})
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
    writer.write("ops/secret.md", "the code is 4711-wyvern\n", expected=None)
    written_at = writer.repo.head()
    assert writer.read("ops/secret.md", rev=written_at).text == "the code is 4711-wyvern\n"
    GitFileStore.open(path).sync.forget("ops/secret.md", origin=ADMIN)
    with pytest.raises(MemoryStoreError):
        writer.read("ops/secret.md")
    with pytest.raises(MemoryStoreError):  # the commit it made is gone with the history that named the secret
        writer.read("ops/secret.md", rev=written_at)
    assert writer.read("keep.md").text == "kept\n"
    assert b"4711-wyvern" not in b"".join(p.read_bytes() for p in (Path(path) / "gitmem").rglob("*") if p.is_file())


_WRITER = """
import sys
import time
from gitmem import GitFileStore
store = GitFileStore.open(sys.argv[1]).sync
for arg in sys.argv[2:]:
    path, text = arg.split("=", 1)
    try:
        version = store.read(path).version
    except Exception:
        version = None
    store.write(path, text + "\\n", expected=version)
"""


def _write_elsewhere(path: str, *edits: str) -> None:
    subprocess.run([sys.executable, "-c", _WRITER, path, *edits], check=True, capture_output=True)


def test_a_reader_answers_a_head_another_process_just_committed_as_a_new_process_does(tmp_path: Path) -> None:
    path = str(tmp_path / "m.git")
    GitFileStore.init(path)
    reader = GitFileStore.open(path).sync
    _write_elsewhere(path, "a/b/d.md=one", "a/e.md=two", "x/y/z.md=three")
    assert _answers(reader, PATHS) == _in_another_process(path, PATHS)
    for round_ in range(3):
        _write_elsewhere(path, f"a/b/c.md=round {round_}")
        mine = _answers(reader, PATHS)
        assert mine["a/b/c.md"][0] == f"round {round_}\n"  # type: ignore[index]
        assert mine == _in_another_process(path, PATHS)
    assert reader.repo.written.raw(reader.repo.head()) is not None  # the copy was read: no listing of objects/pack


@pytest.mark.parametrize("planted", ["garbage", "torn", "link", "fifo", "older commit"])
def test_a_planted_torn_or_stale_pack_copy_changes_no_answer_and_fails_no_write(tmp_path: Path, planted: str) -> None:
    path = str(tmp_path / "m.git")
    GitFileStore.init(path)
    reader = GitFileStore.open(path).sync
    _write_elsewhere(path, "a/b/d.md=one")
    hint = Path(path) / written.LAST_PACK
    older = hint.read_bytes()
    _write_elsewhere(path, "a/b/c.md=two")
    latest = hint.read_bytes()
    hint.unlink()
    if planted == "garbage":
        hint.write_bytes(b"\x00\x00\x00\xd0GMO1" + os.urandom(200))
    elif planted == "torn":
        hint.write_bytes(latest[: len(latest) // 2] + older[len(latest) // 2 :])
    elif planted == "link":
        hint.symlink_to(tmp_path / "elsewhere")
    elif planted == "fifo":
        os.mkfifo(hint)
    else:
        hint.write_bytes(older)  # a pack that does not hold the head
    assert _answers(reader, PATHS) == _in_another_process(path, PATHS)
    _write_elsewhere(path, "a/b/c.md=three")  # the copy cannot be written: the write still lands
    assert reader.read("a/b/c.md").text == "three\n"
    fsck = subprocess.run(["git", "--git-dir", path, "fsck", "--strict"], capture_output=True)
    assert fsck.returncode == 0


def test_a_copy_naming_an_object_under_another_id_serves_it_under_none(tmp_path: Path) -> None:
    pending = treeedit.PendingObjects()
    pending.objects["0" * 40] = (b"blob", b"not the object with that id\n")
    true_id = treeedit.object_id(b"blob", b"not the object with that id\n")
    real = pending.add(b"blob", b"a true object\n")
    sha, pack, idx = packwrite.pack_files(pending)
    (tmp_path / "gitmem").mkdir()
    (tmp_path / "objects" / "pack").mkdir(parents=True)
    written.publish(str(tmp_path), pack, pending.objects)
    key = bytes.fromhex(real)
    assert written.Written().adopt(str(tmp_path), (0, 0), key) is None  # a copy of a pack the store does not hold
    packwrite.write_pack_files(str(tmp_path), sha, pack, idx, durable=False)
    kept = written.Written()
    assert kept.adopt(str(tmp_path), (0, 0), bytes(20)) is None  # its bytes do not hash to the id the index names
    assert kept.adopt(str(tmp_path), (0, 0), key) == (b"blob", b"a true object\n")
    assert kept.raw("0" * 40) is None and kept.raw(true_id) is None
    hint = tmp_path / written.LAST_PACK
    hint.write_bytes(hint.read_bytes()[:-1])  # cut short: nothing from it
    cut = written.Written()
    assert cut.adopt(str(tmp_path), (0, 0), key) is None and cut.raw(real) is None


def test_a_settled_head_seen_by_one_lstat_still_sees_every_rewrite_of_the_ref(tmp_path: Path) -> None:
    """A reader that trusts the ref file's stamp (one ``lstat`` per read) sees each new head.

    Moves by another process (a new file under a new inode), and a rewrite in
    place with the same size, the same inode and the mtime set back (what a
    stamp of inode, size and mtime alone would miss; the ctime moves).
    """
    path = str(tmp_path / "m.git")
    GitFileStore.init(path)
    reader = GitFileStore.open(path).sync
    _write_elsewhere(path, "a.md=one")
    first = reader.head()
    time.sleep(0.1)  # the ref's stamp settles: the next reads trust one lstat
    assert reader.head() == first and reader.read("a.md").text == "one\n"
    for round_ in range(3):
        _write_elsewhere(path, f"a.md=round {round_}")
        assert reader.read("a.md").text == f"round {round_}\n"
        time.sleep(0.1)
        assert reader.read("a.md").text == f"round {round_}\n"
    moved = reader.head()
    ref = os.path.join(path, "refs", "heads", "main")
    before = os.stat(ref)
    with open(ref, "r+b") as fh:  # back to the first commit, in place
        fh.write(f"{first}\n".encode())
    os.utime(ref, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(ref)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    assert reader.head() == first != moved and reader.read("a.md").text == "one\n"


def _deleted_copies_held() -> list[str]:
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if "last-pack" in target and target.endswith("(deleted)"):
            held.append(target)
    return held


def test_a_reader_keeping_the_copy_open_lets_it_go_with_a_forget_and_reads_the_next_one(tmp_path: Path) -> None:
    """The copy's descriptor is kept across reads: a forget deletes the file, and the reader must
    neither keep the erased bytes open nor miss the copy the next commit writes as a new file."""
    path = str(tmp_path / "m.git")
    GitFileStore.init(path)
    reader = GitFileStore.open(path).sync
    _write_elsewhere(path, "keep.md=kept", "ops/secret.md=the code is 4711")
    assert reader.read("ops/secret.md").text == "the code is 4711\n"
    assert reader.repo.written.raw(reader.repo.head()) is not None  # read from the copy
    GitFileStore.open(path).sync.forget("ops/secret.md", origin=ADMIN)
    with pytest.raises(MemoryStoreError):
        reader.read("ops/secret.md")
    assert _deleted_copies_held() == []
    for round_ in range(3):
        _write_elsewhere(path, f"a/b/c.md=round {round_}")
        assert reader.read("a/b/c.md").text == f"round {round_}\n"
        assert reader.repo.written.raw(reader.repo.head()) is not None  # the new file's copy, not libgit2's rescan
    assert _answers(reader, PATHS) == _in_another_process(path, PATHS)
    assert _deleted_copies_held() == []


def test_a_reader_between_folds_answers_every_head_as_a_new_process_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Heads other writers move come faster than a reader asks the packs-folded mark (every 0.1 s):
    folds move every object into new packs and delete the old ones meanwhile, and no answer changes."""
    monkeypatch.setattr(packwrite, "GRACE_SECONDS", 0.0)  # folded packs go at the next fold
    path = str(tmp_path / "m.git")
    GitFileStore.init(path)
    writer = GitFileStore.open(path).sync
    reader = GitFileStore.open(path).sync
    names = [f"f/{n % 7}/n{n}.md" for n in range(80)]
    for n, name in enumerate(names):
        writer.write(name, f"note {n}\n", expected=None)
        assert reader.read(name).text == f"note {n}\n"
        assert reader.read(names[n // 2]).text == f"note {n // 2}\n"
    assert len(list((Path(path) / "objects" / "pack").glob("*.idx"))) < len(names)  # folded (and deleted) meanwhile
    assert _answers(reader, names) == _in_another_process(path, names)
    fsck = subprocess.run(["git", "--git-dir", path, "fsck", "--strict"], capture_output=True)
    assert fsck.returncode == 0


def test_a_copys_objects_a_read_did_not_reach_serve_a_later_head(tmp_path: Path) -> None:
    """Every object of a copy that hashes to its id is kept when the copy is read, not only those the
    read walked: a later read of the file that commit wrote, under a head whose copy no longer holds
    it, answers from them (libgit2 would list the pack folder) and as a new process does."""
    path = str(tmp_path / "m.git")
    GitFileStore.init(path)
    reader = GitFileStore.open(path).sync
    _write_elsewhere(path, "a/b/c.md=first", "x/y/z.md=other")
    _write_elsewhere(path, "a/b/c.md=second")
    assert reader.read("x/y/z.md").text == "other\n"  # walks x/y only; the copy holds a/b/c.md's blob
    assert reader.repo.written.raw(treeedit.object_id(b"blob", b"second\n")) == b"second\n"
    _write_elsewhere(path, "x/y/z.md=third")  # its copy holds nothing under a/
    assert reader.read("a/b/c.md").text == "second\n" and reader.read("x/y/z.md").text == "third\n"
    assert _answers(reader, PATHS) == _in_another_process(path, PATHS)


def test_a_file_read_from_the_packs_is_kept_for_the_next_read_and_dropped_by_a_forget(tmp_path: Path) -> None:
    """A reader keeps the folder and file it read from the packs (its next read of them reads no
    pack), answers a change another process made after it, and keeps nothing a forget erased."""
    path = str(tmp_path / "m.git")
    GitFileStore.init(path)
    _write_elsewhere(path, "ops/secret.md=the code is 4711-wyvern", "keep.md=kept")
    _write_elsewhere(path, "other.md=later")  # the copy now holds neither file above
    reader = GitFileStore.open(path).sync
    secret = treeedit.object_id(b"blob", b"the code is 4711-wyvern\n")
    assert reader.repo.written.raw(secret) is None
    assert reader.read("ops/secret.md").text == "the code is 4711-wyvern\n"
    assert reader.repo.written.raw(secret) == b"the code is 4711-wyvern\n"  # kept: the next read reads no pack
    assert reader.read("ops/secret.md").text == "the code is 4711-wyvern\n"
    _write_elsewhere(path, "ops/secret.md=rotated")
    assert reader.read("ops/secret.md").text == "rotated\n"
    GitFileStore.open(path).sync.forget("ops/secret.md", origin=ADMIN)
    with pytest.raises(MemoryStoreError):
        reader.read("ops/secret.md")
    assert reader.read("keep.md").text == "kept\n"
    assert reader.repo.written.raw(secret) is None  # dropped with everything kept before the forget
    assert _answers(reader, PATHS) == _in_another_process(path, PATHS)


def test_a_name_looked_up_in_a_raw_tree_is_the_entry_a_whole_parse_finds() -> None:
    """One entry found without parsing the tree: never a match inside another entry's name or id."""
    names = [b"a 100644 y.md", b"b", b"x 40000 b", b"y.md", b"z\x00"[:1] + b" 100644 b"]
    raw = b"".join(
        (b"40000 " if name.startswith(b"x") else b"100644 ") + name + b"\x00" + bytes([n]) * 20
        for n, name in enumerate(sorted(names))
    )
    parsed = written._parse(raw)
    for name in [*names, b"100644 y.md", b"44 y.md", b"c", b"", b"md"]:
        assert written._entry(raw, name) == parsed.get(name), name
    tricky = b"100644 a\x00" + b" y.md\x00".ljust(20, b"0")  # a hit inside an id only
    assert written._entry(tricky, b"y.md") is None


_TIMED_READS = """
import json, sys, time
from gitmem import GitFileStore, MemoryStoreError
store = GitFileStore.open(sys.argv[1]).sync
store.write("x.md", "the root tree is now this process's own\\n", expected=None)
out = {}
for path in json.loads(sys.argv[2]):
    began = time.monotonic()
    try:
        out[path] = store.read(path).text
    except MemoryStoreError as exc:
        out[path] = exc.code
    out[path + " seconds"] = time.monotonic() - began
print(json.dumps(out))
"""


def test_a_folder_of_names_that_look_like_entries_is_walked_in_time(tmp_path: Path) -> None:
    """A folder whose names hold what looks like the entry asked for (``00001 100644 a.md`` holds
    `` a.md`` after a mode) is walked in time linear in it: each such name is a false hit of the
    one-name lookup, and each hit re-checked the folder's entries from its start (20,000 names:
    30 s a lookup, a read of that folder over a minute, in a pushed memory anyone could make)."""
    path = str(tmp_path / "m.git")
    GitFileStore.init(path)
    GitFileStore.open(path).sync.write("seed.md", "seed\n", expected=None)

    def git(*args: str, given: str = "") -> str:
        done = subprocess.run(["git", "--git-dir", path, *args], input=given, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    blob = git("hash-object", "-w", "--stdin", given="found\n")
    names = [f"{i:05d} 100644 a.md" for i in range(20_000)] + ["a.md"]
    big = git("mktree", given="".join(f"100644 blob {blob}\t{name}\n" for name in names))
    seed = git("ls-tree", "main")
    root = git("mktree", given=f"{seed}\n040000 tree {big}\tbig\n")
    commit = git("commit-tree", root, "-p", git("rev-parse", "main"), given="a big folder\n")
    git("update-ref", "refs/heads/main", commit)
    git("repack", "-a", "-d", "-q")  # the folder is read from a pack, as a pushed one is
    paths = ["big/a.md", "big/b.md", "big/00007 100644 a.md"]
    done = subprocess.run(
        [sys.executable, "-c", _TIMED_READS, path, json.dumps(paths)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)
    assert [answers[p] for p in paths] == ["found\n", "not_found", "found\n"]
    assert all(answers[p + " seconds"] < 5 for p in paths), answers
    fsck = subprocess.run(["git", "--git-dir", path, "fsck", "--strict"], capture_output=True)
    assert fsck.returncode == 0
