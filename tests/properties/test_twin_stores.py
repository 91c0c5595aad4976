"""Random sequences of operations give the same answers on both stores.

The in-memory store is the reference; the git store must return the same
versions, the same error codes with the same ``current`` file, the same listings
and search results. Cursors differ by design, so a ``changes`` answer is checked
by its paths: both stores list exactly the paths whose content differs from what
they held at the cursor (a path changed and changed back is not listed).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import example, given, note
from hypothesis import strategies as st

from gitmem import Changes, FileFormat, InMemoryFileStore, MemoryStoreError, SyncGitFileStore
from gitmem.model import ANY, Edit, blob_version

PATHS = ["a", "b", "a/x", "a/y", "b/c/d", "c.md", "caf\u00e9.md", "cafe\u0301.md", "A"]
TEXTS = [
    "",
    "hello\n",
    "Hello world\nsecond hello line\n",
    "---\ndescription: the d file\n---\nbody\n",
    "x" * 40,
    "bad \x00 byte",
    "---\nunclosed: yes\n",
    "password = hunter2hunter2\n",
]
FORMATS = [
    FileFormat(),
    FileFormat(max_files=3, max_memory_bytes=60),
    FileFormat(max_files=2),
    FileFormat(check_secrets=False, max_file_bytes=30),
]

path = st.sampled_from(PATHS)
# A file that exists when the step runs (the i-th of the listing), so edits, moves
# and deletes hit something often enough to matter.
live = st.integers(0, 8).map(lambda i: ("live", i))
text = st.integers(0, len(TEXTS) - 1)
# How a call picks its expected version: none, the current version of some path,
# the blob id of some text (right by content or not), or one that never existed.
expected = st.one_of(
    st.just(("none",)),
    st.tuples(st.just("of"), path),
    st.tuples(st.just("text"), text),
    st.just(("bogus",)),
)
STEPS: dict[str, st.SearchStrategy[tuple[Any, ...]]] = {
    "edit": st.tuples(st.just("write"), live, text, st.just(("own",))),
    "create": st.tuples(st.just("write"), path, text, st.just(("none",))),
    "write": st.tuples(st.just("write"), st.one_of(path, live), text, expected),
    "move": st.tuples(st.just("move"), live, st.one_of(path, live), st.just(("own",))),
    "move any": st.tuples(st.just("move"), st.one_of(path, live), st.one_of(path, live), expected),
    "delete": st.tuples(st.just("delete"), live, st.just(("own",))),
    "delete any": st.tuples(st.just("delete"), st.one_of(path, live), expected),
    "read": st.tuples(st.just("read"), st.one_of(path, live)),
    "search": st.tuples(
        st.just("search"),
        st.sampled_from(["hello", "HELLO", "^h", "(", "d", "e"]),
        st.booleans(),
        st.booleans(),
        st.sampled_from(["", "", "a/", "b/", "b/c/", "zz/", "a"]),
        st.integers(1, 3),
    ),
    "changes": st.tuples(st.just("changes"), st.one_of(st.integers(0, 8), st.none(), st.just("junk"))),
    "cursor": st.tuples(st.just("cursor")),
    "purge": st.tuples(st.just("purge")),
    # A batch: each edit writes a text (or deletes: None) under its own expectation, ANY included.
    "apply": st.tuples(
        st.just("apply"),
        st.lists(
            st.tuples(
                st.one_of(path, live),
                st.one_of(st.none(), text),
                st.one_of(expected, st.just(("any",))),
            ),
            min_size=0,
            max_size=4,
        ),
    ),
}
# Weights by repetition: mostly changes that succeed, with cursors taken and checked often.
KINDS = ["create"] * 4 + ["edit"] * 4 + ["cursor", "changes"] * 2 + ["search"] * 2 + ["move", "delete"] * 2
KINDS += ["write", "move any", "delete any", "read", "purge"] + ["apply"] * 3
op = st.sampled_from(KINDS).flatmap(lambda kind: STEPS[kind])


class Twin:
    """The two stores side by side, with the cursors each handed out."""

    def __init__(self, fmt: FileFormat, where: Path) -> None:
        self.ref = InMemoryFileStore(fmt)
        self.real = SyncGitFileStore.init(where / "m.git", fmt)
        # per cursor: the reference's, the git store's, the memory then, and the purge count then
        self.cursors: list[tuple[str, str, dict[str, str], int]] = []
        self.purges = 0

    def state(self) -> dict[str, str]:
        return {e.path: e.version for e in self.ref.list()}

    def take_cursor(self) -> None:
        a, b = self.ref.changes(None), self.real.changes(None)
        assert not isinstance(a, Changes) and not isinstance(b, Changes)
        self.cursors.append((a.cursor, b.cursor, self.state(), self.purges))

    def check_cursor(self, slot: int) -> None:
        mine, theirs, then, purges = self.cursors[slot]
        now = self.state()
        net = {p for p in set(then) | set(now) if then.get(p) != now.get(p)}
        a, b = self.ref.changes(mine), self.real.changes(theirs)
        if isinstance(b, Changes):
            assert list(b.paths) == sorted(net), ("git", b.paths, net)
        if isinstance(a, Changes):
            assert list(a.paths) == sorted(net), ("memory", a.paths, net)
        if isinstance(a, Changes) and isinstance(b, Changes):
            assert a.paths == b.paths
        if purges == self.purges:
            assert isinstance(a, Changes) and isinstance(b, Changes), "a cursor on the current line must be honoured"
        else:
            assert not isinstance(a, Changes), "a purge invalidates older cursors"


def call(store: Any, step: tuple[Any, ...], version_of: dict[str, str]) -> Any:
    kind = step[0]
    files = sorted(version_of)

    def where(p: str | tuple[str, int]) -> str:
        if isinstance(p, str):
            return p
        return files[p[1] % len(files)] if files else PATHS[p[1]]

    def want(choice: tuple[Any, ...], own: str) -> Any:
        if choice[0] == "any":
            return ANY
        if choice[0] == "none":
            return None
        if choice[0] in ("of", "own"):
            return version_of.get(own if choice[0] == "own" else choice[1])  # None: create
        if choice[0] == "text":
            return blob_version(TEXTS[choice[1]].encode())
        return "0" * 40

    if kind == "write":
        target = where(step[1])
        return store.write(target, TEXTS[step[2]], expected=want(step[3], target))
    if kind == "move":
        source = where(step[1])
        return store.move(source, where(step[2]), expected=want(step[3], source))
    if kind == "delete":
        target = where(step[1])
        return store.delete(target, expected=want(step[2], target))
    if kind == "read":
        return store.read(where(step[1]))
    if kind == "search":
        _, pattern, regex, case, prefix, limit = step
        return store.search(pattern, regex=regex, case_sensitive=case, path=prefix, limit=limit)
    if kind == "purge":
        return store.purge()
    if kind == "apply":
        edits = []
        for target, which, choice in step[1]:
            at = where(target)
            edits.append(Edit(at, None if which is None else TEXTS[which], want(choice, at)))
        done = store.apply(edits)
        return (done.commit is not None, done.versions)  # a commit id and a cursor differ by design
    raise AssertionError(kind)


def outcome(store: Any, step: tuple[Any, ...], version_of: dict[str, str]) -> tuple[Any, ...]:
    try:
        return ("ok", call(store, step, version_of))
    except MemoryStoreError as exc:
        return ("error", exc.code, exc.current)


def drive(steps: list[tuple[Any, ...]], fmt: FileFormat, where: Path) -> None:
    twin = Twin(fmt, where)
    twin.take_cursor()
    for step in steps:
        note(f"{step}")
        if step[0] == "cursor":
            twin.take_cursor()
        elif step[0] == "changes":
            if isinstance(step[1], int):
                twin.check_cursor(step[1] % len(twin.cursors))
            else:
                a, b = twin.ref.changes(step[1]), twin.real.changes(step[1])
                assert not isinstance(a, Changes) and not isinstance(b, Changes)
        else:
            version_of = twin.state()
            expected_outcome = outcome(twin.ref, step, version_of)
            actual_outcome = outcome(twin.real, step, version_of)
            assert actual_outcome == expected_outcome, step
            assert twin.real.list() == twin.ref.list(), step
            twin.purges += step[0] == "purge"
    # Epilogue: every cursor handed out, and searches that cut at a limit.
    for slot in range(len(twin.cursors)):
        twin.check_cursor(slot)
    for pattern in ("e", "hello", "^[a-z]"):
        for limit in (1, 2, 100):
            a = twin.ref.search(pattern, regex=True, limit=limit)
            assert twin.real.search(pattern, regex=True, limit=limit) == a


@given(st.lists(op, min_size=4, max_size=30), st.sampled_from(FORMATS))
@example(  # a full memory and a file/folder collision: the path is the problem, not the room
    [("write", "a/x", 1, ("none",)), ("write", "b", 1, ("none",)), ("write", "a", 1, ("none",))], FORMATS[2]
)
def test_random_operations_give_the_same_answers_on_both_stores(steps: list[tuple[Any, ...]], fmt: FileFormat) -> None:
    where = Path(tempfile.mkdtemp(prefix="twin-"))
    try:
        drive(steps, fmt, where)
    finally:
        shutil.rmtree(where, ignore_errors=True)
