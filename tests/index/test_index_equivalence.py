"""Indexed grep answers exactly what a scan of every file at the head answers.

Each example builds a memory, then compares ``store.sync.search`` with
:func:`gitmem.grep.scan` over all files three times: after a rebuild, after a
catch-up, and while another holder keeps the index lock (so the search reads
the stale index and scans what changed since).
"""

from __future__ import annotations

import _sre
import fcntl
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import example, given
from hypothesis import strategies as st

from gitmem import GitFileStore, MemoryStoreError
from gitmem.fileformat import decode_stored
from gitmem.grep import compile_pattern, scan
from gitmem.model import SearchResult

# Characters where case folding, ``re`` and ``str.lower`` disagree, among plain ones.
TRICKY = "\u00df\u1e9e\u0130\u0131\u017f\u212a\u03a3\u03c3\u03c2\ufb01\u01c5\u0149\u2126\u212b\u0345"
ALPHABET = "abfiksABFIKS .-_" + TRICKY + "中文\r\t"
PATHS = ["x.md", "y.txt", "a/x.md", "a/y.md", "a/c/x.md", "b/x.md", "b/ß.md", "ab.md"]
PREFIXES = ["", "a/", "a/c/", "b/", "zz/"]

# Lines lean on the tricky characters so they meet their plain look-alikes in patterns.
line = st.text(alphabet=st.sampled_from("aiksIK " + TRICKY) | st.sampled_from(ALPHABET), min_size=1, max_size=14)
content = st.lists(line, min_size=1, max_size=6).map("\n".join) | st.lists(line, max_size=4).map(
    lambda ls: "\n".join(ls) + "\n"
)
files = st.dictionaries(st.sampled_from(PATHS), content, min_size=1, max_size=6)
edits = st.dictionaries(st.sampled_from(PATHS), st.none() | content, min_size=1, max_size=4)  # None deletes


@contextmanager
def index_lock_held(store: GitFileStore) -> Iterator[None]:
    """Hold the index flock as another process would (a separate open file description)."""
    fd = os.open(os.path.join(store.path, "gitmem", "index.lock"), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# Strategies are built once; a drawn query is a small tree whose text pieces are
# slices of "the i-th file", resolved against the files of the example when used.
piece = st.one_of(
    st.tuples(
        st.just("slice"),
        st.integers(0, 7),
        st.integers(0, 20),
        st.integers(1, 7),
        st.sampled_from(["same", "same", "upper", "lower", "swapcase", "re-lower"]),
    ),
    st.tuples(st.just("text"), st.text(alphabet=ALPHABET, min_size=1, max_size=6)),
)
regex_atom = st.one_of(
    st.tuples(st.just("lit"), piece),
    st.tuples(st.just("raw"), st.sampled_from([".", "[ab]", "[^a]", r"\w", r"\s", "\u00df", "\u017f", "\u0130", "k", "I", r"\b"])),
)
regex_tree = st.recursive(
    regex_atom,
    lambda inner: st.one_of(
        st.tuples(st.just("cat"), inner, inner),
        st.tuples(st.just("alt"), inner, inner),
        st.tuples(st.just("rep"), inner, st.sampled_from(["+", "*", "?", "{2}", "{0,2}", "+?"])),
        st.tuples(
            st.just("wrap"),
            st.sampled_from(["(?i:{})", "(?-i:{})", "(?=.*{})", "(?!{})", "({})", "(?>{})", "^{}$"]),
            inner,
        ),
    ),
    max_leaves=5,
)
pattern_spec = st.one_of(
    st.tuples(st.just("literal"), piece),
    st.tuples(st.just("regex"), regex_tree),
    st.tuples(st.just("raw-regex"), st.text(alphabet=ALPHABET + "()[]|*+?\\", min_size=1, max_size=8)),
)
queries = st.tuples(pattern_spec, st.booleans(), st.sampled_from(PREFIXES), st.sampled_from([1, 2, 5, 100]))
Query = tuple[tuple[object, ...], bool, str, int]


def resolve(spec: tuple[object, ...], texts: list[str]) -> str:
    if spec[0] == "text":
        return str(spec[1])
    _, which, start, length, variant = spec
    sources = [t for t in texts if t] or ["abc"]
    source = sources[int(which) % len(sources)]  # type: ignore[call-overload]
    text = source[int(start) : int(start) + int(length)] or source[:3]  # type: ignore[call-overload]
    if variant == "re-lower":  # what ``re`` compares under IGNORECASE: simple lowercase
        return "".join(chr(_sre.unicode_tolower(ord(c))) for c in text)
    return text if variant == "same" else str(getattr(text, str(variant))())


def render(node: tuple[object, ...], texts: list[str]) -> str:
    kind = node[0]
    if kind == "lit":
        return re.escape(resolve(node[1], texts))  # type: ignore[arg-type]
    if kind == "raw":
        return str(node[1])
    if kind == "cat":
        return render(node[1], texts) + render(node[2], texts)  # type: ignore[arg-type]
    if kind == "alt":
        return f"(?:{render(node[1], texts)}|{render(node[2], texts)})"  # type: ignore[arg-type]
    if kind == "rep":
        return f"(?:{render(node[1], texts)}){node[2]}"  # type: ignore[arg-type]
    return str(node[1]).format(render(node[2], texts))  # type: ignore[arg-type]


def pattern_of(spec: tuple[object, ...], texts: list[str]) -> tuple[str, bool]:
    if spec[0] == "literal":
        return resolve(spec[1], texts), False  # type: ignore[arg-type]
    if spec[0] == "regex":
        return render(spec[1], texts), True  # type: ignore[arg-type]
    return str(spec[1]), True


def scanned(store: GitFileStore, pattern: str, regex: bool, case_sensitive: bool, prefix: str, limit: int) -> SearchResult:
    repo = store.sync.repo
    matcher = compile_pattern(pattern, regex=regex, case_sensitive=case_sensitive)
    all_files = [(p, decode_stored(repo.blob(oid))) for p, oid in repo.files_at(repo.head(), prefix)]
    return scan(all_files, matcher, limit)


def check(store: GitFileStore, query: Query, texts: list[str]) -> None:
    spec, case_sensitive, prefix, limit = query
    pattern, regex = pattern_of(spec, texts)
    if "\n" in pattern and not regex:
        return
    try:
        expected = scanned(store, pattern, regex, case_sensitive, prefix, limit)
    except MemoryStoreError as exc:
        assert exc.code == "invalid_pattern"
        try:
            store.sync.search(pattern, regex=regex, case_sensitive=case_sensitive, path=prefix, limit=limit)
        except MemoryStoreError as again:
            assert again.code == "invalid_pattern"
            return
        raise AssertionError("the store accepted a pattern the scan refused") from None
    got = store.sync.search(pattern, regex=regex, case_sensitive=case_sensitive, path=prefix, limit=limit)
    assert got == expected, (pattern, regex, case_sensitive, prefix, limit)


def apply(store: GitFileStore, wanted: dict[str, str]) -> None:
    current = {e.path: e.version for e in store.sync.list()}
    for path, version in current.items():
        if path not in wanted:
            store.sync.delete(path, expected=version)
    for path, text in wanted.items():
        try:
            store.sync.write(path, text, expected=current.get(path))
        except MemoryStoreError as exc:  # e.g. an unclosed '---' frontmatter: not a file
            assert exc.code == "invalid_file"


def text_query(kind: str, text: str, case_sensitive: bool = False) -> Query:
    spec = ("literal", ("text", text)) if kind == "literal" else ("regex", ("lit", ("text", text)))
    return (spec, case_sensitive, "", 100)


TRAPS = {"x.md": "xx ak\u0130s yy\nak\u0131s\nSTRA\u1e9eE\n\u212aelvin\n", "a/y.md": "stra\u00dfe\n"}
TRAP_QUERIES = [
    text_query("regex", "AKIS"),  # re equates I with \u0130 and \u0131; casefold does not
    text_query("regex", "akis"),
    text_query("literal", "strasse"),
    text_query("literal", "STRASSE", case_sensitive=True),
    text_query("regex", "stra\u00dfe"),
    text_query("regex", "kelvin"),
    text_query("literal", "kelvin"),
]


@example(TRAPS, TRAP_QUERIES, {"x.md": None}, TRAP_QUERIES, {"b/x.md": "strasse\n"}, TRAP_QUERIES)
@given(
    files,
    st.lists(queries, min_size=1, max_size=6),
    edits,
    st.lists(queries, min_size=1, max_size=6),
    edits,
    st.lists(queries, min_size=1, max_size=6),
)
def test_indexed_search_equals_a_full_scan(
    first: dict[str, str],
    first_queries: list[Query],
    second_edits: dict[str, str | None],
    second_queries: list[Query],
    third_edits: dict[str, str | None],
    third_queries: list[Query],
) -> None:
    second = {p: t for p, t in {**first, **second_edits}.items() if t is not None}
    third = {p: t for p, t in {**second, **third_edits}.items() if t is not None}
    with tempfile.TemporaryDirectory() as tmp:
        store = GitFileStore.init(os.path.join(tmp, "m.git"))
        # 1. the first search builds the index
        apply(store, first)
        for query in first_queries:
            check(store, query, list(first.values()))
        # 2. later searches catch it up from the tree diff
        apply(store, second)
        for query in second_queries:
            check(store, query, list(second.values()))
        # 3. while another process holds the index lock, searches read the index
        #    as it was and scan the files changed since
        store.sync.index.refresh(store.sync.head(), wait=10)
        indexed = store.sync.head()
        apply(store, third)
        with index_lock_held(store):
            for query in third_queries:
                check(store, query, list(third.values()))
            assert store.sync.index_status().commit == indexed
