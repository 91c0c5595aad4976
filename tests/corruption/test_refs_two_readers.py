"""A ref file spelled oddly is read one way: the quick readers (the peek, the loose-ref read) never answer
where the store (libgit2) answers otherwise.

``main`` is read by hand before libgit2 loads (``gitmem ls``/``cat``, a quick pull,
every store call's head). Each hostile spelling below is planted in a real mount;
the quick path must then give the store's answer (or its error), never another
commit's files, and read a planted ``packed-refs`` bounded.
"""

from __future__ import annotations

import subprocess
import tracemalloc
from pathlib import Path

import pytest

from gitmem import quickread
from gitmem.errors import MemoryStoreError
from gitmem.git.looseref import read_ref_file
from gitmem.root import Root
from tests.serve.support import fsck_clean


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def mount(tmp_path: Path) -> tuple[Root, Path, str, str]:
    """A memory whose ``a.md`` says ``one`` at the first commit and ``two`` at ``main``, its refs packed."""
    root = Root(tmp_path / "root")
    store = root.mount("user", create=True).sync
    store.write("a.md", "one\n", expected=None)
    store.write("a.md", "two\n", expected=store.read("a.md").version)
    repo = Path(root.existing_folder("user"))
    first, head = git(repo, "rev-parse", "main~1").strip(), git(repo, "rev-parse", "main").strip()
    git(repo, "pack-refs", "--all")
    assert not (repo / "refs" / "heads" / "main").exists()
    return root, repo, first, head


def answers(root: Root) -> tuple[object, object]:
    """What the quick ``cat`` and the store say of ``a.md`` (a text, or an error code)."""

    def asked(read: object) -> object:
        try:
            return read()  # type: ignore[operator]
        except MemoryStoreError as exc:
            return exc.code

    quick = asked(lambda: quickread.read_file(root, "user", "a.md").text)
    store = asked(lambda: Root(root.path).mount("user").sync.read("a.md").text)
    return quick, store


def test_packed_refs_naming_main_twice_is_read_as_the_store_reads_it(mount: tuple[Root, Path, str, str]) -> None:
    root, repo, first, _ = mount
    packed = repo / "packed-refs"
    packed.write_text(packed.read_text() + f"{first} refs/heads/main\n")
    quick, store = answers(root)
    assert quick == store == "one\n"  # libgit2 (and git) take the later line; the peek took the first
    assert quickread.list_files(root, "user")[0].version == git(repo, "rev-parse", "main:a.md").strip()
    fsck_clean(repo)


@pytest.mark.parametrize(
    "line",
    [b"garbage line\n", b"0x%s refs/heads/main\n", b"%s  refs/heads/main\n", b"%s\n", b"\xff\xfe\n"],
    ids=["garbage", "0x-id", "two-spaces", "no-name", "not-text"],
)
def test_an_odd_packed_refs_line_gets_the_stores_answer(mount: tuple[Root, Path, str, str], line: bytes) -> None:
    root, repo, first, _ = mount
    packed = repo / "packed-refs"
    planted = line.replace(b"%s", first[2:].encode() if line.startswith(b"0x") else first.encode())
    packed.write_bytes(packed.read_bytes() + planted)
    quick, store = answers(root)
    assert quick == store


def test_a_huge_packed_refs_is_not_read_whole_by_the_quick_path(mount: tuple[Root, Path, str, str]) -> None:
    root, repo, _, _ = mount
    packed = repo / "packed-refs"
    header, rest = packed.read_bytes().split(b"\n", 1)
    packed.write_bytes(header + b"\n" + b"x" * (40 << 20) + b"\n" + rest)  # one 40 MB line before main's
    tracemalloc.start()
    try:
        quick, store = answers(root)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert quick == store
    assert peak < 8 << 20  # the peek declines past its bound without reading; the store answers


@pytest.mark.parametrize("spelling", ["0x{}", "{}_{}", "+{}", "{}\r"], ids=["0x", "underscore", "sign", "cr"])
def test_a_loose_main_git_cannot_read_is_no_commit_id(mount: tuple[Root, Path, str, str], spelling: str) -> None:
    root, repo, _, head = mount
    ref = repo / "refs" / "heads" / "main"
    cut = {"0x{}": (head[2:],), "{}_{}": (head[:20], head[21:]), "+{}": (head[1:],), "{}\r": (head,)}[spelling]
    ref.write_text(spelling.format(*cut) + "\n")
    assert (
        read_ref_file(str(ref)) is None
    )  # libgit2's to read: it takes a CR after the id, and calls the rest corrupted
    quick, store = answers(root)
    assert quick == store == ("two\n" if spelling == "{}\r" else "unavailable")
    if spelling != "{}\r":
        with pytest.raises(MemoryStoreError, match="corrupted"):
            Root(root.path).mount("user").sync.read("a.md")


@pytest.mark.parametrize(
    "target",
    [b"refs/heads/a\x00b", b"refs/heads/\xff", b"refs/../../x", b"refs/heads/main", b"refs/heads/" + b"x" * 300],
    ids=["nul", "not-text", "dot-dot", "itself", "long"],
)
def test_a_symbolic_main_gets_the_stores_answer(mount: tuple[Root, Path, str, str], target: bytes) -> None:
    root, repo, _, _ = mount
    (repo / "refs" / "heads" / "main").write_bytes(b"ref: " + target + b"\n")
    quick, store = answers(root)  # a NUL in the name was a ValueError out of the quick cat
    assert quick == store == "unavailable"
