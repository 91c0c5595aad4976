"""A batch's trees are built folder by folder, with the same result as libgit2 one path at a time.

The write engine applies a batch with ``treeedit.set_paths``, which encodes each
changed folder once; libgit2's tree builder, one path at a time
(``libgit2_trees.set_path``), is the rule it must match. Random batches of
creates and deletes over a random tree compare the two: the same tree id, or the
same refusal.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.errors import MemoryStoreError
from gitmem.git import treeedit

from . import libgit2_trees as loosetrees

NAMES = st.sampled_from(["a", "b", "c", "d"])
PATHS = st.lists(NAMES, min_size=1, max_size=3).map("/".join)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> pygit2.Repository:
    path = Path(tmp_path_factory.mktemp("trees")) / "r.git"
    return pygit2.init_repository(str(path), bare=True)


def build(repo: pygit2.Repository, files: list[str]) -> pygit2.Tree:
    tree_id = repo.TreeBuilder().write()
    for n, path in enumerate(files):
        blob = str(repo.create_blob(f"file {n}\n".encode()))
        try:
            tree_id = loosetrees.set_path(repo, repo[tree_id].peel(pygit2.Tree), path.split("/"), blob, path)
        except MemoryStoreError:
            continue  # a file where a folder is (or below a file): not in the starting tree
    return repo[tree_id].peel(pygit2.Tree)


def pending_and_reader(repo: pygit2.Repository) -> tuple[treeedit.PendingObjects, Callable[[str], bytes]]:
    """A commit's pending objects, and a tree reader that finds them before the repository's."""
    pending = treeedit.PendingObjects()

    def read_tree(oid: str) -> bytes:
        found = pending.raw(oid)
        return found if found is not None else bytes(repo[oid].read_raw())

    return pending, read_tree


def outcome(fn: object) -> str:
    try:
        return str(fn())  # type: ignore[operator]
    except MemoryStoreError as exc:
        return f"refused: {exc.code}"


@settings(max_examples=300)
@given(
    st.lists(PATHS, max_size=12),
    st.dictionaries(PATHS, st.one_of(st.none(), st.integers(0, 3)), min_size=1, max_size=8),
)
def test_grouped_trees_equal_one_path_at_a_time(
    repo: pygit2.Repository, start: list[str], changes: dict[str, int | None]
) -> None:
    tree = build(repo, start)
    edits = [(path, None if n is None else str(repo.create_blob(f"new {n}\n".encode()))) for path, n in changes.items()]

    def one_by_one() -> pygit2.Oid:
        tree_id = tree.id
        for path, oid in edits:
            tree_id = loosetrees.set_path(repo, repo[tree_id].peel(pygit2.Tree), path.split("/"), oid, path)
        return tree_id

    expected = outcome(one_by_one)
    assert outcome(lambda: loosetrees.set_paths(repo, tree, edits)) == expected
    # The pack path encodes the same grouped edit in memory: the same tree id, or the same refusal.
    pending, read_tree = pending_and_reader(repo)

    assert outcome(lambda: treeedit.set_paths(read_tree, pending, str(tree.id), edits)) == expected
    assert (
        outcome(lambda: treeedit.set_paths(read_tree, pending, str(tree.id), edits, treeedit.TreeCache())) == expected
    )


@settings(max_examples=200)
@given(st.lists(PATHS, max_size=10), st.lists(st.tuples(PATHS, st.one_of(st.none(), st.integers(0, 3))), max_size=12))
def test_a_writers_tree_cache_gives_the_same_trees(repo: pygit2.Repository, start: list[str], steps: list) -> None:  # type: ignore[type-arg]
    """Edits through one long-lived tree cache (new trees spliced from cached bytes) give libgit2's trees."""
    tree = build(repo, start)
    pending, read_tree = pending_and_reader(repo)
    cache = treeedit.TreeCache()

    cached, libgit2 = str(tree.id), tree.id
    for path, n in steps:
        oid = None if n is None else str(repo.create_blob(f"new {n}\n".encode()))
        parts, start_tree = path.split("/"), repo[libgit2].peel(pygit2.Tree)
        expected = outcome(functools.partial(loosetrees.set_path, repo, start_tree, parts, oid, path))
        got = outcome(functools.partial(treeedit.set_path, read_tree, pending, cached, parts, oid, path, cache))
        assert got == expected
        if not expected.startswith("refused"):
            libgit2, cached = pygit2.Oid(hex=expected), got
            assert pending.raw(cached) is None or bytes(repo[libgit2].read_raw()) == pending.raw(cached)


TRICKY = st.sampled_from(["a", "a.b", "a-b", "a0", "a_", "ab", "b", "Z", "é"])  # around "/" in git's order
TRICKY_PATHS = st.lists(TRICKY, min_size=1, max_size=3).map("/".join)


@settings(max_examples=200)
@given(
    st.lists(TRICKY_PATHS, max_size=12),
    st.lists(st.tuples(TRICKY_PATHS, st.one_of(st.none(), st.integers(0, 3))), max_size=16),
)
def test_entries_inserted_and_cut_from_cached_bytes_keep_gits_order(
    repo: pygit2.Repository,
    start: list[str],
    steps: list,  # type: ignore[type-arg]
) -> None:
    """Adds and removals spliced into cached tree bytes give libgit2's tree, also where a folder
    ``a`` sorts as ``a/`` among files ``a.b``, ``a-b`` and ``a0`` (and the cache's own trees, every
    step, re-encode to the same bytes)."""
    tree = build(repo, start)
    pending, read_tree = pending_and_reader(repo)
    cache = treeedit.TreeCache()

    cached, libgit2 = str(tree.id), tree.id
    for path, n in steps:
        oid = None if n is None else str(repo.create_blob(f"new {n}\n".encode()))
        parts, start_tree = path.split("/"), repo[libgit2].peel(pygit2.Tree)
        expected = outcome(functools.partial(loosetrees.set_path, repo, start_tree, parts, oid, path))
        got = outcome(functools.partial(treeedit.set_path, read_tree, pending, cached, parts, oid, path, cache))
        assert got == expected
        if not expected.startswith("refused"):
            libgit2, cached = pygit2.Oid(hex=expected), got
        for tree_id, encoded in cache.encoded.items():
            entries, raw = cache.trees[tree_id], b"".join(encoded[1])
            assert treeedit.tree_bytes(entries) == raw
            assert treeedit.parse_tree_at(raw) == (entries, encoded)  # entry by entry, in the bytes' order


@settings(max_examples=200)
@given(
    st.lists(TRICKY_PATHS, max_size=12),
    st.lists(
        st.dictionaries(TRICKY_PATHS, st.one_of(st.none(), st.integers(0, 3)), min_size=2, max_size=5), max_size=6
    ),
)
def test_grouped_edits_spliced_into_cached_bytes_give_libgit2s_trees(
    repo: pygit2.Repository,
    start: list[str],
    batches: list,  # type: ignore[type-arg]
) -> None:
    """Several entries of one folder changed in one batch (removed, swapped, inserted) are spliced
    into the cached bytes: through one long-lived cache, each batch gives libgit2's tree (one path
    at a time) or its refusal, and every cached tree's bytes re-encode to themselves."""
    tree = build(repo, start)
    pending, read_tree = pending_and_reader(repo)
    cache = treeedit.TreeCache()

    cached, libgit2 = str(tree.id), tree.id
    for changes in batches:
        edits = [(p, None if n is None else str(repo.create_blob(f"new {n}\n".encode()))) for p, n in changes.items()]

        def one_by_one(edits: list[tuple[str, str | None]] = edits, tree_id: pygit2.Oid = libgit2) -> pygit2.Oid:
            for path, oid in edits:
                tree_id = loosetrees.set_path(repo, repo[tree_id].peel(pygit2.Tree), path.split("/"), oid, path)
            return tree_id

        expected = outcome(one_by_one)
        got = outcome(functools.partial(treeedit.set_paths, read_tree, pending, cached, edits, cache))
        assert got == expected
        if not expected.startswith("refused"):
            libgit2, cached = pygit2.Oid(hex=expected), got
            assert pending.raw(cached) is None or bytes(repo[libgit2].read_raw()) == pending.raw(cached)
        for tree_id, encoded in cache.encoded.items():
            raw = b"".join(encoded[1])
            assert treeedit.tree_bytes(cache.trees[tree_id]) == raw
            assert treeedit.parse_tree_at(raw)[1] == encoded


ENTRY = st.tuples(
    st.sampled_from([b"40000", b"100644", b"100755", b"040000"]),
    st.sampled_from([b"a", b"a.b", b"a-b", b"a0", b"b", b"a/"]),
    st.binary(min_size=20, max_size=20),
)


@settings(max_examples=300)
@given(st.lists(ENTRY, max_size=6), st.booleans())
def test_a_tree_is_edited_bytewise_only_when_in_gits_encoding(entries: list, cut: bool) -> None:  # type: ignore[type-arg]
    """The parse's own check agrees with encoding the entries again: out of order, repeated
    names and a truncated last id are never taken for git's encoding (the last one the
    re-encoding itself would miss; so would it two entries of one sort key, ``a/`` and folder ``a``)."""
    raw = b"".join(mode + b" " + name + b"\x00" + oid for mode, name, oid in entries)
    if cut and raw:
        raw = raw[:-1]
    try:
        parsed, _, canonical = treeedit.parse_tree_checked(raw)
    except ValueError:
        return  # cut inside a name: not a tree at all
    if canonical:
        assert treeedit.tree_bytes(parsed) == raw
    keys = [name + b"/" if mode == b"40000" else name for name, (mode, _) in parsed.items()]
    whole = all(len(oid) == 20 for _, oid in parsed.values())
    if treeedit.tree_bytes(parsed) == raw and whole and len(set(keys)) == len(keys):
        assert canonical


SAME = st.sampled_from(["a", "b", "a.b", "a0", "c"])
SAME_PATHS = st.lists(SAME, min_size=1, max_size=3).map("/".join)


def _cached_trees_are_their_bytes(
    repo: pygit2.Repository, pending: treeedit.PendingObjects, cache: treeedit.TreeCache
) -> None:
    """Every tree the cache holds, whose bytes are known, is what the cache says of it (entries and bytes)."""
    for tree_id, entries in cache.trees.items():
        raw = pending.raw(tree_id)
        if raw is None and tree_id in repo:
            raw = bytes(repo[tree_id].read_raw())
        if raw is None:
            continue  # made by a refused batch: its objects were dropped
        assert treeedit.parse_tree(raw) == entries
        encoded = cache.encoded.get(tree_id)
        assert encoded is None or b"".join(encoded[1]) == raw


@settings(max_examples=200)
@given(
    st.lists(SAME_PATHS, max_size=10),
    st.lists(
        st.lists(st.tuples(SAME_PATHS, st.one_of(st.none(), st.integers(0, 2))), min_size=1, max_size=6), max_size=8
    ),
)
def test_identical_folders_and_refused_batches_leave_the_cache_true(
    repo: pygit2.Repository,
    start: list[str],
    batches: list,  # type: ignore[type-arg]
) -> None:
    """As the write engine uses one cache: folders with the same tree (x/ and y/ copies of the top, a
    file's blob fixed by its name), batches that edit them both (to the same tree again), refused
    batches whose objects are dropped while the trees they took stay edited, and a cache small enough
    to drop trees: each batch gives libgit2's tree or refusal, and every cached tree stays itself."""
    files = [*start, *(f"x/{p}" for p in start), *(f"y/{p}" for p in start)]
    tree_id = repo.TreeBuilder().write()
    for path in files:
        blob = str(repo.create_blob(f"file {path.rsplit('/', 1)[-1]}\n".encode()))  # same name, same blob
        try:
            tree_id = loosetrees.set_path(repo, repo[tree_id].peel(pygit2.Tree), path.split("/"), blob, path)
        except MemoryStoreError:
            continue
    pending, read_tree = pending_and_reader(repo)
    cache = treeedit.TreeCache(limit=8)
    cached, libgit2 = str(tree_id), tree_id
    for batch in batches:
        changes: dict[str, str | None] = {}
        for path, n in batch:
            blob = None if n is None else str(repo.create_blob(f"new {n}\n".encode()))
            changes[path] = changes[f"x/{path}"] = changes[f"y/{path}"] = blob  # the copies edited alike
        edits = list(changes.items())

        def one_by_one(edits: list[tuple[str, str | None]] = edits, tree_id: pygit2.Oid = libgit2) -> pygit2.Oid:
            for path, oid in edits:
                tree_id = loosetrees.set_path(repo, repo[tree_id].peel(pygit2.Tree), path.split("/"), oid, path)
            return tree_id

        expected = outcome(one_by_one)
        kept = len(pending)
        got = outcome(functools.partial(treeedit.set_paths, read_tree, pending, cached, edits, cache))
        assert got == expected
        if expected.startswith("refused"):
            pending.drop_after(kept)  # as the engine does with a refused plan's objects
        else:
            libgit2, cached = pygit2.Oid(hex=expected), got
            assert pending.raw(cached) is None or bytes(repo[libgit2].read_raw()) == pending.raw(cached)
        _cached_trees_are_their_bytes(repo, pending, cache)


def test_a_tree_a_reader_was_handed_is_never_edited_by_a_later_commit(repo: pygit2.Repository) -> None:
    """Readers of the head look trees up in the committers' shared cache while another thread commits:
    a tree's entries, once handed out, stay what that tree holds. Editing them in place let a read in
    flight see a file a commit had not made yet (or one its refused plan never would)."""
    tree = build(repo, ["a/x.md", "a/y.md", "b.md"])
    pending, read_tree = pending_and_reader(repo)
    cache = treeedit.TreeCache()
    root = str(tree.id)
    folder = str(tree["a"].id)
    seen_root = cache.view(root, read_tree)  # what a reader walking the head holds
    seen_folder = cache.view(folder, read_tree)
    before_root, before_folder = dict(seen_root), dict(seen_folder)
    blob = str(repo.create_blob(b"new\n"))
    treeedit.set_paths(read_tree, pending, root, [("a/z.md", blob), ("c.md", blob)], cache)
    assert seen_root == before_root
    assert seen_folder == before_folder
    assert treeedit.parse_tree(read_tree(root)) == before_root
