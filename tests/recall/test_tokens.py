"""The word-cjk-bigram profile: the reference's own cases, the rule for marks, and the pinned table."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitmem.recall import PROFILE, coverage, tokenize
from gitmem.recall._wordtable import UNICODE_VERSION
from gitmem.recall.charclass import table_source
from gitmem.recall.tokens import _unicode_pattern, normalise, token_list


def test_words_and_cjk_runs_with_their_pairs() -> None:
    # The reference implementation's own example.
    assert tokenize("Rust 数据库迁移 cargo_fmt") == {
        "rust",
        "数据库迁移",
        "数据",
        "据库",
        "库迁",
        "迁移",
        "cargo",
        "fmt",
    }


@pytest.mark.parametrize(("text", "pair"), [("数据库", "数据"), ("確認手順", "確認"), ("배포절차", "배포")])
def test_cjk_pairs_without_single_characters(text: str, pair: str) -> None:
    tokens = tokenize(text)
    assert pair in tokens
    assert text in tokens
    assert not any(len(t) == 1 for t in tokens)


def test_a_lone_cjk_character_is_its_own_run() -> None:
    # As in the reference: the whole run is always a token, even when it is one character.
    assert tokenize("a 数 b") == {"a", "数", "b"}
    assert tokenize("数据") == {"数据"}


def test_scripts_switching_split_runs() -> None:
    assert tokenize("ロックファイルをv2に") == {
        "ロックファイルを",
        *(w[i : i + 2] for w in ["ロックファイルを"] for i in range(7)),
        "v2",
        "に",
    }
    assert tokenize("API変更") == {"api", "変更"}


def test_lower_case_and_separators() -> None:
    assert tokenize("Hello, WORLD! hello-world_2") == {"hello", "world", "2"}
    assert tokenize("ΣΊΣΥΦΟΣ") == tokenize("σίσυφος")  # final sigma handled by full lower-casing
    assert tokenize("  ...  ") == frozenset()
    assert tokenize("") == frozenset()


def test_combining_marks_stay_inside_words() -> None:
    # Devanagari vowel signs (Mc) and the virama (Mn): str.isalnum() rejects them, which would
    # cut हिन्दी into ह / न / द; the reference's is_alphanumeric keeps the vowel signs but not
    # the virama (हिन + दी). This profile keeps the word whole.
    assert tokenize("हिन्दी भाषा") == {"हिन्दी", "भाषा"}
    assert tokenize("தமிழ்") == {"தமிழ்"}
    assert tokenize("ไทย") == {"ไทย"}
    assert tokenize("Ελληνικά עִבְרִית") == {"ελληνικά", "עִבְרִית"}


def test_nfc_makes_composed_and_decomposed_spellings_equal() -> None:
    assert tokenize("cafe\u0301") == tokenize("café") == {"café"}
    decomposed_hangul = unicodedata.normalize("NFD", "배포절차")
    assert decomposed_hangul != "배포절차"
    assert tokenize(decomposed_hangul) == tokenize("배포절차")


def test_astral_characters_take_the_full_table() -> None:
    assert tokenize("𠀀𠀁 and \U0001d400bc") == {"𠀀𠀁", "and", "\U0001d400bc"}  # bold A: a letter past U+FFFF
    assert tokenize("x😀y") == {"x", "y"}  # emoji are symbols, not word characters


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_ascii_text_takes_a_short_cut_with_the_same_tokens(text: str) -> None:
    general = [word or run for word, run in _unicode_pattern(False).findall(normalise(text))]
    assert token_list(text) == general


def test_repeats_are_kept_in_the_token_list() -> None:
    assert token_list("a b a") == ["a", "b", "a"]
    assert token_list("数据库") == ["数据库", "数据", "据库"]


def test_coverage_is_the_share_of_query_tokens_found() -> None:
    q = tokenize("rust formatting verification")
    assert coverage(q, tokenize("Rust formatting verification requires cargo fmt")) == 1.0
    assert coverage(q, tokenize("formatting only")) == pytest.approx(1 / 3)
    assert coverage(q, frozenset()) == 0.0
    assert coverage(frozenset(), q) == 0.0


def test_the_profile_names_its_variants() -> None:
    assert PROFILE.startswith("word-cjk-bigram.v1")
    assert "+lnm" in PROFILE and "+nfc" in PROFILE
    assert PROFILE.endswith(f"unicode-{UNICODE_VERSION}")


@pytest.mark.skipif(
    unicodedata.unidata_version != UNICODE_VERSION, reason="the table is pinned to another Unicode version"
)
def test_the_stored_table_is_what_the_generator_builds() -> None:
    from pathlib import Path

    import gitmem.recall._wordtable as table

    assert Path(table.__file__).read_text() == table_source()
