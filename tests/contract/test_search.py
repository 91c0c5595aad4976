"""The store contract: ``search`` is a line scan of the head, in path and line order."""

from __future__ import annotations

import pytest

from contract.support import Subject, error_of
from gitmem import GrepMatch


@pytest.fixture
def notes(store: Subject) -> Subject:
    store.create("b.md", "Tea please\nno coffee\nTEA again\n")
    store.create("a/one.md", "coffee\r\nmore tea\n")
    store.create("a/two.md", "nothing here")
    store.create("a-side.md", "tea on the side\n")
    store.create("c/deep/x.md", "Straße\n")
    return store


def test_literal_search_is_case_folded_on_both_sides(notes: Subject) -> None:
    result = notes.search("TEA")
    assert result.matches == (
        GrepMatch("a-side.md", 1, "tea on the side"),
        GrepMatch("a/one.md", 2, "more tea"),
        GrepMatch("b.md", 1, "Tea please"),
        GrepMatch("b.md", 3, "TEA again"),
    )
    assert result.truncated is False
    # full case folding, not just lower(): ß folds to ss
    assert notes.search("STRASSE").matches == (GrepMatch("c/deep/x.md", 1, "Straße"),)


def test_case_sensitive_search(notes: Subject) -> None:
    assert notes.search("TEA", case_sensitive=True).matches == (GrepMatch("b.md", 3, "TEA again"),)
    assert notes.search("tea", case_sensitive=True).matches == (
        GrepMatch("a-side.md", 1, "tea on the side"),
        GrepMatch("a/one.md", 2, "more tea"),
    )


def test_a_literal_is_not_a_regex(notes: Subject) -> None:
    assert notes.search("t.a").matches == ()
    notes.create("re.md", "a t.a b\n")
    assert notes.search("t.a").matches == (GrepMatch("re.md", 1, "a t.a b"),)


def test_regex_search(notes: Subject) -> None:
    assert notes.search(r"^(tea|coffee)$", regex=True).matches == (GrepMatch("a/one.md", 1, "coffee"),)
    assert notes.search(r"^t", regex=True, case_sensitive=True).matches == (
        GrepMatch("a-side.md", 1, "tea on the side"),
    )
    assert [m.path for m in notes.search(r"^t", regex=True).matches] == ["a-side.md", "b.md", "b.md"]


def test_lines_lose_their_line_ending_and_a_last_line_without_one_counts(notes: Subject) -> None:
    assert notes.search("coffee", case_sensitive=True).matches == (
        GrepMatch("a/one.md", 1, "coffee"),
        GrepMatch("b.md", 2, "no coffee"),
    )
    assert notes.search(r"here$", regex=True).matches == (GrepMatch("a/two.md", 1, "nothing here"),)


@pytest.mark.parametrize("pattern", ["(", "[a-", "*x", "(?P<n>a)(?P<n>b)", "a{2,1}"])
def test_an_invalid_regex_is_invalid_pattern(notes: Subject, pattern: str) -> None:
    assert error_of(notes.search, pattern, regex=True).code == "invalid_pattern"


@pytest.mark.parametrize("pattern", ["", "two\nlines", None, 5])
def test_an_empty_or_non_text_pattern_is_invalid_pattern(notes: Subject, pattern: object) -> None:
    assert error_of(notes.search, pattern).code == "invalid_pattern"


def test_path_limits_the_search_to_a_folder(notes: Subject) -> None:
    assert [m.path for m in notes.search("tea", path="a/").matches] == ["a/one.md"]
    assert notes.search("e", path="c/deep/").matches == (GrepMatch("c/deep/x.md", 1, "Straße"),)
    assert notes.search("tea", path="missing/").matches == ()
    # a prefix is a folder, not a string prefix: "a/" does not match "a-side.md"
    assert all(m.path.startswith("a/") for m in notes.search("e", path="a/").matches)


@pytest.mark.parametrize("path", ["a", "/a/", "../", "a//", "b.md"])
def test_a_folder_path_must_be_a_valid_directory(notes: Subject, path: str) -> None:
    assert error_of(notes.search, "tea", path=path).code == "invalid_path"


def test_a_file_path_as_folder_finds_nothing(notes: Subject) -> None:
    assert notes.search("tea", path="b.md/").matches == ()


def test_limit_cuts_in_order_and_reports_truncation(notes: Subject) -> None:
    full = notes.search("e")
    assert len(full.matches) > 3 and full.truncated is False
    cut = notes.search("e", limit=3)
    assert cut.matches == full.matches[:3]
    assert cut.truncated is True
    exact = notes.search("e", limit=len(full.matches))
    assert exact.matches == full.matches and exact.truncated is False


@pytest.mark.parametrize("limit", [0, -1, 10_001, True, 1.5, "3"])
def test_a_bad_limit_is_refused(notes: Subject, limit: object) -> None:
    assert error_of(notes.search, "tea", limit=limit).code == "invalid_pattern"


def test_search_sees_the_current_head(notes: Subject) -> None:
    v = notes.read("b.md").version
    notes.write("b.md", "replaced\n", expected=v)
    assert [m.path for m in notes.search("tea").matches] == ["a-side.md", "a/one.md"]


def test_a_regex_python_warns_about_is_searched_not_raised(store: Subject, kind: str) -> None:
    # ``re`` emits FutureWarning for "[[" (a possible nested set); this process turns
    # warnings into errors, so one escaping the store would fail the search. The
    # pattern is new to the process (``re`` caches compiled patterns and warns once).
    store.create("a.md", f"see [[{kind}-wiki]] here\n")
    result = store.search(f"[[]{kind}-wiki]", regex=True)
    assert [m.line for m in result.matches] == [1]
