"""Trigram signatures: a compact summary of a file that can only say "maybe".

Why signatures and not a Whoosh trigram field: a posting per (trigram, file)
means about one posting per character, ~5 million for a 5 MB memory, and Whoosh
writes postings at ~10-20 µs each in Python (measured: ~100 s to index 10k
files of 500 B). A per-file Bloom signature of its case-folded trigrams is one
column value per file, so the same memory indexes in a few seconds, and testing
10k signatures for a pattern's trigrams takes a few milliseconds.

Soundness rests on one fact: ``str.casefold`` maps each character on its own
(it has no context rules), so folding a line and folding a pattern commute with
taking substrings. If ``pattern.casefold() in line.casefold()`` (a literal
case-insensitive match, exactly what :mod:`gitmem.grep` tests) or ``pattern in
line``, every trigram of the folded pattern is a trigram of the folded line, so
every one of its bits is set in the file's signature. A signature may also say
"maybe" for a file without the trigram (a false positive); the lines are always
checked exactly afterwards, so that only costs a read.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from gitmem.grep import split_lines

GRAM = 3
BITS_PER_GRAM = 16  # two hash bits per trigram: ~1.4% false positives per trigram probed
MIN_BITS = 64
MAX_BITS = 1 << 21  # 256 KiB; a bigger file only gets more false positives

_hashes: dict[str, int] = {}
_HASH_MEMO_LIMIT = 1 << 19


def fold(text: str) -> str:
    """The folding every trigram is computed on: the one :mod:`gitmem.grep` uses."""
    return text.casefold()


def grams_of(folded: str) -> set[str]:
    """The trigrams of one already folded string (a line or a literal)."""
    return {folded[i : i + GRAM] for i in range(len(folded) - GRAM + 1)}


def text_grams(text: str) -> set[str]:
    """Every trigram of every line of ``text``, folded; lines as grep splits them.

    Folding the whole text first is the same as folding each line, because no
    character folds to (or from) ``\\n`` or ``\\r``.
    """
    return {line[i : i + GRAM] for line in split_lines(fold(text)) for i in range(len(line) - GRAM + 1)}


def _hash(gram: str) -> int:
    h = _hashes.get(gram)
    if h is None:
        h = zlib.crc32(gram.encode("utf-8", "surrogatepass"))
        if len(_hashes) >= _HASH_MEMO_LIMIT:
            _hashes.clear()
        _hashes[gram] = h
    return h


def _bits(h: int, mask: int) -> tuple[int, int]:
    # The second bit comes from a multiplicative mix, not a second CRC: CRCs of
    # equal-length inputs differ by a constant XOR, so two CRC bits would collide
    # together.
    return h & mask, ((h * 0x9E3779B1) >> 11) & mask


def signature_bits(count: int) -> int:
    """The signature size in bits for a file with ``count`` distinct trigrams."""
    bits = MIN_BITS
    target = count * BITS_PER_GRAM
    while bits < target and bits < MAX_BITS:
        bits <<= 1
    return bits


def signature(grams: Iterable[str], count: int) -> bytes:
    """A Bloom filter of ``grams`` (``count`` of them), sized by :func:`signature_bits`."""
    nbits = signature_bits(count)
    mask = nbits - 1
    out = bytearray(nbits >> 3)
    memo = _hashes
    for gram in grams:  # the hot loop of a rebuild: _bits() inlined
        h = memo.get(gram)
        if h is None:
            h = _hash(gram)
        b = h & mask
        out[b >> 3] |= 1 << (b & 7)
        b = ((h * 0x9E3779B1) >> 11) & mask
        out[b >> 3] |= 1 << (b & 7)
    return bytes(out)



def probe(grams: Iterable[str], nbytes: int) -> tuple[tuple[int, int], ...]:
    """The ``(byte index, bit mask)`` pairs a signature of ``nbytes`` must have set
    for a file to possibly contain all of ``grams``."""
    mask = nbytes * 8 - 1
    need: dict[int, int] = {}
    for gram in grams:
        for b in _bits(_hash(gram), mask):
            need[b >> 3] = need.get(b >> 3, 0) | (1 << (b & 7))
    return tuple(sorted(need.items()))
