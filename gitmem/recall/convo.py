"""The ``conversation`` lexical profile: recall tuned for turns of a conversation.

The ``word-cjk-bigram`` profile (:mod:`gitmem.recall.tokens`) is exact and
explainable, and durable memory's policy is stated in it. Conversation turns
miss under it in a few recurring ways, which this profile addresses; every rule
starts from that profile's tokens, so scripts and CJK behave as there:

- **neighbour context**: an item names the item it follows (the previous turn of
  the same run), and is indexed with the first :data:`CONTEXT_TOKENS` tokens of
  that item's text too. "Mostly Python and C++" then answers "which programming
  languages", whose words were in the question turn before it. Bounded, so a
  long neighbour cannot drown the item's own words, and an item's own tokens
  are counted twice, so for BM25 a turn still outranks the turn after it that
  only borrows its words.
- **query stop-words**: function words ("when", "did", "the", "in") are dropped
  from the query, never from items; a query made only of them keeps them all.
- **light stemming** (:mod:`gitmem.recall.stemming`): words of Latin letters lose
  their inflection in English, German, French, Spanish, Portuguese and Italian
  ("volunteering", "volunteered"; "caminando", "caminar"; "voyageons",
  "voyager" meet); words of any other script are left as they are, and CJK
  tokens are never touched. One rule set on both sides, so a stem need not be
  a real word.
- **dates**: an item is also indexed under its month's name, ``YYYY-MM``,
  ``YYYY-MM-DD`` and the year, from its time (UTC), so "what happened in June"
  or "2026-06" finds items whose text never says when.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

from gitmem.recall.stemming import forget_stems, stem, stems
from gitmem.recall.tokens import PROFILE as BASE_PROFILE
from gitmem.recall.tokens import token_list

__all__ = [
    "BM25_B", "BM25_K1", "CONTEXT_TOKENS", "NAME", "PROFILE", "STOP_WORDS",
    "date_tokens", "doc_tokens", "forget_stems", "query_tokens", "stem",
]  # fmt: skip

NAME: Final = "conversation"
PROFILE: Final[str] = f"conversation.v2({BASE_PROFILE})"  # v2: light stems of six languages
#: BM25's parameters under this profile (chosen on the development split of bench/convdata.py).
BM25_K1: Final = 1.2
BM25_B: Final = 0.75
#: How many tokens of the followed item an item is indexed with.
CONTEXT_TOKENS: Final = 24

_MONTHS: Final = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
# Kept as one token in a query (the item side makes the same tokens from its time).
_DATE: Final = re.compile(r"\b(\d{4}-\d{2}(?:-\d{2})?)\b")

# Function words of English, and the commonest of German, French, Spanish, Portuguese and
# Italian: words that say how a question is asked, not what it is about. Month names stay.
STOP_WORDS: Final = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each else ever few
    for from further get got had has have having he her here hers herself him himself his how i
    if in into is it its itself just let me mine more most my myself no nor not now of off on
    once only or other our ours ourselves out over own really same she should so some such than
    that the their theirs them themselves then there these they this those through to too under
    until up upon us very was we were what whatever when where which while who whom whose why
    will with would you your yours yourself yourselves anything something tell remind said say
    recently lately ago last
    der die das den dem des ein eine einer eines und oder ich du er sie es wir ihr ist sind war
    wann wie was wo wer mit von zu im in auf für nicht mein meine
    le la les un une des et ou je tu il elle nous vous est sont était quand comment quoi où qui
    avec de du au aux dans pour pas mon ma mes
    el los las unos unas y o yo tú él ella es son fue cuándo cómo qué dónde quién con del al en
    por para no mi mis
    o os um uma e eu ele ela é são foi quando como onde quem com do da em meu minha
    il lo gli una e io lui lei è sono era quando come cosa dove chi con di del nel per non mio
    """.split()
)


def date_tokens(at: float) -> list[str]:
    """The tokens an item's time adds: month name (stemmed as a query's), ``YYYY-MM``, ``YYYY-MM-DD``, year."""
    try:
        when = datetime.fromtimestamp(at, UTC)
    except (OverflowError, OSError, ValueError):
        return []
    month = f"{when.year:04d}-{when.month:02d}"
    return [stem(_MONTHS[when.month - 1]), month, f"{month}-{when.day:02d}", str(when.year)]


def doc_tokens(text: str, context: str, at: float) -> list[str]:
    """Every token occurrence of an item: its text, the head of what it follows, its date."""
    own = stems(token_list(text))
    out = own + own  # an item's own words count twice its neighbour's: it ranks above the turn after it
    if context:
        out.extend(stems(token_list(context)[:CONTEXT_TOKENS]))
    out.extend(date_tokens(at))
    return out


def query_tokens(query: str) -> frozenset[str]:
    """A query's tokens: dates kept whole, stop-words dropped (unless nothing else is left), stems."""
    dates = _DATE.findall(query)
    words = token_list(_DATE.sub(" ", query)) if dates else token_list(query)
    kept = [t for t in words if t not in STOP_WORDS] or words
    return frozenset([*stems(kept), *dates])
