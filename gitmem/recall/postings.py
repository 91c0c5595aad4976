"""The tokenised form of a recall index as JSON-ready text, so a new process need not tokenise again.

A snapshot holds, beside its documents, every token's postings as one short
string: the documents' positions in the snapshot's ``ids`` list, ascending and
delta-coded, then (after ``;``) ``position:count`` for the few documents that
hold the token more than once::

    "0 3 1 7;3:2"   ->  positions 0, 3, 4, 11; the one at 3 holds it twice

Loading a snapshot decodes none of them: JSON turns each into a ``str`` at C
speed, and :class:`~gitmem.recall.index.RecallIndex` decodes a token's string
the first time a query or a write needs that token (a first query of seven
words decodes seven postings, not a hundred thousand). The snapshot file is
untrusted input, so decoding checks what it reads (numbers, strictly ascending
positions inside the ids list, counts of two or more for listed positions) and
raises ``ValueError`` on anything else; the index then drops the saved form and
tokenises its texts again.
"""

from __future__ import annotations

import itertools
import operator
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from typing import Final

COUNT_LIMIT: Final = 1 << 53
"""A saved token count (a document's length, a token's repeats in one) is below this: ranking divides
them as floats, and a JSON number past what a float holds raised ``OverflowError`` out of every search."""


def encode(posting: Mapping[str, int], position: Mapping[str, int]) -> str:
    """``posting`` (document id -> occurrences) as a posting string over ``position`` (id -> index in ``ids``)."""
    places = sorted(map(position.__getitem__, posting))
    deltas = [places[0], *map(operator.sub, places[1:], places[:-1])]
    head = " ".join(map(str, deltas))
    repeats = [f"{position[d]}:{n}" for d, n in posting.items() if n != 1]
    return f"{head};{' '.join(repeats)}" if repeats else head


def decode(text: str, ids: Sequence[str], dead: Collection[str] = ()) -> dict[str, int]:
    """The posting (document id -> occurrences) a posting string over ``ids`` stands for, less the ``dead`` ids.

    ``ValueError`` when it is not one.
    """
    if type(text) is not str:
        raise ValueError("a posting is a string")
    head, _, tail = text.partition(";")
    deltas = list(map(int, head.split()))
    if not deltas or deltas[0] < 0 or min(deltas[1:], default=1) < 1:
        raise ValueError("posting positions must be ascending from 0")
    places = list(itertools.accumulate(deltas))
    if places[-1] >= len(ids):
        raise ValueError("a posting names a position past the documents")
    posting = dict.fromkeys(map(ids.__getitem__, places), 1)
    if len(posting) != len(places):
        raise ValueError("a posting names one document twice")
    if tail:
        listed = set(places)
        for pair in tail.split():
            at, _, n = pair.partition(":")
            place, count = int(at), int(n)
            if place not in listed or not 2 <= count < COUNT_LIMIT:
                raise ValueError(
                    "a posting repeat names a position it does not hold, or a count below 2 or past floats"
                )
            posting[ids[place]] = count
    if dead:  # documents removed or replaced since the form was saved
        if len(dead) < len(posting):
            for doc_id in dead:
                posting.pop(doc_id, None)
        else:
            posting = {d: n for d, n in posting.items() if d not in dead}
    return posting


def counted(listed: list[str]) -> dict[str, int]:
    """Each token of ``listed`` with how often it occurs there (a document's postings)."""
    counts = dict.fromkeys(listed, 1)
    if len(counts) < len(listed):  # some token repeats
        return dict(Counter(listed))
    return counts


def form_of(
    tokens: Mapping[str, object], known: Mapping[str, object]
) -> tuple[list[str], list[int], dict[str, str]] | None:
    """The ``ids``, token counts and posting strings of a saved form, when its shape fits the documents ``known`` (by id).

    The same ids as the documents (each once), a whole token count each (below :data:`COUNT_LIMIT`), a
    mapping of tokens; ``None`` otherwise. The posting strings themselves are
    checked only when decoded.
    """
    ids, lengths, encoded = tokens.get("ids"), tokens.get("lengths"), tokens.get("postings")
    if not (isinstance(ids, list) and isinstance(lengths, list) and isinstance(encoded, dict)):
        return None
    if len(ids) != len(known) or len(lengths) != len(ids) or len(set(ids)) != len(ids):
        return None
    if not all(map(known.__contains__, ids)) or not all(type(n) is int and 0 <= n < COUNT_LIMIT for n in lengths):
        return None
    return ids, lengths, {t: p for t, p in encoded.items() if type(t) is str}
