"""What a pattern's matches must contain, and the folding facts the index relies on."""

from __future__ import annotations

import _sre
import re
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitmem.grep import split_lines
from gitmem.index.grams import fold, grams_of, probe, signature, signature_bits, text_grams
from gitmem.index.needles import All, AnyOf, Lit, literal_need, regex_need, safe_when_ignoring_case

ALL_CHARS = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000]


def test_casefold_maps_each_character_on_its_own() -> None:
    # The whole index rests on folding commuting with substrings and line splits.
    sample = "".join(ALL_CHARS[::97]) + "\u03a3\u03c3\u03c2\u0391\u03a3 \u00df \u1e9e \u0130 \u0131 \ufb01 \u0149 \u01c5 \u0345"
    assert sample.casefold() == "".join(c.casefold() for c in sample)
    folded = "".join(c.casefold() for c in ALL_CHARS)
    assert folded.count("\n") == 1 and folded.count("\r") == 1  # only from themselves


@given(st.text(), st.text())
def test_folding_a_concatenation_folds_the_parts(a: str, b: str) -> None:
    assert fold(a + b) == fold(a) + fold(b)


def test_ignorecase_literals_are_used_only_when_re_agrees_with_casefold() -> None:
    """Every character ``re`` equates with a "safe" one under IGNORECASE folds the same way.

    ``re`` compiles an uncased literal as an exact match, so only cased safe
    characters need checking, against every character ``re`` itself accepts.
    """
    # Only ASCII letters are both safe and cased; everything else safe is an exact literal.
    assert [c for c in ALL_CHARS if not c.isascii() and safe_when_ignoring_case(c) and _sre.unicode_iscased(ord(c))] == []
    letters = [c for c in map(chr, range(128)) if safe_when_ignoring_case(c) and _sre.unicode_iscased(ord(c))]
    any_letter = re.compile("[" + "".join(letters) + "]", re.IGNORECASE).fullmatch
    bad = [
        (c, d)
        for d in ALL_CHARS
        if any_letter(d)
        for c in letters
        if re.fullmatch(c, d, re.IGNORECASE) and d.casefold() != c.casefold()
    ]
    assert bad == []
    # and the rule is not vacuous: these are unsafe, these are used
    assert not safe_when_ignoring_case("i") and not safe_when_ignoring_case("ß")
    assert all(safe_when_ignoring_case(c) for c in "abkKsS09 -_中")


def test_literal_needs() -> None:
    assert literal_need("ab") is None
    assert literal_need("Straße") == Lit("strasse")
    assert literal_need("ßa") == Lit("ssa")  # folding can make a short pattern long enough


@pytest.mark.parametrize(
    ("pattern", "case_sensitive", "need"),
    [
        ("hello", True, Lit("hello")),
        ("hell+o", True, Lit("hel")),
        ("foo.*bar", True, All((Lit("foo"), Lit("bar")))),
        ("foo|bar", True, AnyOf((Lit("foo"), Lit("bar")))),
        ("foo|ba", True, None),
        ("(?:abc)+x?", True, Lit("abc")),
        ("(?:abc)*", True, None),
        ("[abc]def", True, Lit("def")),
        ("(?=.*needle)", True, Lit("needle")),
        ("(?!needle)", True, None),
        ("(?i)Kites", True, Lit("tes")),  # ``i`` is not safe when ignoring case
        ("(?i:Kite)rs", True, None),
        ("(?-i:Kite)", False, Lit("kite")),
        ("ABC", False, Lit("abc")),
        ("ẞig", False, None),
        ("ẞig", True, Lit("ssig")),
        ("(a)\\1bc", True, None),
        ("a{3}", True, None),
    ],
)
def test_regex_needs(pattern: str, case_sensitive: bool, need: object) -> None:
    re.compile(pattern)
    assert regex_need(pattern, case_sensitive) == need


def test_a_parser_surprise_means_scan() -> None:
    assert regex_need("(", True) is None


@given(st.lists(st.text(min_size=3, max_size=8), min_size=1, max_size=40))
def test_a_signature_never_rules_out_its_own_trigrams(lines: list[str]) -> None:
    text = "\n".join(lines)
    grams = text_grams(text)
    sig = signature(grams, len(grams))
    assert len(sig) * 8 == signature_bits(len(grams))
    for line in split_lines(text):
        for gram in grams_of(fold(line)):
            assert all((sig[i] & bits) == bits for i, bits in probe({gram}, len(sig)))


def test_a_signature_rules_out_most_absent_trigrams() -> None:
    text = "\n".join(f"line {n} of a note about gardening and tomatoes" for n in range(40))
    grams = text_grams(text)
    sig = signature(grams, len(grams))
    absent = [g for g in (f"q{a}{b}" for a in "wxyz" for b in "jkvq") if g not in grams]
    passing = [g for g in absent if all((sig[i] & bits) == bits for i, bits in probe({g}, len(sig)))]
    assert len(passing) <= len(absent) // 4
