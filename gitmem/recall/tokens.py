"""The lexical profile: text to a set of tokens, and the coverage score over two sets.

The rules follow A3S's ``word-cjk-bigram.v1`` profile:

- the text is lower-cased;
- a run of word characters is one token;
- a run of CJK characters (Han, Kana, Hangul, Bopomofo) gives the whole run plus
  every overlapping pair inside it, so a query's CJK phrase matches the same
  phrase inside a longer run without any segmenter; a single character is only a
  token when it stands alone as a whole run (the reference does the same);
- everything else separates tokens.

Two deliberate differences, both named in :data:`PROFILE` so a variant is never
silent:

- **word characters are Unicode categories L*, N* and M*** (``lnm``). The
  reference's ``char::is_alphanumeric`` leaves out most combining marks, and
  Python's ``str.isalnum`` leaves out all of them, so Devanagari ``हिन्दी`` (with
  vowel signs and a virama) or a decomposed ``é`` would fall apart into
  fragments; here such words stay whole.
- **the text is NFC-normalised first** (``nfc``), so a precomposed and a
  decomposed spelling (``é`` vs ``e`` + U+0301, Hangul syllables vs jamo) give
  the same tokens.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Final

from gitmem.recall._wordtable import UNICODE_VERSION, WORD_RANGES
from gitmem.recall.charclass import CJK_RANGES, regex_class

PROFILE: Final[str] = f"word-cjk-bigram.v1+lnm+nfc/unicode-{UNICODE_VERSION}"


def _pattern(word: tuple[tuple[int, int], ...], cjk: tuple[tuple[int, int], ...]) -> re.Pattern[str]:
    """Group 1: a word run; group 2: a CJK run. Anything else is skipped."""
    return re.compile(f"([{regex_class(word)}]+)|([{regex_class(cjk)}]+)")


def _bmp(spans: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    return tuple((lo, min(hi, 0xFFFF)) for lo, hi in spans if lo <= 0xFFFF)


@functools.cache
def _unicode_pattern(astral: bool) -> re.Pattern[str]:
    """The pattern for text outside ASCII, compiled on first use (~20 ms: a process that
    recalls only ASCII text, or none, never pays it).

    ``re`` compiles a class of BMP characters to a bitmap but tests a class that reaches
    past U+FFFF range by range (~10x slower), so text without astral characters, nearly
    all of it, takes the BMP-only pattern; both give the same tokens on such text.
    """
    if astral:
        return _pattern(WORD_RANGES, CJK_RANGES)
    return _pattern(_bmp(WORD_RANGES), _bmp(CJK_RANGES))


_ASTRAL: Final = re.compile("[\U00010000-\U0010ffff]")
# In ASCII the word class is exactly the letters and digits (``_`` is punctuation), there is
# no CJK, and NFC changes nothing: most stored text takes this one small class.
_ASCII: Final = re.compile("[a-z0-9]+")


def normalise(text: str) -> str:
    """The form tokens are cut from: NFC, then lower case (lower-casing can denormalise, so NFC again)."""
    lowered = unicodedata.normalize("NFC", text).lower()
    return lowered if lowered.isascii() else unicodedata.normalize("NFC", lowered)


def token_list(text: str) -> list[str]:
    """Every token occurrence in order, repeats kept (BM25 counts them; coverage uses the set)."""
    if text.isascii():
        return _ASCII.findall(text.lower())
    out: list[str] = []
    text = normalise(text)
    pattern = _unicode_pattern(_ASTRAL.search(text) is not None)
    for word, run in pattern.findall(text):
        if word:
            out.append(word)
            continue
        out.append(run)
        if len(run) > 2:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


def tokenize(text: str) -> frozenset[str]:
    """The token set of ``text`` under :data:`PROFILE`."""
    return frozenset(token_list(text))


def coverage(query: frozenset[str], doc: frozenset[str]) -> float:
    """The share of the query's tokens the document holds: ``|q ∩ d| / |q|`` (0.0 for an empty query)."""
    if not query:
        return 0.0
    return len(query & doc) / len(query)
