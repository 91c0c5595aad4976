"""A recall index saved to disk, keyed by the cursor it reflects, so a new process need not re-read every file.

The snapshot is a cache like the index itself: the store stays the truth. A
loaded snapshot is only a starting point: the next refresh asks the store for
``changes(cursor)`` and reads what moved since (or rebuilds when the store
answers ``FullResync``: the commit is gone after purge or forget, or the
snapshot is of another memory). Anything unexpected about the file (missing,
truncated, another format, profile, key or prefix) means "no snapshot".
Beside the texts it keeps the index's tokenised form, so a resume need not
tokenise them again (:mod:`gitmem.recall.postings`); a form that does not fit
the texts is dropped and the texts are tokenised.

JSON, not pickle: loading a file must never run code, whoever wrote it. Written
to a temporary file in the same folder and renamed over the old one, so a
reader sees the old snapshot or the new one, never half of one.

Snapshots hold texts, so they fall under the erasure rule: purge and forget
delete them and rewrite the mount's history generation stamp. A snapshot
records the stamp that was current when its documents were *read*; it is not
loaded under another stamp, and it is not published when the stamp moved while
it was made: checked before the rename and again after it (a purge or forget
that deleted the folder in between would otherwise miss the new file, which is
then deleted). :func:`history_generation` is that one check's input.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gitmem.localfile import load_local_json, read_local_text
from gitmem.recall.index import RecallDoc
from gitmem.recall.tokens import PROFILE

FORMAT = "gitmem-recall-snapshot/2"  # /2: with the index's tokenised form
SNAPSHOT_LIMIT = 1 << 30
"""Bytes of a snapshot file read at most; a bigger file is not ours and is rebuilt."""


GENERATION_FILE = os.path.join("gitmem", "generation")


def history_generation(mount: str | os.PathLike[str]) -> str | None:
    """The history generation stamp of the mount at ``mount`` (``None`` before the first purge or forget).

    An unreadable stamp answers a new random text each time, so two readings
    never match and no snapshot is kept or published under it.
    """
    path = os.path.join(os.fspath(mount), GENERATION_FILE)
    if not os.path.lexists(path):
        return None
    text = read_local_text(path, 4096)
    return text if text is not None else f"unreadable {os.urandom(8).hex()}"


Generation = Callable[[], "str | None"]


def generation_of(store: object) -> Generation | None:
    """How to read the history generation of ``store``'s mount; ``None`` for a store without a folder (in memory)."""
    path = getattr(store, "path", None)
    if not isinstance(path, str) or not os.path.isdir(os.path.join(path, "gitmem")):
        return None
    return lambda: history_generation(path)


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
    generation: str | None = None,
    current: Generation | None = None,
) -> bool:
    """Write ``snapshot`` atomically (temporary file, fsync, rename); whether it was published.

    ``generation`` is the history stamp read before the documents were;
    ``current`` reads the stamp now. When it moved, nothing is published (and a
    file renamed into place just as it moved is deleted again).
    """
    body = {
        "format": FORMAT,
        "profile": PROFILE,
        "key": key,
        "prefix": prefix,
        "cursor": snapshot.cursor,
        "generation": generation,
        "docs": [[p, d.id, d.text, d.updated_at] for p, d in snapshot.docs],
        "skipped": [list(s) for s in snapshot.skipped],
        "tokens": snapshot.tokens,
    }
    return publish(path, body, generation=generation, current=current, fsync=True)


def publish(
    path: str | os.PathLike[str],
    body: Mapping[str, object],
    *,
    generation: str | None,
    current: Generation | None,
    fsync: bool = False,
) -> bool:
    """Write ``body`` as JSON to ``path`` atomically unless the history generation moved; whether it did.

    ``generation`` is the stamp read before the texts in ``body`` were read,
    ``current`` reads it now (``None``: a store without history to erase). It
    is compared before the rename and after it; a file published just as a
    purge or forget deleted the folder is deleted again.
    """
    if current is not None and current() != generation:
        return False
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            # dumps, not dump: only dumps uses the C encoder (dump streams through Python).
            out.write(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
            if fsync:
                out.flush()
                os.fsync(out.fileno())
        if current is not None and current() != generation:
            Path(tmp).unlink(missing_ok=True)
            return False
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if current is not None and current() != generation:
        target.unlink(missing_ok=True)
        return False
    return True


def load(
    path: str | os.PathLike[str], *, key: str, prefix: str, generation: str | None = None
) -> Snapshot | None:
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
        for p, doc_id, text, updated_at in body["docs"]:
            if not (isinstance(p, str) and isinstance(doc_id, str) and isinstance(text, str)):
                return None
            if isinstance(updated_at, bool) or not isinstance(updated_at, int | float):
                return None
            docs.append((p, RecallDoc(doc_id, text, float(updated_at))))
        skipped = tuple((str(p), str(why)) for p, why in body.get("skipped", []))
        return Snapshot(body["cursor"], tuple(docs), skipped, body.get("tokens"))
    except (OSError, ValueError, TypeError, KeyError):
        return None
