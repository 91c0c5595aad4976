"""validate_path's fast path for plain ASCII paths gives exactly what the full rules give."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import _PLAIN_PATH, DEFAULT_FORMAT, FileFormat, _validate_path_fully, validate_path

# Characters around the fast path's edges: the ones it takes, and the ones that need the full rules.
ALPHABET = "abcGIT019_.-~/ \\:\u00e9\u200c\x00"


def full(path: str, fmt: FileFormat) -> str | None:
    try:
        return _validate_path_fully(path, fmt)
    except MemoryStoreError:
        return None


def fast(path: str, fmt: FileFormat) -> str | None:
    try:
        return validate_path(path, fmt)
    except MemoryStoreError:
        return None


@settings(max_examples=1000)
@given(st.text(ALPHABET, min_size=1, max_size=40), st.sampled_from([DEFAULT_FORMAT, FileFormat(max_path_bytes=12)]))
def test_the_fast_path_agrees_with_the_full_rules(path: str, fmt: FileFormat) -> None:
    assert fast(path, fmt) == full(path, fmt)


def test_the_fast_path_takes_typical_item_paths_and_not_reserved_names() -> None:
    assert _PLAIN_PATH.fullmatch("items/ab/ab12.json")
    for reserved in (".git/x", "a/.gitmodules", "GIT~1/x", "gi7eba~1", "a/../b", "./a"):
        assert not _PLAIN_PATH.fullmatch(reserved)
