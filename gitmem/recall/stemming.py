"""Light stemming for the ``conversation`` profile: English, German, French, Spanish, Portuguese, Italian.

"Light" in the sense of Savoy's light stemmers: inflection only (plurals,
gender, the commonest verb endings), never derivation, so a stem rarely joins
words of different meaning. The rules work on one token with no language tag:
a conversation mixes languages and a short query says too little to tell
which it is in, while the item and the query must be cut the same way. What
keeps the languages from hurting each other is length: a suffix of another
language is stripped only when at least :data:`MIN_STEM` letters stay, so short
English words ("garden", "summer", "parent") keep their endings while
"caminando"/"caminar", "voyageons"/"voyager" and
"Freiwilligenarbeiten"/"Freiwilligenarbeit" meet.

Only words of Latin letters are touched; any other script (Cyrillic, Greek,
Devanagari, and CJK above all) and any token holding a digit stay exact. A
stem need not be a real word: the same rules run on items and queries.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Final

#: Letters a stem keeps at least when a suffix of two letters or fewer is stripped ("-er", "-en", "-ar").
MIN_STEM: Final = 5
#: ... and when a longer, more telling suffix is ("-ando", "-ungen"), or a final vowel.
MIN_STEM_LONG: Final = 4

_LATIN: Final = re.compile("[a-zß-öø-ÿ\u0100-\u024f]+")
_ASCII: Final = re.compile("[a-z]+")

# (suffix, replacement): verb endings (infinitive, gerund, participle, the commonest persons) and
# noun/adjective endings of German, French, Spanish, Portuguese and Italian, longest first. English
# words that end so and keep five letters lose them too ("teacher" -> "teach"), the same way on
# both sides.
_SUFFIXES: Final = tuple(
    sorted(
        [
            # Spanish, Portuguese, Italian: gerunds, participles, infinitives, first person plural.
            *(("iendo", ""), ("ando", ""), ("endo", ""), ("indo", "")),
            *(("ados", ""), ("adas", ""), ("idos", ""), ("idas", ""), ("ado", ""), ("ada", ""), ("ido", "")),
            *(("ida", ""), ("ato", ""), ("ata", ""), ("ati", ""), ("ate", ""), ("uto", ""), ("uta", "")),
            *(("amos", ""), ("emos", ""), ("imos", ""), ("iamo", ""), ("aron", ""), ("ieron", "")),
            *(("aba", ""), ("aban", ""), ("are", ""), ("ere", ""), ("ire", ""), ("ar", ""), ("ir", "")),
            *(("ciones", "cion"), ("ción", "cion"), ("ções", "ção"), ("ões", "ão")),
            # French: infinitives, persons, participles, plurals of -al.
            *(("issons", ""), ("issez", ""), ("eraient", ""), ("aient", ""), ("erons", ""), ("ons", "")),
            *(("ez", ""), ("ées", ""), ("ée", ""), ("és", ""), ("é", ""), ("er", ""), ("ent", ""), ("aux", "al")),
            # German: plural and case endings, the -ung nouns' plural.
            *(("ungen", "ung"), ("innen", "in"), ("nen", ""), ("ern", ""), ("en", ""), ("em", ""), ("es", "")),
        ],
        key=lambda pair: -len(pair[0]),
    )
)
_VOWELS: Final = "aeiou"
# Two-letter suffixes as telling as longer ones: the Spanish, Portuguese and Italian infinitives.
_LONG: Final = frozenset({"ar", "ir"})


#: Words up to this long are memoised (nearly all); a longer one is stemmed again on each call, so
#: the memo holds at most 65,536 short words, never a megabyte "word" of every query sent to it.
MEMO_CHARS: Final = 64


def stem(token: str) -> str:
    """The light stem of a lower-case token; any token that is not a word of Latin letters unchanged."""
    return _memo(token) if len(token) <= MEMO_CHARS else _stem(token)


def stems(tokens: Iterable[str]) -> list[str]:
    """:func:`stem` of each of ``tokens`` (the memo's test made inline: this runs for every token indexed)."""
    memo, stem_of, most = _memo, _stem, MEMO_CHARS
    return [memo(t) if len(t) <= most else stem_of(t) for t in tokens]


def forget_stems() -> None:
    """Empty the memo (a rebuild after a purge or forget keeps no erased word in the process)."""
    _memo.cache_clear()


def memo_size() -> int:
    """How many words the memo holds."""
    return _memo.cache_info().currsize


def _stem(token: str) -> str:
    if len(token) < 4 or not _LATIN.fullmatch(token):
        return token
    foreign = _suffix(token)
    if _ASCII.fullmatch(token) and (foreign is None or not foreign[0].endswith("s") or foreign[0] == "es"):
        word = _english(token)  # "-s" of "caminamos", "voyageons" is theirs, not an English plural
        foreign = _suffix(word)
    else:
        word = token
    if foreign is not None:
        suffix, replacement = foreign
        word = word[: -len(suffix)] + replacement
    elif word.endswith("s") and len(word) > MIN_STEM and not word.endswith(("ss", "us", "is")):
        word = word[:-1]  # a plural of any of them (the English rules took ASCII ones already)
    if len(word) > MIN_STEM_LONG and word[-1] in _VOWELS:
        word = word[:-1]  # gender and the plural vowel: amigo/amiga, libro/libri, Hunde/Hund
    return word


_memo = functools.lru_cache(maxsize=65536)(_stem)


def _suffix(word: str) -> tuple[str, str] | None:
    """The longest suffix of :data:`_SUFFIXES` that ``word`` ends with and may lose, with its replacement."""
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix):
            kept = len(word) - len(suffix) + len(replacement)
            if suffix == "ons" and (word.endswith("ions") or kept < MIN_STEM):
                continue  # English plurals: lessons, nations, questions
            if kept >= (MIN_STEM_LONG if len(suffix) > 2 or suffix in _LONG else MIN_STEM) and kept > len(replacement):
                return suffix, replacement
    return None


def _english(word: str) -> str:
    """English inflection of an ASCII word: ``-ies -es -s -ing -ed``, then a final ``-e`` and a doubled consonant."""
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouslz":
        word = word[:-1]
    return word
