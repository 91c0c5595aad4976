"""What a recall index's snapshot holds, so a new process need not re-read every file.

The snapshot is a cache like the index itself (saved, resumed and caught up by
:mod:`gitmem.catchup`): its documents by path, keyed by the cursor they reflect,
and the profile, the caller's key and the prefix they were made under (any other
means "no snapshot"). Each document keeps what it follows (the conversation
profile indexes it with that item's words). Beside the texts it keeps the index's
tokenised form, so a resume need not tokenise them again
(:mod:`gitmem.recall.postings`); a form that does not fit the texts is dropped and
the texts are tokenised.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gitmem.recall.tokens import PROFILE
from gitmem.recall.values import RecallDoc, is_date_time

FORMAT = "gitmem-recall-snapshot/3"  # /2: with the index's tokenised form; /3: and what each doc follows


def header(key: str, prefix: str) -> dict[str, object]:
    """What a snapshot of recall over ``prefix`` with documents ``key`` says it is."""
    return {"format": FORMAT, "profile": PROFILE, "key": key, "prefix": prefix}


def rows(docs: Iterable[tuple[str, RecallDoc]]) -> list[list[object]]:
    """``(path, document)`` pairs as the snapshot's rows."""
    return [[p, d.id, d.text, d.updated_at, *([] if d.follows is None else [d.follows])] for p, d in docs]


def docs_of(rows: Iterable[list[Any]]) -> list[tuple[str, RecallDoc]]:
    """The ``(path, document)`` pairs of a snapshot's rows; ``ValueError`` when one is not a row of these."""
    docs = []
    for p, doc_id, text, updated_at, *follows in rows:
        if not (isinstance(p, str) and isinstance(doc_id, str) and isinstance(text, str)):
            raise ValueError("a snapshot row does not start with a path, an id and a text")
        if not is_date_time(updated_at):
            raise ValueError("a snapshot row's time is not one of a date of the years 1 to 9999")
        if follows and (len(follows) > 1 or not isinstance(follows[0], str)):
            raise ValueError("a snapshot row follows something that is not one id")
        docs.append((p, RecallDoc(doc_id, text, float(updated_at), follows[0] if follows else None)))
    return docs
