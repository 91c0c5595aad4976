"""The quick read path (gitmem.quickread over gitmem.git.peek) answers exactly as the store does.

Every case builds a real mount, then puts its objects in each shape git can leave
them in (gitmem's own packs, loose files, ``git gc`` packs with offset deltas,
packs with ref deltas, packed refs) and compares the quick path with
``SyncGitFileStore.list``/``read``. The peek is also called on its own, so a case
where it silently fell back to the store could not pass as a peek test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from gitmem import quickread
from gitmem.errors import MemoryStoreError
from gitmem.git.peek import CannotPeek, Peek, apply_delta, parse_config
from gitmem.root import Root
from tests.loosen import loosen

SHARED = "".join(f"line {i} of a note that changes a little in each version\n" for i in range(60))


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, check=True).stdout


@pytest.fixture
def root(tmp_path: Path) -> Root:
    root = Root(tmp_path / "root")
    store = root.mount("user", create=True, hooks=False).sync  # plain git pushes what the tests plant
    store.write("plain.md", "no frontmatter here\nsecond line\n", expected=None)
    store.write("a/described.md", "---\ndescription: a described note\n---\nbody\n", expected=None)
    store.write("a/b/deep.md", "deep\n", expected=None)
    store.write("z.md", "", expected=None)
    version = None
    for i in range(6):  # versions of one big file: git gc stores them as deltas of each other
        version = store.write("big.md", f"---\ndescription: version {i}\n---\n{SHARED}edit {i}\n", expected=version)
    return root


#: Folders an ``ls`` may name: nested, empty-named by a file (``plain.md/``), absent.
FOLDERS = ("a/", "a/b/", "a/b/deep.md/", "plain.md/", "nothing/", "a/nothing/")


def same(root: Root) -> None:
    """The quick path and the store agree on the listing and on every file."""
    store = root.mount("user").sync
    assert quickread.list_files(root, "user") == store.list()
    for prefix in FOLDERS:  # one folder: its own trees and files only, the store's answer filtered
        assert quickread.list_files(root, "user", prefix) == [e for e in store.list() if e.path.startswith(prefix)]
    for entry in store.list():
        assert quickread.read_file(root, "user", entry.path) == store.read(entry.path)


def peeked(root: Root) -> Peek:
    """The peek itself reads this mount (no fallback), every object checked."""
    peek = Peek(os.fspath(root.mount_path("user")))
    tree = peek.tree_of(peek.head())
    assert peek.tree_items(tree)
    for entry in root.mount("user").sync.list():
        assert len(peek.blob(entry.version)) == entry.size
    return peek


def test_gitmem_own_packs(root: Root) -> None:
    peeked(root)
    same(root)


def test_loose_objects(root: Root) -> None:
    repo = root.mount_path("user")
    packs = [p.read_bytes() for p in (repo / "objects" / "pack").glob("*.pack")]
    for pack in (repo / "objects" / "pack").iterdir():
        pack.unlink()
    for data in packs:  # git skips objects it already has, so the packs go first
        git(repo, "unpack-objects", stdin=data)
    assert not list((repo / "objects" / "pack").iterdir())
    peeked(root)
    same(root)


def test_gc_packs_with_offset_deltas_and_packed_refs(root: Root) -> None:
    repo = root.mount_path("user")
    git(repo, "gc", "--aggressive", "--prune=now")
    assert (repo / "packed-refs").exists() and not (repo / "refs" / "heads" / "main").exists()
    [idx] = (repo / "objects" / "pack").glob("*.idx")
    assert b"chain length" in git(repo, "verify-pack", "-v", str(idx))  # deltas are there to apply
    peeked(root)
    same(root)


def test_packs_with_ref_deltas(root: Root) -> None:
    repo = root.mount_path("user")
    objects = git(repo, "rev-list", "--objects", "--all")
    # Without --delta-base-offset, pack-objects names each delta's base by id (REF_DELTA).
    name = git(repo, "pack-objects", "--window=50", "--depth=50", str(repo / "objects" / "pack" / "pack"), stdin=objects)
    keep = name.decode().strip()
    for pack in (repo / "objects" / "pack").iterdir():
        if keep not in pack.name:
            pack.unlink()
    git(repo, "prune-packed")
    assert b"chain length" in git(repo, "verify-pack", "-v", str(repo / "objects" / "pack" / f"pack-{keep}.idx"))
    peeked(root)
    same(root)


def test_config_limits_apply_as_in_the_store(root: Root) -> None:
    git(root.mount_path("user"), "config", "gitmem.maxDescriptionChars", "5")
    assert [e.description for e in quickread.list_files(root, "user")] == [
        e.description for e in root.mount("user").sync.list()
    ]
    assert "a des" in [e.description for e in quickread.list_files(root, "user")]


def test_errors_are_the_stores(root: Root) -> None:
    store = root.mount("user").sync
    for path in ("missing.md", "a", "a/b", "../x", "a/described.md/x"):
        with pytest.raises(MemoryStoreError) as quick:
            quickread.read_file(root, "user", path)
        with pytest.raises(MemoryStoreError) as full:
            store.read(path)
        assert (quick.value.code, quick.value.message) == (full.value.code, full.value.message), path
    with pytest.raises(MemoryStoreError) as nothing:
        quickread.list_files(root, "nobody")
    assert nothing.value.code == "unknown_memory"
    with pytest.raises(MemoryStoreError) as bad:
        quickread.read_file(root, "Bad Name", "x.md")
    assert bad.value.code == "invalid_path"


def test_a_link_pushed_with_git_reads_as_the_store_reads_it(root: Root, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(root.mount_path("user")), str(clone)], check=True)
    (clone / "link.md").symlink_to("plain.md")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"}
    subprocess.run(["git", "-C", str(clone), "add", "link.md"], check=True, env=env)
    subprocess.run(["git", "-C", str(clone), "commit", "-qm", "link"], check=True, env=env)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "main"], check=True, env=env)
    peeked(root)
    same(root)
    with pytest.raises(MemoryStoreError) as quick:
        quickread.read_file(root, "user", "link.md")
    assert quick.value.code == "not_found"


def test_what_the_peek_declines_falls_back_to_the_store(root: Root) -> None:
    repo = root.mount_path("user")
    expected = root.mount("user").sync.list()
    with open(repo / "config", "a") as fh:
        fh.write('[include]\n\tpath = "other"\n')
    with pytest.raises(CannotPeek):
        Peek(os.fspath(repo))
    assert quickread.list_files(root, "user") == expected
    assert quickread.read_file(root, "user", "plain.md").text.startswith("no frontmatter")


def test_a_damaged_loose_object_is_the_stores_corruption_error(root: Root, monkeypatch: pytest.MonkeyPatch) -> None:

    repo = root.mount_path("user")
    version = root.mount("user").sync.write("new.md", "fresh content\n", expected=None)
    loosen(repo)  # this commit's objects as loose files
    loose = repo / "objects" / version[:2] / version[2:]
    data = loose.read_bytes()
    loose.chmod(0o644)
    loose.write_bytes(data[: len(data) // 2])
    with pytest.raises(CannotPeek):
        Peek(os.fspath(repo)).blob(version)
    with pytest.raises(MemoryStoreError) as quick:
        quickread.read_file(root, "user", "new.md")
    with pytest.raises(MemoryStoreError) as full:
        Root(root.path).mount("user").sync.read("new.md")
    assert quick.value.code == full.value.code == "unavailable"
    assert version in quick.value.message


def test_an_object_that_does_not_match_its_id_is_never_shown(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    oid = git(repo, "hash-object", "-w", "--stdin", stdin=b"real\n").decode().strip()
    import zlib

    path = repo / "objects" / oid[:2] / oid[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"blob 5\0fake\n"))
    with pytest.raises(CannotPeek, match="does not match"):
        Peek(os.fspath(repo)).blob(oid)


def test_parse_config() -> None:
    text = """
# a comment
[core]
\trepositoryformatversion = 0 ; trailing comment
\teditor = "code --wait"
[GitMem]
\tmaxDescriptionChars = 64k   # limit
\tKind=records
[remote "origin"]
\turl = "x y"
[user]
\tname = Some One
"""
    assert parse_config(text) == {
        "core.repositoryformatversion": "0",
        "gitmem.maxdescriptionchars": "64k",
        "gitmem.kind": "records",
        "remote.origin.url": "\0",  # quoted: a read never asks, a push then goes to the store
    }
    for bad in ('[gitmem]\n\tkind = "file"\n', "[gitmem]\n\tkind\n", "[includeIf \"gitdir:x\"]\n\tpath = y\n", "[a]\n\tb = c \\\n"):
        with pytest.raises(CannotPeek):
            parse_config(bad)


def test_remote_urls_are_read_as_git_reads_them(tmp_path: Path) -> None:
    """``remote.NAME.url`` by the name as written (case-sensitive), the last one set winning; what
    needs git's parser (a quoted URL, an old-style or escaped section) is declined, never guessed."""
    repo = tmp_path / "m.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    config = repo / "config"
    base = config.read_text()
    config.write_text(
        base
        + '[remote "origin"]\n\turl = /one\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
        + '[Remote "Up.Stream"]\n\tURL = https://h/x.git # a comment\n'
        + '[remote "origin"]\n\turl = /two\n'
        + '[remote "quoted"]\n\turl = "/a b"\n'
    )
    peek = Peek(os.fspath(repo))
    assert peek.remote_url("origin") == "/two"
    assert peek.remote_url("Up.Stream") == "https://h/x.git"
    assert peek.remote_url("up.stream") is None and peek.remote_url("none") is None
    with pytest.raises(CannotPeek):
        peek.remote_url("quoted")
    for section in ("[remote.origin]", '[remote "a\\\\b"]', '[remote"o"]'):
        config.write_text(base + f"{section}\n\turl = /x\n")
        with pytest.raises(CannotPeek):
            Peek(os.fspath(repo))


def test_a_ref_is_absent_only_when_neither_file_nor_packed_refs_holds_it(tmp_path: Path) -> None:
    repo = tmp_path / "m.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    peek = Peek(os.fspath(repo))
    assert peek.ref("refs/gitmem/erasures") is None
    (repo / "packed-refs").write_text("# pack-refs with: peeled\n" + "a" * 40 + " refs/gitmem/erasures\n")
    assert peek.ref("refs/gitmem/erasures") == "a" * 40
    (repo / "refs" / "gitmem").mkdir()
    (repo / "refs" / "gitmem" / "erasures").write_text("b" * 40 + "\n")
    assert peek.ref("refs/gitmem/erasures") == "b" * 40
    (repo / "refs" / "gitmem" / "erasures").unlink()
    os.mkfifo(repo / "refs" / "gitmem" / "erasures")  # never blocks: declined
    with pytest.raises(CannotPeek):
        peek.ref("refs/gitmem/erasures")


def test_apply_delta() -> None:
    base = bytes(range(256)) * 300  # 76,800 bytes
    # copy 0x10000 bytes (size bits all clear) from offset 0, insert b"xy", copy 16 bytes from offset 256
    delta = (
        bytes([0x80, 0xD8, 0x04])  # source size 76,800 as a varint
        + bytes([0x92, 0x80, 0x04])  # target size 65,536 + 2 + 16 = 65,554
        + bytes([0x80])  # copy, no offset or size bytes: offset 0, size 0x10000
        + bytes([2]) + b"xy"
        + bytes([0x80 | 0x02 | 0x10, 0x01, 16])  # copy: offset byte 1 = 1 (256), size 16
    )
    out = apply_delta(base, delta)
    assert out == base[:0x10000] + b"xy" + base[256:272]
    with pytest.raises(CannotPeek):
        apply_delta(base[:-1], delta)


AGREE = r"""
import sys
from gitmem import quickread
from gitmem.root import Root
root = Root(sys.argv[1])
quick = [e.description for e in quickread.list_files(root, "user")]
full = [e.description for e in root.mount("user").sync.list()]
print(quick == full, quick)
"""


@pytest.mark.parametrize("where", ["global", "xdg"])
def test_limits_from_the_users_own_config_apply_as_libgit2_reads_them(root: Root, tmp_path: Path, where: str) -> None:
    # libgit2 reads ~/.gitconfig and $XDG_CONFIG_HOME/git/config too; the peek reads the same files.
    home = tmp_path / "home"
    config = home / ".gitconfig" if where == "global" else home / "xdg" / "git" / "config"
    config.parent.mkdir(parents=True)
    config.write_text("[user]\n\tname = Some One\n[gitmem]\n\tmaxDescriptionChars = 3\n")
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / "xdg")}
    done = subprocess.run(
        [sys.executable, "-c", AGREE, str(root.path)], env=env, capture_output=True, text=True, check=True
    )
    agree, _, shown = done.stdout.strip().partition(" ")
    assert agree == "True", done.stdout
    assert "'a d'" in shown  # "a described note" cut to 3 characters: the user's limit applied


def _bare(tmp_path: Path) -> Path:
    repo = tmp_path / "hostile.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    return repo


def _pack_header(kind: int, size: int) -> bytes:
    """A packed object's type-and-size header (git's varint)."""
    out = bytearray([(kind << 4) | (size & 15)])
    size >>= 4
    while size:
        out[-1] |= 0x80
        out.append(size & 0x7F)
        size >>= 7
    return bytes(out)


def _write_pack(repo: Path, entries: list[tuple[bytes, bytes]]) -> None:
    """A version-2 pack of ``(oid, raw entry bytes)`` with its v2 index, written without any checks."""
    import hashlib
    import struct
    import zlib

    body = b"PACK" + struct.pack(">II", 2, len(entries))
    offsets = {}
    for oid, raw in entries:
        offsets[oid] = len(body)
        body += raw
    body += hashlib.sha1(body).digest()
    ids = sorted(offsets)
    fanout = b"".join(struct.pack(">I", sum(1 for i in ids if i[0] <= b)) for b in range(256))
    idx = b"\xfftOc" + struct.pack(">I", 2) + fanout + b"".join(ids)
    idx += b"".join(struct.pack(">I", zlib.crc32(b"")) for _ in ids) + b"".join(struct.pack(">I", offsets[i]) for i in ids)
    idx += body[-20:]
    idx += hashlib.sha1(idx).digest()
    name = hashlib.sha1(body).hexdigest()
    (repo / "objects" / "pack" / f"pack-{name}.pack").write_bytes(body)
    (repo / "objects" / "pack" / f"pack-{name}.idx").write_bytes(idx)


def test_a_loose_object_that_inflates_past_its_header_is_declined(tmp_path: Path) -> None:
    """A small file that claims 5 bytes but inflates to 200 MB: declined after size + 1 bytes, not read whole."""
    import zlib

    repo = _bare(tmp_path)
    oid = "ab" * 20
    (repo / "objects" / "ab").mkdir()
    bomb = zlib.compressobj(9)
    data = bomb.compress(b"blob 5\0") + b"".join(bomb.compress(b"\0" * (1 << 20)) for _ in range(200)) + bomb.flush()
    (repo / "objects" / "ab" / oid[2:]).write_bytes(data)
    tracemalloc.start()
    try:
        with pytest.raises(CannotPeek, match="bad header"):
            Peek(os.fspath(repo)).blob(oid)
        assert tracemalloc.get_traced_memory()[1] < 8 << 20  # never inflated whole
    finally:
        tracemalloc.stop()
    (repo / "objects" / "ab" / oid[2:]).write_bytes(zlib.compress(b"blob 999999999999\0x"))
    with pytest.raises(CannotPeek, match="too large"):
        Peek(os.fspath(repo)).blob(oid)


def test_a_packed_object_that_inflates_past_its_header_is_declined(tmp_path: Path) -> None:
    import zlib

    repo = _bare(tmp_path)
    oid = b"\x11" * 20
    _write_pack(repo, [(oid, _pack_header(3, 5) + zlib.compress(b"\0" * (50 << 20), 9))])
    tracemalloc.start()
    try:
        with pytest.raises(CannotPeek, match="past the size"):
            Peek(os.fspath(repo)).blob(oid.hex())
        assert tracemalloc.get_traced_memory()[1] < 8 << 20
    finally:
        tracemalloc.stop()
    repo2 = _bare(tmp_path / "two")
    _write_pack(repo2, [(oid, _pack_header(3, 1 << 40) + zlib.compress(b"x"))])
    with pytest.raises(CannotPeek, match="too large"):
        Peek(os.fspath(repo2)).blob(oid.hex())


def test_ref_delta_cycles_and_delta_blow_ups_are_declined(tmp_path: Path) -> None:
    import zlib

    repo = _bare(tmp_path)
    a, b = b"\x22" * 20, b"\x33" * 20
    delta = zlib.compress(bytes([1, 1, 1]) + b"x")  # source 1 byte, target 1 byte, insert "x"
    _write_pack(repo, [(a, _pack_header(7, 4) + b + delta), (b, _pack_header(7, 4) + a + delta)])
    with pytest.raises(CannotPeek, match="too deep"):
        Peek(os.fspath(repo)).blob(a.hex())
    copy_all = bytes([0x80])  # copy 0x10000 bytes from offset 0
    blow_up = bytes([0x80, 0x80, 0x04]) + bytes([0x80, 0x80, 0x04]) + copy_all * 5  # says 65,536 bytes, builds 5x
    with pytest.raises(CannotPeek, match="past its stated size"):
        apply_delta(b"\0" * 0x10000, blow_up)


def test_the_quick_path_refuses_other_kinds_of_memory(root: Root) -> None:
    root.mount("facts", create=True, kind="record")
    for call in (lambda: quickread.list_files(root, "facts"), lambda: quickread.read_file(root, "facts", "x.md")):
        with pytest.raises(MemoryStoreError) as caught:
            call()
        assert caught.value.code == "wrong_kind"


def test_ls_of_one_folder_reads_only_that_folder(root: Root, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder's listing reads the trees on its path and its own blobs: not the listing file
    of the whole memory, not another folder's files."""
    quickread.list_files(root, "user")  # the whole memory's listing file now exists
    store = root.mount("user").sync
    read: list[str] = []
    real_blob = Peek.blob
    monkeypatch.setattr(Peek, "blob", lambda self, oid: read.append(oid) or real_blob(self, oid))
    monkeypatch.setattr(quickread, "_load", lambda *a: pytest.fail("the listing file was read"))
    folder = quickread.list_files(root, "user", "a/")
    assert [e.path for e in folder] == ["a/b/deep.md", "a/described.md"]
    assert sorted(read) == sorted(e.version for e in folder)
    assert folder == [e for e in store.list() if e.path.startswith("a/")]


def test_git_grep_started_but_never_read_is_ended_and_reaped(root: Root) -> None:
    """The grep path starts git before it knows it will read it (a small mount goes to the store):
    closing the lines then ends git, though a generator closed before its first item runs no ``finally``."""
    from gitmem.git import gitgrep

    peek = Peek(os.fspath(root.mount_path("user")))
    lines = gitgrep.matching_lines(peek.path, peek.head(), ["-e", "line"])
    assert lines is not None
    proc = lines._proc
    lines.close()
    assert proc.returncode is not None  # killed or ended, and waited for
    assert proc.stdout is not None and proc.stdout.closed
    assert quickread.search(root, "user", "line", regex=False, case_sensitive=False, path="", limit=5).matches


@pytest.mark.parametrize("pattern", ["[[:alpha:]]+", "[a-z&&b]", "x[a~~b]"])
def test_a_regex_that_python_warns_about_is_searched_without_a_warning(root: Root, pattern: str) -> None:
    """``re`` warns (FutureWarning) about sets such as ``[[``; the index's reading of a pattern
    and the matcher both take it quietly, so ``gitmem grep -E`` prints no Python warning on
    stderr, and where warnings are errors the search is still narrowed by the index."""
    import warnings

    store = root.mount("user").sync
    store.write("w.md", "alpha [x\n", expected=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answers = [
            quickread.search(root, "user", pattern, regex=True, case_sensitive=False, path="", limit=10),
            store.search(pattern, regex=True, limit=10),
        ]
    assert answers[0] == answers[1]
    assert [str(w.message) for w in caught] == []
