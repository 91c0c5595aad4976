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


@settings(max_examples=250)  # a fast path taking a leading dot, an empty segment or '\\' fails within 100
@given(st.text(ALPHABET, min_size=1, max_size=40), st.sampled_from([DEFAULT_FORMAT, FileFormat(max_path_bytes=12)]))
def test_the_fast_path_agrees_with_the_full_rules(path: str, fmt: FileFormat) -> None:
    assert fast(path, fmt) == full(path, fmt)


def test_the_fast_path_takes_typical_item_paths_and_not_reserved_names() -> None:
    assert _PLAIN_PATH.fullmatch("items/ab/ab12.json")
    for reserved in (".git/x", "a/.gitmodules", "GIT~1/x", "gi7eba~1", "a/../b", "./a"):
        assert not _PLAIN_PATH.fullmatch(reserved)


# Frontmatter lines around the edges of the yaml-free fast path: keys YAML reads as other
# things, words it reads as booleans or null, indicators, quotes, comments, spacing.
KEYS = st.sampled_from(["description", "Description", "tags", "a_b", "x-y", "on", "yes", "null", "e1", "_k"])
VALUE_ALPHABET = "aZn oyTrueFalsNl1 :#-,'\"\t.~!&*?[]{}|>%@`=\\é"
VALUES = st.one_of(
    st.sampled_from(["yes", "No", "ON", "null", "true", "False", "y", "n", "~", "a  b", "a b ", "x: y", "a #c", "a#b"]),
    st.text(VALUE_ALPHABET, max_size=12),
)
# Values in the fast path's own shape (a letter, then anything of the edge alphabet), so most
# generated blocks reach it and the comparison with yaml is not vacuous.
SHAPED_ALPHABET = "aZnyYoOtTfFlue 1,.;()/_+!?&=*<>@$%^~`|[]{}-"
SHAPED = st.tuples(
    st.sampled_from("aZnyYoOtTfF"),
    st.one_of(st.text(SHAPED_ALPHABET, max_size=12), st.text(VALUE_ALPHABET, max_size=12)),
).map("".join)
SIMPLE = st.tuples(KEYS, st.just(": "), SHAPED).map("".join)
# Double-quoted values (escapes, inner quotes, colons, hashes, tabs, non-ASCII...) and tokens
# that start with a digit (numbers in every YAML 1.1 notation, dates, ids), with trailing spaces.
QUOTED = st.tuples(
    st.just('"'), st.text("aZ0 :#'\"\\\tné-.,", max_size=10), st.just('"'), st.sampled_from(["", " ", "  ", " #c", "x"])
).map("".join)
TOKEN_ALPHABET = "0123456789abefxoABEFXOZ_.:-+"
TOKENS = st.one_of(
    st.text(TOKEN_ALPHABET, min_size=1, max_size=10),
    st.tuples(st.sampled_from("0123456789"), st.text("0189abexoBEXZ", max_size=8)).map("".join),
    st.sampled_from(["01JDQ6Z5V6R7XKQ3M8T2B4N9CW", "0x1F", "0b101", "0o17", "1e5", "1E5", "12", "012", "2026-12-01"]),
).flatmap(lambda t: st.sampled_from([t, t + " ", t + "  "]))
LINES = st.one_of(
    SIMPLE,
    st.tuples(KEYS, st.just(": "), QUOTED).map("".join),
    st.tuples(KEYS, st.just(": "), TOKENS).map("".join),
    st.tuples(KEYS, st.just(": "), VALUES).map("".join),
    st.tuples(KEYS, st.sampled_from([": ", ":  ", ":", " : ", ": \t"]), VALUES).map("".join),
    st.sampled_from(["", "  indented: x", "- item", "...", "# comment", "key: [a, b]", "key: {a: b}"]),
)


@settings(max_examples=2000)
@given(
    st.one_of(
        st.dictionaries(KEYS, SHAPED, max_size=4).map(lambda d: [f"{k}: {v}" for k, v in d.items()]),
        st.lists(LINES, max_size=4),
    ),
    st.sampled_from(["\n", "\n", "\r\n"]),
)
def test_the_frontmatter_fast_path_reads_what_yaml_reads(lines: list[str], end: str) -> None:
    import yaml

    from gitmem.fileformat import _simple_mapping

    block = "".join(line + end for line in lines)
    fast = _simple_mapping(block)
    if fast is None:
        return  # left to yaml
    for loader in (yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        loaded = yaml.load(block, Loader=loader) if block.strip() else {}
        assert isinstance(loaded, dict)
        assert {str(k): v for k, v in loaded.items()} == fast, (block, loaded)
        assert all(isinstance(k, str) for k in loaded), block


def test_the_frontmatter_fast_path_takes_the_usual_files() -> None:
    from gitmem.fileformat import _simple_mapping

    assert _simple_mapping("description: Reply language, preferred tone (formal)\ntags: style\n") == {
        "description": "Reply language, preferred tone (formal)",
        "tags": "style",
    }
    for left_to_yaml in ("description: yes\n", "description: 'quoted'\n", "tags: [a, b]\n", "a: x\na: y\n", "d: 12\n"):
        assert _simple_mapping(left_to_yaml) is None, left_to_yaml
    # A record file's frontmatter: a token id and two quoted times.
    assert _simple_mapping('id: 01JDQ6Z5V6R7XKQ3M8T2B4N9CW\ncreated: "2026-12-01T10:31:57.123456Z"\n') == {
        "id": "01JDQ6Z5V6R7XKQ3M8T2B4N9CW",
        "created": "2026-12-01T10:31:57.123456Z",
    }
    for left_to_yaml in ('d: "a\\tb"\n', "d: 0x1F\n", "d: 0b11\n", "d: 2026-12-01\n", 'd: "a" # c\n'):
        assert _simple_mapping(left_to_yaml) is None, left_to_yaml
