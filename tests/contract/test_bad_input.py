"""Bad input gets its code and changes nothing: same listing, no change listed, on git the
same head and a clean ``git fsck --strict``.

Each test runs a whole table against one store and reports every row that went wrong,
so one run shows all the gaps rather than the first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from contract.support import Subject, assert_fsck_clean
from gitmem import FileFormat, MemoryStoreError
from gitmem.fileformat import KIB
from gitmem.model import Edit, Origin

BAD_PATHS: list[Any] = [
    "",
    "/a.md",
    "a.md/",
    "/",
    "a//b.md",
    ".",
    "..",
    "./a.md",
    "a/./b.md",
    "../a.md",
    "a/../b.md",
    "a\\b.md",
    "a\x00b.md",
    "a\nb.md",
    "a\rb.md",
    "a\tb.md",
    "a\x7fb.md",
    "a\x85b.md",
    "a\u2028b.md",
    ".git",
    ".GIT",
    ".Git/config",
    "dir/.git",
    "dir/.git/hooks/post-update",
    ".git.",
    ".git ",
    ".git. .",
    "git~1",
    "GIT~1/x",
    ".g\u200cit",
    "\ufeff.git",
    ".gitmodules",
    ".GitModules",
    ".gitattributes",
    ".git:stream",
    ".git::$INDEX_ALLOCATION/x",
    "x" * 257,
    "é" * 129,
    "d/" + "s" * 256,
    5,
    None,
    b"a.md",
]


@pytest.fixture
def seeded(store: Subject) -> Subject:
    store.create("a.md", "alpha\n")
    store.create("dir/b.md", "beta\n")
    return store


@contextmanager
def unchanged(store: Subject) -> Iterator[None]:
    before = store.list()
    cursor = store.cursor()
    head = store.head()
    yield
    assert store.list() == before
    assert store.changes(cursor).paths == ()
    assert store.head() == head
    if store.repo is not None:
        assert_fsck_clean(store.repo)


def _check(rows: list[tuple[str, Callable[[], object], str]]) -> None:
    wrong = []
    for label, call, code in rows:
        try:
            result = call()
        except MemoryStoreError as exc:
            if exc.code != code:
                wrong.append(f"{label}: {exc.code} ({exc.message}), wanted {code}")
        else:
            wrong.append(f"{label}: returned {result!r}, wanted {code}")
    assert wrong == []


def test_every_invalid_path_is_refused_by_every_call(seeded: Subject) -> None:
    va = seeded.read("a.md").version
    rows: list[tuple[str, Callable[[], object], str]] = []
    for p in BAD_PATHS:
        rows += [
            (f"read {p!r}", lambda p=p: seeded.read(p), "invalid_path"),
            (f"create {p!r}", lambda p=p: seeded.write(p, "x\n", expected=None), "invalid_path"),
            (f"edit {p!r}", lambda p=p: seeded.write(p, "x\n", expected=va), "invalid_path"),
            (f"move from {p!r}", lambda p=p: seeded.move(p, "new.md", expected=va), "invalid_path"),
            (f"move to {p!r}", lambda p=p: seeded.move("a.md", p, expected=va), "invalid_path"),
            (f"delete {p!r}", lambda p=p: seeded.delete(p, expected=va), "invalid_path"),
        ]
    with unchanged(seeded):
        _check(rows)


def test_every_invalid_content_is_refused(seeded: Subject) -> None:
    va = seeded.read("a.md").version
    contents: list[tuple[Any, str]] = [
        ("x" * (64 * KIB + 1), "too_large"),
        ("a\x00b", "invalid_file"),
        ("---\nunclosed: yes\n", "invalid_file"),
        ("---\n[not, a, mapping]\n---\n", "invalid_file"),
        ("---\ndescription: " + "d" * 201 + "\n---\n", "invalid_file"),
        ("pass: sk-" + "a" * 30, "invalid_file"),
        ("password = correcthorsebattery", "invalid_file"),
        ("\udcff", "invalid_file"),
        (None, "invalid_file"),
        (b"bytes", "invalid_file"),
    ]
    rows: list[tuple[str, Callable[[], object], str]] = []
    for text, code in contents:
        label = repr(text)[:40]
        rows += [
            (f"create {label}", lambda t=text: seeded.write("new.md", t, expected=None), code),
            (f"edit {label}", lambda t=text: seeded.write("a.md", t, expected=va), code),
        ]
    with unchanged(seeded):
        _check(rows)


def test_every_wrong_version_or_collision_is_refused(seeded: Subject) -> None:
    va = seeded.read("a.md").version
    vb = seeded.read("dir/b.md").version
    stale = "0" * 40
    rows: list[tuple[str, Callable[[], object], str]] = [
        ("create over a file", lambda: seeded.write("a.md", "x\n", expected=None), "version_mismatch"),
        ("edit at a stale version", lambda: seeded.write("a.md", "x\n", expected=stale), "version_mismatch"),
        ("edit at another file's version", lambda: seeded.write("a.md", "x\n", expected=vb), "version_mismatch"),
        ("edit a missing file", lambda: seeded.write("gone.md", "x\n", expected=va), "version_mismatch"),
        ("edit with a number", lambda: seeded.write("a.md", "x\n", expected=1), "version_mismatch"),
        ("move at a stale version", lambda: seeded.move("a.md", "c.md", expected=stale), "version_mismatch"),
        ("move with None", lambda: seeded.move("a.md", "c.md", expected=None), "version_mismatch"),
        ("move a missing file", lambda: seeded.move("gone.md", "c.md", expected=va), "version_mismatch"),
        ("move onto a file", lambda: seeded.move("a.md", "dir/b.md", expected=va), "already_exists"),
        ("move onto a folder", lambda: seeded.move("a.md", "dir", expected=va), "invalid_path"),
        ("move under a file", lambda: seeded.move("a.md", "dir/b.md/c.md", expected=va), "invalid_path"),
        ("delete at a stale version", lambda: seeded.delete("a.md", expected=stale), "version_mismatch"),
        ("delete with None", lambda: seeded.delete("a.md", expected=None), "version_mismatch"),
        ("delete a missing file", lambda: seeded.delete("gone.md", expected=va), "version_mismatch"),
        ("delete a folder", lambda: seeded.delete("dir", expected=vb), "version_mismatch"),
        ("create on a folder", lambda: seeded.write("dir", "x\n", expected=None), "invalid_path"),
        ("create under a file", lambda: seeded.write("a.md/x.md", "x\n", expected=None), "invalid_path"),
        ("read a folder", lambda: seeded.read("dir"), "not_found"),
        ("read a missing file", lambda: seeded.read("gone.md"), "not_found"),
        ("bad regex", lambda: seeded.search("(", regex=True), "invalid_pattern"),
        ("bad search folder", lambda: seeded.search("a", path="dir"), "invalid_path"),
    ]
    with unchanged(seeded):
        _check(rows)


def test_a_full_memory_refuses_and_changes_nothing(make_store: Callable[..., Subject]) -> None:
    store = make_store(FileFormat(max_files=2, max_memory_bytes=1000))
    store.create("a.md", "a\n")
    vb = store.create("b.md", "b\n")
    with unchanged(store):
        _check(
            [
                ("third file", lambda: store.write("c.md", "c\n", expected=None), "memory_full"),
                ("too many bytes", lambda: store.write("b.md", "b" * 999, expected=vb), "memory_full"),
            ]
        )


def test_an_origin_that_is_not_text_utf8_can_carry_is_kept_not_fatal(store: Subject) -> None:
    """A lone surrogate in who or which run (a login name or ``--principal`` with a byte that is
    not UTF-8, as Python decodes it) is written as U+FFFD, as a newline becomes a space: the
    change lands on both stores, where the git store once answered ``unavailable``."""
    origin = Origin(run_id="run-\udcff", principal_id="ab\udcfe", tool_call_id="\ud800call")
    assert origin == Origin(run_id="run-\ufffd", principal_id="ab\ufffd", tool_call_id="\ufffdcall")
    store.write("a.md", "one\n", expected=None, origin=origin)
    store.apply([Edit("b.md", "two\n")], origin=origin)
    assert [e.path for e in store.list()] == ["a.md", "b.md"]
    if store.repo is not None:
        assert store.log("a.md")[0].origin == origin
        assert_fsck_clean(store.repo)
