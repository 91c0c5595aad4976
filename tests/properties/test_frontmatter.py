"""Properties of frontmatter parsing and ``describe``.

``describe`` is what a listing shows for a file, so it must agree with the
never-failing ``describe_stored`` the stores use, and always be one short line.
"""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import assume, example, given
from hypothesis import strategies as st

from gitmem import FileFormat, MemoryStoreError, describe, parse_frontmatter
from gitmem.fileformat import describe_stored, encode_text

# Text a store accepts: no NUL, no lone surrogates; lines of many kinds.
chars = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")
line = st.text(chars, max_size=30)
body = st.lists(st.one_of(line, st.sampled_from(["", "  ", "---", "\t", "\r"])), max_size=6).map("\n".join)
one_line = st.text(chars, min_size=1, max_size=220).filter(lambda s: "\n" not in s)
keys = st.text(st.characters(categories=["Ll"]), min_size=1, max_size=8).filter(lambda k: k != "description")
values = st.one_of(st.integers(), st.booleans(), st.text(chars, max_size=20), st.lists(st.integers(), max_size=3))


def frontmatter(meta: dict[str, Any]) -> str:
    return "---\n" + (yaml.safe_dump(meta, allow_unicode=True) if meta else "") + "---\n"


def accepted(text: str) -> bool:
    try:
        encode_text(text, check_secrets=False)
    except MemoryStoreError:
        return False
    return True


def first_line(text: str) -> str | None:
    for candidate in text.splitlines():
        if candidate.strip():
            return candidate.strip()[:200]
    return None


@given(body)
@example("\n\n  x  \n")
@example("\r\n\u2028y")
def test_without_frontmatter_the_first_nonblank_line_describes(text: str) -> None:
    assume(not text.startswith("---"))
    assert describe(text) == first_line(text)


@given(one_line, st.dictionaries(keys, values, max_size=3), body)
@example("a\u2028b", {}, "")
@example("x\ry", {}, "")
def test_a_frontmatter_description_describes_the_file(description: str, extra: dict[str, Any], rest: str) -> None:
    meta_in = {"description": description, **extra}
    assume(yaml.safe_load(yaml.safe_dump(meta_in, allow_unicode=True)) == meta_in)  # YAML folds e.g. U+0085
    text = frontmatter(meta_in) + rest
    assume(len(text.encode()) < 64 * 1024)
    try:
        meta, parsed_body = parse_frontmatter(text)
    except MemoryStoreError as exc:
        assert exc.code == "invalid_file"
        stripped = description.strip()
        assert not stripped or len(stripped) > 200 or len(stripped.splitlines()) > 1 or len(text) > 2048
        return
    assert meta == meta_in
    assert parsed_body == rest
    assert describe(text) == description.strip()


@given(st.one_of(body, st.builds(lambda d, b: frontmatter({"description": d}) + b, one_line, body)))
def test_describe_agrees_with_the_listing_and_is_one_short_line(text: str) -> None:
    assume(accepted(text))
    described = describe(text)
    assert described == describe_stored(text)
    if described is not None:
        assert described == described.strip() and described
        assert len(described) <= 200
        assert len(described.splitlines()) == 1


@given(st.integers(min_value=0, max_value=3000), st.integers(min_value=16, max_value=4096))
def test_the_frontmatter_limit_counts_the_whole_block(size: int, limit: int) -> None:
    text = "---\nk: " + "v" * size + "\n---\nbody\n"
    block_bytes = len(text) - len("body\n")
    fmt = FileFormat(max_frontmatter_bytes=limit)
    try:
        parse_frontmatter(text, fmt)
    except MemoryStoreError as exc:
        assert exc.code == "invalid_file" and block_bytes > limit
    else:
        assert block_bytes <= limit


@given(
    st.one_of(body, st.builds(lambda d, b: frontmatter({"description": d}) + b, one_line, body)), st.integers(1, 300)
)
def test_stored_files_are_described_under_any_limit(text: str, limit: int) -> None:
    assume(accepted(text))
    fmt = FileFormat(max_description_chars=limit, max_frontmatter_bytes=16, max_file_bytes=1)
    full = describe(text, FileFormat(max_description_chars=10_000))
    assert describe_stored(text, fmt) == (None if full is None else full[:limit])
