"""A damaged loose object is an ``unavailable`` error naming it, never a hang.

libgit2 1.9 loops forever (holding the GIL) on a loose object whose zlib stream
ends before its last deflate block. Each variant below damages one object of a
real memory, then a child process runs every store call on it under a timeout:
the timeout is a hang guard, not a speed bound. Every call must return; every
failure must be a store error with code ``unavailable``; a call that had to read
the damaged object must name it; ``fsck`` must name it too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gitmem import GitFileStore
from gitmem.git.loose import damaged_loose_objects, parse_loose
from tests.loosen import loosen

WORKER = Path(__file__).with_name("corrupt_worker.py")
HANG_GUARD = 120.0  # seconds for all ~20 calls: only a hang gets near it

Damage = Callable[[bytes], bytes]


def _reheader(raw: bytes, header: bytes) -> bytes:
    body = zlib.decompress(raw)
    return zlib.compress(header + body[body.index(b"\0") + 1 :])


DAMAGES: dict[str, Damage] = {
    # the class that hangs libgit2: the deflate stream cut anywhere before its end
    "cut_to_2_bytes": lambda raw: raw[:2],
    "cut_to_10_bytes": lambda raw: raw[:10],
    "cut_in_half": lambda raw: raw[: len(raw) // 2],
    "cut_before_last_block_ends": lambda raw: raw[:-5],
    # the rest fail cleanly in libgit2 too, and must keep doing so
    "cut_in_checksum": lambda raw: raw[:-2],
    "empty": lambda raw: b"",
    "one_byte": lambda raw: raw[:1],
    "garbage": lambda raw: b"this is not a zlib stream at all",
    "flipped_byte": lambda raw: raw[: len(raw) // 2] + bytes([raw[len(raw) // 2] ^ 0xFF]) + raw[len(raw) // 2 + 1 :],
    "trailing_bytes": lambda raw: raw + b"junk",
    "wrong_size": lambda raw: _reheader(raw, b"blob 3\0"),
    "unknown_type": lambda raw: _reheader(raw, b"bolb 9\0"),
}


def _memory(tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    """A memory with history; returns its path, an older cursor and the ids of objects to damage."""
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    store.write("notes/a.md", "a memory about cats\n" * 40, expected=None)
    cursor = store.head()
    store.write("b.md", "another memory\n", expected=None)
    version = store.read("notes/a.md").version
    store.write("notes/a.md", "a memory about dogs and cats\n" * 40, expected=version)
    head = store.head()
    commit = head
    tree = _git(repo, "rev-parse", f"{head}:notes")
    blob = store.read("notes/a.md").version
    loosen(repo)  # loose objects to damage (store writes are packs)
    return repo, cursor, {"blob": blob, "tree": tree, "commit": commit}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def _damage(repo: Path, oid: str, damage: Damage) -> None:
    path = repo / "objects" / oid[:2] / oid[2:]
    raw = path.read_bytes()
    os.chmod(path, 0o644)
    path.write_bytes(damage(raw))


@pytest.fixture(scope="module")
def worker() -> Iterator[subprocess.Popen[str]]:
    """The fork server of ``corrupt_worker.py``: each memory's calls run in a child of their own."""
    proc = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and json.loads(proc.stdout.readline()) == {"ready": True}
    yield proc
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(timeout=60)
    proc.stdout.close()


def _run_every_call(worker: subprocess.Popen[str], repo: Path, cursor: str) -> dict[str, dict[str, object]]:
    assert worker.stdin is not None and worker.stdout is not None
    out = repo.with_name("calls.jsonl")
    worker.stdin.write(json.dumps({"repo": str(repo), "cursor": cursor, "out": str(out), "timeout": HANG_GUARD}) + "\n")
    worker.stdin.flush()
    answer = json.loads(worker.stdout.readline())
    lines = out.read_text().splitlines()
    if answer["timeout"]:
        started = [json.loads(line)["start"] for line in lines if '"start"' in line]
        raise AssertionError(f"hung in {started[-1] if started else 'opening the store'}")
    assert answer["status"] == 0, answer
    results = {}
    for line in lines:
        record = json.loads(line)
        if "call" in record:
            results[record["call"]] = record
    return results


@pytest.mark.parametrize("kind", ["blob", "tree", "commit"])
@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_loose_object_never_hangs_and_is_named(
    worker: subprocess.Popen[str], tmp_path: Path, kind: str, damage: str
) -> None:
    repo, cursor, oids = _memory(tmp_path)
    oid = oids[kind]
    _damage(repo, oid, DAMAGES[damage])
    results = _run_every_call(worker, repo, cursor)
    assert len(results) == 20, results
    for record in results.values():
        assert "crash" not in record, record
        if "code" in record:
            assert record["code"] == "unavailable", record
    # every read of the damaged object fails and says which one it is
    must_fail = {"blob": ["read", "search"], "tree": ["read", "list"], "commit": ["read", "list", "log"]}[kind]
    must_fail.append("read_under")  # the bulk read (recall's rebuild) reads all three
    must_fail.append("read_short_rev")
    for name in must_fail:
        record = results[name]
        assert record.get("code") == "unavailable", record
        message = str(record["message"])
        assert oid in message and "corrupt" in message and "gitmem fsck" in message, record
    fsck = results["fsck"]
    assert fsck["fsck_ok"] is False
    assert any(oid in str(m) and "corrupt loose object" in str(m) for m in fsck["messages"]), fsck  # type: ignore[union-attr]


def test_reads_of_sound_objects_beside_a_damaged_one_still_answer(worker: subprocess.Popen[str], tmp_path: Path) -> None:
    repo, cursor, oids = _memory(tmp_path)
    _damage(repo, oids["blob"], DAMAGES["cut_in_half"])
    results = _run_every_call(worker, repo, cursor)
    for name in ("read_other", "log", "changes_since", "show", "write_other", "index_status"):
        assert results[name].get("ok") is True, results[name]


def test_a_damaged_loose_copy_of_a_packed_object_is_dropped_and_the_pack_read(
    worker: subprocess.Popen[str], tmp_path: Path
) -> None:
    """git reads packs first; libgit2 reads the loose copy (and hangs on it, even in prefix lookups).

    A repack that kept the loose files leaves both: the damaged loose copy is
    redundant and goes, as ``git prune-packed`` would remove it.
    """
    repo, cursor, oids = _memory(tmp_path)
    _git(repo, "repack", "-a", "-q")  # packs everything, leaves the loose files
    _damage(repo, oids["blob"], DAMAGES["cut_in_half"])
    assert [bad.oid for bad in damaged_loose_objects(str(repo / "objects"))] == [oids["blob"]]
    results = _run_every_call(worker, repo, cursor)
    for name in ("read", "search", "list", "show", "diff", "blame", "write_other"):
        assert results[name].get("ok") is True, results[name]
    assert results["fsck"]["fsck_ok"] is True, results["fsck"]
    assert not (repo / "objects" / oids["blob"][:2] / oids["blob"][2:]).exists()


def test_parse_loose_reads_what_git_writes(tmp_path: Path) -> None:
    repo, _cursor, oids = _memory(tmp_path)
    for kind, oid in oids.items():
        number, body = parse_loose((repo / "objects" / oid[:2] / oid[2:]).read_bytes())
        assert (
            body
            == subprocess.run(
                ["git", "--git-dir", str(repo), "cat-file", kind, oid], check=True, capture_output=True
            ).stdout
        )
        assert number == {"commit": 1, "tree": 2, "blob": 3}[kind]
    assert list(damaged_loose_objects(str(repo / "objects"))) == []
    assert parse_loose(zlib.compress(b"blob 0\0")) == (3, b"")


RMDIR_LOOP = """
import os, sys
objects = sys.argv[1]
while True:
    for name in os.listdir(objects):
        if len(name) == 2:
            try:
                os.rmdir(os.path.join(objects, name))
            except OSError:
                pass
"""


def test_object_writes_survive_their_folder_being_removed_meanwhile(tmp_path: Path) -> None:
    """``git prune-packed`` (a repack by hand) removes empty ``objects/xx`` folders.

    libgit2 creates the folder, then renames its temporary file into it; a folder
    removed in between failed the write. Another process removes every empty
    folder in a loop while this one writes objects: none may fail (libgit2's fsync
    is off, as in every test that opens no durable mount: a write that waited
    for the disk between the folder's creation and the rename would lose every
    race to a remover looping without pause).
    """
    from gitmem.git.loose import open_repository

    repo = tmp_path / "r.git"
    GitFileStore.init(repo)
    remover = subprocess.Popen([sys.executable, "-c", RMDIR_LOOP, str(repo / "objects")])
    try:
        handle = open_repository(str(repo))
        written = [str(handle.create_blob(b"object %d\n" % i)) for i in range(3000)]
    finally:
        remover.kill()
        remover.wait()
    assert len(set(written)) == 3000
    assert all(_git(repo, "cat-file", "-t", oid) == "blob" for oid in written[::300])
