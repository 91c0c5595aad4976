"""A recall index saved to disk, keyed by the cursor it reflects, so a new process need not re-read every file.

The snapshot is a cache like the index itself: the store stays the truth. A
loaded snapshot is only a starting point: the next refresh asks the store for
``changes(cursor)`` and reads what moved since (or rebuilds when the store
answers ``FullResync``: the commit is gone after purge or forget, or the
snapshot is of another memory). Anything unexpected about the file (missing,
truncated, another format, profile, key or prefix) means "no snapshot".
Each document keeps what it follows (the conversation profile indexes it with
that item's words). Beside the texts it keeps the index's tokenised form, so a resume need not
tokenise them again (:mod:`gitmem.recall.postings`); a form that does not fit
the texts is dropped and the texts are tokenised.

JSON, not pickle: loading a file must never run code, whoever wrote it. Written
to a temporary file in the same folder and renamed over the old one, so a
reader sees the old snapshot or the new one, never half of one.

Snapshots hold texts, so they fall under the erasure rule of
:mod:`gitmem.derived`: purge and forget delete them and rewrite the mount's
history generation stamp. A snapshot records the stamp that was current when
its documents were *read*; it is not loaded under another stamp, and it is
published through :func:`gitmem.derived.publish`, so never when the stamp
moved while it was made.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gitmem import derived
from gitmem.localfile import load_local_json, replace_file
from gitmem.recall.tokens import PROFILE
from gitmem.recall.values import RecallDoc

FORMAT = "gitmem-recall-snapshot/3"  # /2: with the index's tokenised form; /3: and what each doc follows
SNAPSHOT_LIMIT = 1 << 30
"""Bytes of a snapshot file read at most; a bigger file is not ours and is rebuilt."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a :class:`~gitmem.recall.storeindex.StoreRecall` needs to resume: cursor, documents by path."""

    cursor: str
    docs: tuple[tuple[str, RecallDoc], ...]  # (path, document)
    skipped: tuple[tuple[str, str], ...] = ()
    # The index's tokenised form (:meth:`RecallIndex.export_tokens`), unchecked until restored.
    tokens: object = None


def save(
    path: str | os.PathLike[str],
    snapshot: Snapshot,
    *,
    key: str,
    prefix: str,
    seen: derived.Generation = derived.UNGUARDED,
) -> bool:
    """Write ``snapshot`` atomically (temporary file, fsync, rename); whether it was published.

    ``seen`` is the history generation read before the documents were; when it
    moved since, nothing is left published.
    """
    body = {
        "format": FORMAT,
        "profile": PROFILE,
        "key": key,
        "prefix": prefix,
        "cursor": snapshot.cursor,
        "generation": seen.value,
        "docs": [
            [p, d.id, d.text, d.updated_at, *([] if d.follows is None else [d.follows])] for p, d in snapshot.docs
        ],
        "skipped": [list(s) for s in snapshot.skipped],
        "tokens": snapshot.tokens,
    }
    return publish(path, body, seen, fsync=True)


def publish(
    path: str | os.PathLike[str], body: Mapping[str, object], seen: derived.Generation, *, fsync: bool = False
) -> bool:
    """Write ``body`` as JSON to ``path`` atomically unless history was erased since ``seen``; whether it stands."""
    return derived.publish(seen, path, lambda: _write_json(Path(path), body, fsync))


def _write_json(target: Path, body: Mapping[str, object], fsync: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # dumps, not dump: only dumps uses the C encoder (dump streams through Python).
    replace_file(target, json.dumps(body, ensure_ascii=False, separators=(",", ":")), fsync=fsync)


def load(path: str | os.PathLike[str], *, key: str, prefix: str, generation: str | None = None) -> Snapshot | None:
    """The snapshot at ``path`` when it is one of ours for this profile, key, prefix and history generation; else ``None``."""
    try:
        body = load_local_json(path, SNAPSHOT_LIMIT)
        if (
            not isinstance(body, dict)
            or body.get("format") != FORMAT
            or body.get("profile") != PROFILE
            or body.get("key") != key
            or body.get("prefix") != prefix
            or not isinstance(body.get("cursor"), str)
            or body.get("generation") != generation
        ):
            return None
        docs = []
        for p, doc_id, text, updated_at, *follows in body["docs"]:
            if not (isinstance(p, str) and isinstance(doc_id, str) and isinstance(text, str)):
                return None
            if isinstance(updated_at, bool) or not isinstance(updated_at, int | float):
                return None
            if follows and (len(follows) > 1 or not isinstance(follows[0], str)):
                return None
            docs.append((p, RecallDoc(doc_id, text, float(updated_at), follows[0] if follows else None)))
        skipped = tuple((str(p), str(why)) for p, why in body.get("skipped", []))
        return Snapshot(body["cursor"], tuple(docs), skipped, body.get("tokens"))
    except (OSError, ValueError, TypeError, KeyError):
        return None
