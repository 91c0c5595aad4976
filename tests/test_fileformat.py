"""The pure file rules: paths, directories, frontmatter, descriptions, content."""

from __future__ import annotations

import pytest

from gitmem import FileFormat, MemoryStoreError, describe, parse_frontmatter, validate_path
from gitmem.fileformat import KIB, MAX_PATH_SEGMENTS, describe_stored, encode_text, validate_directory


def code_of(call: object, *args: object, **kwargs: object) -> str:
    try:
        call(*args, **kwargs)  # type: ignore[operator]
    except MemoryStoreError as exc:
        return exc.code
    return "ok"


# -- paths ---------------------------------------------------------------------

GOOD_PATHS = [
    "a.md",
    "prefs/language.md",
    "My Notes/2024 review.md",
    "日本語/メモ.md",
    ".hidden",
    ".github/workflows/ci.yml",
    ".gitignore",
    ".gitmodules.bak",
    "gitmodules",
    "git",
    "gitx",
    ".gitx",
    "gitmod~5",
    "gi7eba~12",
    "GIT~2",
    "a~1",
    "x" * 255,
    "/".join(["d"] * 128)[:256].rstrip("/"),
    "trailing space ",
    "dots...",
    "-dash",
    "name:with:colons",
]


@pytest.mark.parametrize("path", GOOD_PATHS)
def test_good_paths_are_accepted_unchanged(path: str) -> None:
    assert validate_path(path) == path


def test_paths_come_back_in_nfc() -> None:
    assert validate_path("cafe\u0301/ok.md") == "caf\u00e9/ok.md"
    assert validate_path("\u212b.md") == "\u00c5.md"  # the angstrom sign is NFC-normalised too


BAD_PATHS = {
    "empty": "",
    "absolute": "/a.md",
    "trailing slash": "a/",
    "double slash": "a//b",
    "dot": "./a",
    "dot dot": "a/../b",
    "only dot dot": "..",
    "backslash": "a\\b",
    "NUL": "a\x00b",
    "newline": "a\nb",
    "DEL": "a\x7f",
    "C1 control": "a\x9b",
    "line separator": "a\u2028b",
    "paragraph separator": "a\u2029b",
    ".git": ".git",
    ".git folder": ".git/config",
    "nested .git": "a/.git/x",
    ".GIT": ".GIT",
    ".git trailing dot": ".git.",
    ".git trailing spaces": ".git  ",
    "git~1": "git~1",
    "GIT~1 trailing space": "GIT~1 ",
    ".git stream": ".git::$INDEX_ALLOCATION",
    ".git dot space stream": ".git. :x",
    "git~1 stream": "git~1:x",
    "HFS zero width": ".g\u200cit",
    "HFS BOM": "\ufeff.git",
    "HFS mark": ".git\u200e",
    ".gitmodules": ".gitmodules",
    ".GITMODULES": ".GITMODULES",
    ".gitmodules trailing": ".gitmodules .",
    ".gitmodules stream": ".gitmodules:x",
    "gitmodules short": "gitmod~1",
    "gitmodules short 4": "GITMOD~4",
    "gitmodules hashed short": "gi7eba~1",
    "gitmodules hashed short, more digits": "gi7eb~12",
    "gitmodules hashed short, bare tilde": "~1234567",
    ".gitattributes": ".gitattributes",
    ".gitattributes stream": ".gitattributes:x",
    "gitattributes short": "gitatt~1",
    "gitattributes hashed short": "gi7d29~1",
    "too many bytes": "é" * 129,
    "segment over 255 bytes": "x" * 256,
    "lone surrogate": "a\udcff.md",  # a non-UTF-8 name read with surrogateescape
    "lone high surrogate in a folder": "\ud800/x",
}


@pytest.mark.parametrize("path", list(BAD_PATHS.values()), ids=list(BAD_PATHS))
def test_bad_paths_are_invalid_path(path: str) -> None:
    with pytest.raises(MemoryStoreError) as info:
        validate_path(path)
    assert info.value.code == "invalid_path"
    assert info.value.message


@pytest.mark.parametrize("value", [None, 1, b"a.md", ["a"], object()])
def test_a_path_must_be_a_string(value: object) -> None:
    assert code_of(validate_path, value) == "invalid_path"


def test_the_path_limit_is_configurable_and_counts_bytes() -> None:
    exactly = "é" * 100 + "/" + "é" * 27 + "x"  # 256 bytes: the default limit exactly
    assert validate_path(exactly) == exactly
    assert code_of(validate_path, exactly + "x") == "invalid_path"
    fmt = FileFormat(max_path_bytes=10)
    assert validate_path("a" * 10, fmt) == "a" * 10
    assert code_of(validate_path, "a" * 11, fmt) == "invalid_path"
    assert code_of(validate_path, "ééééé" + "a", fmt) == "invalid_path"


def test_a_path_has_at_most_max_path_segments_whatever_the_byte_limit() -> None:
    """A deeper tree would take a recursive walk of it past Python's limit: refused as a path, up front."""
    roomy = FileFormat(max_path_bytes=100_000)
    deepest = "a/" * (MAX_PATH_SEGMENTS - 1) + "f.md"
    assert validate_path(deepest, roomy) == deepest
    assert code_of(validate_path, "a/" + deepest, roomy) == "invalid_path"
    assert code_of(validate_path, "é/" + deepest, roomy) == "invalid_path"  # the full rules too
    assert code_of(validate_directory, "a/" * (MAX_PATH_SEGMENTS + 1), roomy) == "invalid_path"


@pytest.mark.parametrize(("directory", "expected"), [("", ""), ("a/", "a/"), ("a/b/", "a/b/"), ("e\u0301/", "é/")])
def test_directories(directory: str, expected: str) -> None:
    assert validate_directory(directory) == expected


@pytest.mark.parametrize("directory", ["a", "/", "/a/", "a//", "../", ".git/", None])
def test_bad_directories(directory: object) -> None:
    assert code_of(validate_directory, directory) == "invalid_path"


# -- frontmatter and describe ----------------------------------------------------


def test_frontmatter_is_parsed_into_a_mapping_and_a_body() -> None:
    meta, body = parse_frontmatter("---\ndescription: Hi\ntags: [a, b]\n---\nbody\n")
    assert meta == {"description": "Hi", "tags": ["a", "b"]}
    assert body == "body\n"
    assert parse_frontmatter("no frontmatter\n") == (None, "no frontmatter\n")
    assert parse_frontmatter("---\n---\n") == ({}, "")
    assert parse_frontmatter("---\r\ndescription: crlf\r\n---\r\nbody") == ({"description": "crlf"}, "body")


@pytest.mark.parametrize(
    "text",
    [
        "---\nno end\n",
        "---\n- list\n---\n",
        "---\njust a string\n---\n",
        "---\nkey: [open\n---\n",
        "---\ndescription:\n---\n",
        "---\ndescription: 5\n---\n",
        "---\ndescription: '   '\n---\n",
        "---\ndescription: " + "x" * 201 + "\n---\n",
        "---\npad: " + "p" * (2 * KIB) + "\n---\n",
    ],
)
def test_malformed_frontmatter_is_invalid_file(text: str) -> None:
    assert code_of(parse_frontmatter, text) == "invalid_file"
    assert code_of(describe, text) == "invalid_file"


def test_a_dash_line_later_in_the_file_is_not_frontmatter() -> None:
    assert parse_frontmatter("title\n---\nmore\n") == (None, "title\n---\nmore\n")


def test_describe() -> None:
    assert describe("---\ndescription: From the header\n---\nbody\n") == "From the header"
    assert describe("---\ndescription: '  padded  '\n---\n") == "padded"
    assert describe("---\ntitle: x\n---\n\n  Body line  \nnext\n") == "Body line"
    assert describe("\n\n   \nfirst real line\n") == "first real line"
    assert describe("z" * 300) == "z" * 200
    assert describe("") is None
    assert describe("\n  \n\t\n") is None
    assert describe("---\n---\n") is None


def test_describe_follows_the_configured_limit() -> None:
    fmt = FileFormat(max_description_chars=5)
    assert describe("abcdefgh", fmt) == "abcde"
    assert code_of(describe, "---\ndescription: abcdef\n---\n", fmt) == "invalid_file"


def test_describe_refuses_what_a_store_refuses() -> None:
    assert code_of(describe, "x" * (64 * KIB + 1)) == "too_large"
    assert code_of(describe, "nul\x00") == "invalid_file"


def test_describe_stored_never_fails() -> None:
    tight = FileFormat(max_description_chars=4, max_frontmatter_bytes=10, max_file_bytes=5)
    assert describe_stored("---\ndescription: long description\n---\nbody", tight) == "long"
    assert describe_stored("---\ndescription: " + "d" * 300 + "\n---\n", tight) == "dddd"
    assert describe_stored("---\nbroken: [\n---\nbody line\n", tight) == "body"
    assert describe_stored("--- not a fence\nsecond\n---\nthird\n") == "--- not a fence"
    assert describe_stored("---\nnever closed\n", tight) == "---"
    assert describe_stored("x" * 100, tight) == "xxxx"


# -- content -----------------------------------------------------------------------


def test_encode_text_returns_utf8() -> None:
    assert encode_text("héllo") == "héllo".encode()
    assert encode_text("") == b""


def test_content_limits() -> None:
    assert encode_text("x" * (64 * KIB)) == b"x" * (64 * KIB)
    assert code_of(encode_text, "x" * (64 * KIB + 1)) == "too_large"
    assert code_of(encode_text, "€" * 22, FileFormat(max_file_bytes=65)) == "too_large"  # 66 bytes
    assert code_of(encode_text, "\x00") == "invalid_file"
    assert code_of(encode_text, "\ud800") == "invalid_file"
    assert code_of(encode_text, 42) == "invalid_file"


def test_size_is_checked_before_anything_else() -> None:
    # a huge file full of NULs is too large first; the cheaper answer wins
    assert code_of(encode_text, "\x00" * (64 * KIB + 1)) == "too_large"


def test_secret_policy_follows_the_format_or_the_override() -> None:
    leaked = "aws AKIAIOSFODNN7EXAMPLE"
    assert code_of(encode_text, leaked) == "invalid_file"
    assert encode_text(leaked, FileFormat(check_secrets=False)) == leaked.encode()
    assert encode_text(leaked, check_secrets=False) == leaked.encode()
    assert code_of(encode_text, leaked, FileFormat(check_secrets=False), check_secrets=True) == "invalid_file"


@pytest.mark.parametrize(
    "field", ["max_file_bytes", "max_description_chars", "max_frontmatter_bytes", "max_path_bytes"]
)
def test_limits_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError):
        FileFormat(**{field: 0})  # type: ignore[arg-type]


def test_capacity_limits_are_positive_or_none() -> None:
    assert FileFormat(max_files=None, max_memory_bytes=None).max_files is None
    with pytest.raises(ValueError):
        FileFormat(max_files=0)
    with pytest.raises(ValueError):
        FileFormat(max_memory_bytes=-1)
