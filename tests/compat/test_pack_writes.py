"""The pack write path makes byte-for-byte the objects libgit2 would, and plain git reads them.

``gitmem.git.packwrite`` encodes trees and commits itself; any difference from
git's encoding (entry order, modes, signature format) would give other ids than
libgit2's tree builder, or objects ``git fsck --strict`` refuses. So the same
edits run on a memory and through libgit2's tree builder, and every commit's
tree must come out the same.
"""

from __future__ import annotations

import hashlib
import os
import random
import struct
import subprocess
import zlib
from pathlib import Path

import pygit2
import pytest
from contract import libgit2_trees
from contract.support import assert_fsck_clean, git, traced_syncs

from gitmem import GitFileStore, MemoryStoreError
from gitmem.git import engine, packfold, packwrite, treeedit
from gitmem.git import repo as gitrepo
from gitmem.model import Edit

NAMES = ["a", "a.b", "a-b", "a0", "b", "ab", "a_", "Z", "é"]


def _paths(rng: random.Random) -> str:
    depth = rng.randint(1, 3)
    return "/".join(rng.choice(NAMES) for _ in range(depth)) + rng.choice(["", ".md", "/x.md"])


def test_trees_match_libgit2_for_random_edits(tmp_path: Path) -> None:
    """Every commit's tree equals the one libgit2's tree builder makes for the same edits, path by path."""
    packed = GitFileStore.init(tmp_path / "packed.git").sync
    ref = pygit2.init_repository(str(tmp_path / "ref.git"), bare=True)
    tree = ref.TreeBuilder().write()
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    live: dict[str, str] = {}  # path -> version
    done = 0
    for step in range(150):
        if live and rng.random() < 0.3:
            path = rng.choice(sorted(live))
            packed.delete(path, expected=live.pop(path))
            tree = libgit2_trees.set_path(ref, ref[tree].peel(pygit2.Tree), path.split("/"), None, path)
        else:
            path = _paths(rng)
            text = f"{step} {rng.random()}\n"
            try:
                version = packed.write(path, text, expected=live.get(path))
            except MemoryStoreError as exc:  # a file where a folder is, or below a file
                assert exc.code == "invalid_path", (seed, path, exc)
                with pytest.raises(MemoryStoreError):
                    libgit2_trees.set_path(ref, ref[tree].peel(pygit2.Tree), path.split("/"), "0" * 40, path)
                continue
            assert version == str(ref.create_blob(text.encode()))
            tree = libgit2_trees.set_path(ref, ref[tree].peel(pygit2.Tree), path.split("/"), version, path)
            live[path] = version
            done += 1
        ours = git(tmp_path / "packed.git", "rev-parse", "main^{tree}").stdout.strip()
        assert ours == str(tree), (seed, step, path)
    assert done > 50
    assert_fsck_clean(tmp_path / "packed.git")
    git(tmp_path / "packed.git", "gc", "-q")
    assert_fsck_clean(tmp_path / "packed.git")


def test_commit_encoding_matches_libgit2(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r.git"), bare=True)
    tree = repo.TreeBuilder().write()
    author = pygit2.Signature("Ann Ó", "ann@example.org", 1_700_000_000, -330)
    committer = pygit2.Signature("gitmem", "gitmem@localhost", 1_700_000_100, 60)
    message = "edit a.md\n\nGitmem-Op: edit\nGitmem-Path: a.md\n"
    theirs = repo.create_commit(None, author, committer, message, tree, [])
    raw = packwrite.commit_bytes(
        str(tree),
        [],
        packwrite.signature_line(author.raw_name, author.raw_email, author.time, author.offset),
        packwrite.signature_line(committer.raw_name, committer.raw_email, committer.time, committer.offset),
        message,
    )
    assert treeedit.object_id(b"commit", raw) == str(theirs)


@pytest.mark.parametrize("durable", [False, True])
def test_a_commit_is_one_pack_and_nothing_loose(tmp_path: Path, durable: bool) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    objects = tmp_path / "m.git" / "objects"
    loose_before = {p for p in objects.glob("??/*")}
    pending = treeedit.PendingObjects()
    pending.add(b"blob", b"x")
    packwrite.write_pack(str(tmp_path / "m.git"), pending, durable=durable)  # a stray pack is harmless
    store.write("deep/er/file.md", "hello\n", expected=None)
    assert {p for p in objects.glob("??/*")} == loose_before
    names = sorted(p.name for p in (objects / "pack").iterdir())
    assert len([n for n in names if n.endswith(".idx")]) == 2 and not [n for n in names if n.startswith("tmp_")]
    assert git(tmp_path / "m.git", "show", "main:deep/er/file.md").stdout == "hello\n"
    assert_fsck_clean(tmp_path / "m.git")


@pytest.mark.parametrize("size", [0, 1, 300, 65_534, 65_535, 65_536, 131_070, 131_071, 200_000])
def test_stored_trees_are_one_zlib_stream_of_their_bytes(size: int) -> None:
    raw = random.Random(size).randbytes(size)
    stream = packwrite.store_tree(raw)
    inflater = zlib.decompressobj()
    assert inflater.decompress(stream) == raw
    assert inflater.eof and not inflater.unused_data
    assert len(stream) == 2 + 5 * max(1, -(-size // 65_535)) + size + 4  # stored blocks: nothing compressed


@pytest.mark.parametrize("count", [0, 1, 2, 5, 300])
def test_the_index_fan_out_counts_ids_by_first_byte(count: int) -> None:
    rng = random.Random(count)
    ids = [rng.randbytes(20) for _ in range(count)] + ([b"\x00" * 20, b"\xff" * 20] if count > 2 else [])
    idx = packfold.index_v2([(oid, 0, 0) for oid in ids], b"\x01" * 20)
    fanout = struct.unpack_from(">256I", idx, 8)
    assert list(fanout) == [sum(1 for oid in ids if oid[0] <= byte) for byte in range(256)]


def test_offsets_from_2_gib_up_go_to_the_64_bit_table_git_reads() -> None:
    rng = random.Random(7)
    offsets = [12, 4_000, (1 << 31) - 1, 1 << 31, (1 << 33) + 5, 7 << 40]
    entries = [(rng.randbytes(20), rng.getrandbits(32), off) for off in offsets]
    idx = packfold.index_v2(list(entries), b"\x01" * 20)
    shown = subprocess.run(["git", "show-index"], input=idx, capture_output=True, check=True).stdout.decode()
    read = {line.split()[1]: (int(line.split()[0]), line.split()[2]) for line in shown.splitlines()}
    assert read == {oid.hex(): (off, f"({crc:08x})") for oid, crc, off in entries}
    assert len(idx) == 8 + 1024 + 28 * len(entries) + 8 * 3 + 40  # three offsets in the 64-bit table
    assert idx[-20:] == hashlib.sha1(idx[:-20], usedforsecurity=False).digest()


def test_a_folder_tree_over_one_stored_block_reads_back_in_git(tmp_path: Path) -> None:
    store = GitFileStore.init(tmp_path / "m.git").sync
    names = [f"{n:05d}-{'x' * 20}.md" for n in range(2_400)]  # a folder tree of ~110 KiB: two stored blocks
    store.apply([Edit(f"big/{name}", "x\n", None) for name in names])
    store.write("big/last.md", "y\n", expected=None)  # the spliced tree, packed whole
    assert git(tmp_path / "m.git", "ls-tree", "--name-only", "main:big").stdout.split() == sorted([*names, "last.md"])
    assert_fsck_clean(tmp_path / "m.git")


def test_geometric_rollup_follows_gits_rule() -> None:
    assert packwrite.geometric_rollup({"big": 10_000, "a": 5, "b": 5, "c": 5}) == ["a", "b", "c"]
    assert packwrite.geometric_rollup({"big": 10_000, "mid": 40, "a": 5, "b": 5}) == ["a", "b"]  # mid and big hold
    assert sorted(packwrite.geometric_rollup({"big": 10_000, "mid": 15, "a": 5, "b": 5})) == ["a", "b", "mid"]
    assert packwrite.geometric_rollup({"only": 3}) == []
    assert packwrite.geometric_rollup({"big": 10_000, "mid": 40, "a": 15}) == []  # already a progression


def test_folded_packs_stay_their_grace_and_until_a_later_fold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fold leaves the packs it copied in place (a reader may have listed them); a later one deletes them."""
    store = GitFileStore.init(tmp_path / "m.git").sync
    version = None
    for n in range(6):
        version = store.write("a.md", f"{n}\n", expected=version)
    pack_dir = tmp_path / "m.git" / "objects" / "pack"
    before = {p.name for p in pack_dir.glob("*.idx")}
    store.repo.lock_timeout = 30
    with store.repo.lock.hold():
        store.repo.compact()
    after = {p.name for p in pack_dir.glob("*.idx")}
    assert before < after and packwrite.pack_count(str(tmp_path / "m.git")) < len(before)  # folded, nothing deleted
    assert_fsck_clean(tmp_path / "m.git")
    reader = GitFileStore.open(tmp_path / "m.git").sync
    assert reader.read("a.md").text == "5\n"
    for n in range(6, 9):
        version = store.write("a.md", f"{n}\n", expected=version)
    monkeypatch.setattr(packwrite, "GRACE_SECONDS", 60.0)
    with store.repo.lock.hold():
        store.repo.compact()  # a later fold, but within the grace: the first fold's leftovers stay
    assert before - after <= {p.name for p in pack_dir.glob("*.idx")}
    monkeypatch.setattr(packwrite, "GRACE_SECONDS", 0.0)
    version = store.write("a.md", "9\n", expected=version)
    with store.repo.lock.hold():
        store.repo.compact()
    left = {p.name for p in pack_dir.glob("*.idx")}
    assert not left & (before - after)  # gone now
    leftovers = list(packwrite._folded(str(tmp_path / "m.git")))
    assert len(left) == packwrite.pack_count(str(tmp_path / "m.git")) + len(leftovers)
    assert store.read("a.md").text == reader.read("a.md").text == "9\n"
    assert_fsck_clean(tmp_path / "m.git")


@pytest.mark.parametrize(
    "error",
    [FileNotFoundError("objects/pack/pack-gone.idx"), RuntimeError("a bug in the fold")],
    ids=["pack-gone", "unexpected"],
)
def test_a_failed_fold_never_fails_the_write_it_follows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    """A foreign ``git gc`` can delete a pack under the fold, or the fold has a bug; the write is committed all the same.

    Not even an unexpected error may fail it: the write is on ``main``, and an error
    would have its caller make it again.
    """

    def vanished(*_: object) -> bool:
        raise error

    monkeypatch.setattr(engine, "MAX_PACKS", 0)
    monkeypatch.setattr(packwrite, "compact", vanished)
    store = GitFileStore.init(tmp_path / "m.git").sync
    version = store.write("a.md", "kept\n", expected=None)
    assert store.read("a.md").version == version
    monkeypatch.undo()
    monkeypatch.setattr(engine, "MAX_PACKS", 0)
    before = packwrite.pack_count(str(tmp_path / "m.git"))
    store.write("b.md", "folded\n", expected=None)
    assert packwrite.pack_count(str(tmp_path / "m.git")) < before + 1  # the next fold works
    assert_fsck_clean(tmp_path / "m.git")


def test_durable_commit_syncs_before_each_step_it_depends_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With durability on: pack and index on disk before their renames, the folder before the ref, the ref last."""
    import threading

    store = GitFileStore.init(tmp_path / "m.git").sync
    store.set_durable(True)  # the mount's setting: the engine syncs its pack and ref itself
    events: list[tuple[str, str]] = []
    guard = threading.Lock()
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(fd: int) -> None:
        real_fsync(fd)
        with guard:
            events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))

    def rename(src: str, dst: str) -> None:
        with guard:
            events.append(("rename", os.fspath(dst)))
        real_rename(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    store.write("a/b.md", "durable\n", expected=None)
    monkeypatch.undo()
    kinds = [(kind, os.path.basename(path)) for kind, path in events]
    # The pack is written under its final name, the index under a temp name renamed after both are synced.
    synced = [i for i, (k, name) in enumerate(kinds) if k == "fsync" and name.startswith(("tmp_idx_", "pack-"))]
    renamed_idx = [i for i, (k, name) in enumerate(kinds) if k == "rename" and name.startswith("pack-")]
    pack_dir = [i for i, (k, path) in enumerate(events) if k == "fsync" and path.endswith("objects/pack")]
    assert len(synced) == 2 and len(renamed_idx) == 1 and pack_dir, kinds
    assert {kinds[i][1].rsplit(".", 1)[-1] for i in synced} >= {"pack"}
    assert kinds[renamed_idx[0]][1].endswith(".idx")
    assert max(synced) < renamed_idx[0] < pack_dir[0]
    # main moves in libgit2's transaction (its fsync is on for a durable mount), in C: seen under strace.
    repo = tmp_path / "m.git"
    code = f"from gitmem import GitFileStore\nGitFileStore.open({str(repo)!r}).sync.write('c.md', 'x\\n', expected=None)"
    traced = traced_syncs(code, tmp_path / "strace.txt")
    if traced is not None:
        heads = str(repo / "refs" / "heads")
        order = [
            traced.index(("fsync", str(repo / "objects" / "pack"))),
            traced.index(("fsync", heads + "/main.lock")),
            traced.index(("rename", heads + "/main")),
            traced.index(("fsync", heads)),
        ]
        assert order == sorted(order), traced
    assert store.read("a/b.md").text == "durable\n"
    assert_fsck_clean(tmp_path / "m.git")


def test_small_packs_fold_in_process_into_a_pack_git_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "MAX_PACKS", 1_000)  # the writes fold nothing: this test folds
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    for n in range(8):
        store.write(f"d{n % 3}/a{n}.md", f"text {n}\n" * 30, expected=None)
    folder = str(repo / "objects" / "pack")
    names = sorted(p.name[:-4] for p in (repo / "objects" / "pack").glob("*.idx"))
    objects = set()
    for name in names:
        listing = git(repo, "verify-pack", "-v", os.path.join(folder, name + ".idx")).stdout
        objects |= {line.split()[0] for line in listing.splitlines() if len(line.split()) >= 5}
    made = packfold.fold(folder, names)
    assert made is not None and made not in names
    listing = git(repo, "verify-pack", "-v", os.path.join(folder, made + ".idx")).stdout  # checksums, CRCs, objects
    assert {line.split()[0] for line in listing.splitlines() if len(line.split()) >= 5} == objects
    for name in names:  # as a fold would, once the grace has passed
        for ext in (".idx", ".pack"):
            os.unlink(os.path.join(folder, name + ext))
    assert GitFileStore.open(repo).sync.read("d1/a4.md").text.startswith("text")
    assert_fsck_clean(repo)


def test_packs_with_deltas_or_damage_are_left_to_git(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    store = GitFileStore.init(repo).sync
    version = None
    for n in range(6):
        version = store.write("a.md", "same long line of text\n" * 50 + f"{n}\n", expected=version)
    folder = repo / "objects" / "pack"
    names = sorted(p.name[:-4] for p in folder.glob("*.idx"))
    git(repo, "repack", "-a", "-d", "-q")  # git's own pack: the versions of a.md become deltas
    deltas = sorted(p.name[:-4] for p in folder.glob("*.idx"))
    listing = git(repo, "verify-pack", "-v", str(folder / (deltas[0] + ".idx"))).stdout
    assert any(len(line.split()) == 7 for line in listing.splitlines())  # an entry with a delta base
    assert packfold.fold(str(folder), deltas) is None
    store.write("b.md", "one\n", expected=None)
    store.write("c.md", "two\n", expected=None)
    small = sorted(set(p.name[:-4] for p in folder.glob("*.idx")) - set(deltas) - set(names))
    assert packfold._entries(str(folder), small[0]) is not None
    target = folder / (small[0] + ".pack")
    data = bytearray(target.read_bytes())
    data[14] ^= 0xFF  # inside the first entry: its CRC-32 no longer matches the index
    os.chmod(target, 0o644)
    target.write_bytes(bytes(data))
    assert packfold._entries(str(folder), small[0]) is None
    assert packfold.fold(str(folder), small) is None


def test_a_fold_keeps_the_writers_parsed_trees_and_a_purge_drops_them(tmp_path: Path) -> None:
    """A fold deletes no object, so the trees the mount's writers parsed are kept across the
    reopen it causes; a purge or forget (the history mark) may have erased trees they name,
    so they are dropped."""
    store = GitFileStore.init(tmp_path / "m.git").sync
    store.write("a/b.md", "one\n", expected=None)
    repo = store.repo
    kept = getattr(repo.writers, "trees", None)
    assert kept is not None and kept[1].trees
    cache = kept[1]
    gitrepo._bump(repo._packs_path)  # what a fold that deleted packs does
    repo._local.repo = None
    repo.fresh()
    store.write("a/c.md", "two\n", expected=None)
    assert repo.writers.trees[1] is cache  # type: ignore[attr-defined]
    assert store.read("a/b.md").text == "one\n"
    repo.bump_generation()  # what a purge or forget does
    repo.fresh()
    store.write("a/d.md", "three\n", expected=None)
    assert repo.writers.trees[1] is not cache  # type: ignore[attr-defined]
    assert store.read("a/b.md").text == "one\n"


def test_notes_on_both_sides_of_the_stored_size_read_back_through_git_and_a_fold(tmp_path: Path) -> None:
    """A note up to ``STORED_BLOB_BYTES`` is packed as it is, a bigger one deflated; git reads both, folded or not."""
    path = tmp_path / "m.git"
    store = GitFileStore.init(path).sync
    limit = packwrite.STORED_BLOB_BYTES
    rng = random.Random(7)
    texts = {}
    for name, size in (("empty.md", 0), ("small.md", 300), ("edge.md", limit), ("over.md", limit + 1), ("big.md", 50_000)):
        text = "".join(rng.choice("abc \n") for _ in range(size - 1)) + "\n" if size else ""
        store.write(name, text, expected=None)
        texts[name] = text
    for name, text in texts.items():
        assert git(path, "show", f"main:{name}").stdout == text
    assert_fsck_clean(path)
    git(path, "repack", "-a", "-d")  # git folds the packs, keeping what it can of their bytes
    reopened = GitFileStore.open(path).sync
    for name, text in texts.items():
        assert reopened.read(name).text == text
    assert_fsck_clean(path)
