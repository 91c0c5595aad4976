"""A recall index saved to disk, keyed by the cursor it reflects, so a new process need not re-read every file.

The snapshot is a cache like the index itself: the store stays the truth. A
loaded snapshot is only a starting point: the next refresh asks the store for
``changes(cursor)`` and reads what moved since (or rebuilds when the store
answers ``FullResync``: the commit is gone after purge or forget, or the
snapshot is of another memory). Anything unexpected about the file (missing,
truncated, another format, profile, key or prefix) means "no snapshot".

JSON, not pickle: loading a file must never run code, whoever wrote it. Written
to a temporary file in the same folder and renamed over the old one, so a
reader sees the old snapshot or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gitmem.localfile import load_local_json
from gitmem.recall.index import RecallDoc
from gitmem.recall.tokens import PROFILE

FORMAT = "gitmem-recall-snapshot/1"
SNAPSHOT_LIMIT = 1 << 30
"""Bytes of a snapshot file read at most; a bigger file is not ours and is rebuilt."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a :class:`~gitmem.recall.storeindex.StoreRecall` needs to resume: cursor, documents by path."""

    cursor: str
    docs: tuple[tuple[str, RecallDoc], ...]  # (path, document)
    skipped: tuple[tuple[str, str], ...] = ()


def save(path: str | os.PathLike[str], snapshot: Snapshot, *, key: str, prefix: str) -> None:
    """Write ``snapshot`` atomically (temporary file, fsync, rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "format": FORMAT,
        "profile": PROFILE,
        "key": key,
        "prefix": prefix,
        "cursor": snapshot.cursor,
        "docs": [[p, d.id, d.text, d.updated_at] for p, d in snapshot.docs],
        "skipped": [list(s) for s in snapshot.skipped],
    }
    fd, tmp = tempfile.mkstemp(prefix=".recall-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(body, out, ensure_ascii=False, separators=(",", ":"))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(path: str | os.PathLike[str], *, key: str, prefix: str) -> Snapshot | None:
    """The snapshot at ``path`` when it is one of ours for this profile, key and prefix; else ``None``."""
    try:
        body = load_local_json(path, SNAPSHOT_LIMIT)
        if (
            not isinstance(body, dict)
            or body.get("format") != FORMAT
            or body.get("profile") != PROFILE
            or body.get("key") != key
            or body.get("prefix") != prefix
            or not isinstance(body.get("cursor"), str)
        ):
            return None
        docs = []
        for p, doc_id, text, updated_at in body["docs"]:
            if not (isinstance(p, str) and isinstance(doc_id, str) and isinstance(text, str)):
                return None
            if isinstance(updated_at, bool) or not isinstance(updated_at, int | float):
                return None
            docs.append((p, RecallDoc(doc_id, text, float(updated_at))))
        skipped = tuple((str(p), str(why)) for p, why in body.get("skipped", []))
        return Snapshot(body["cursor"], tuple(docs), skipped)
    except (OSError, ValueError, TypeError, KeyError):
        return None
