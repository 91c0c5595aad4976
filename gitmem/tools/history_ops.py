"""What the history, show, search and restore file tools do, over the store seam.

These tools give a model what only a versioned store has: who changed a memory
and why (:func:`history`), an earlier version or what one change did
(:func:`show`), files ranked by the words of a query (:func:`search`), and a
file put back as it was (:func:`restore`). Every answer is bounded, like the
other tools' answers: a page of changes with a cursor, a file cut at the size
limit, a diff cut at :data:`MAX_DIFF_CHARS`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final, Protocol, runtime_checkable

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import FileFormat, split_frontmatter, validate_directory, validate_path
from gitmem.history import LogEntry
from gitmem.store import FileStore, HistoryStore
from gitmem.tools.ops import MAX_MATCH_CHARS, cut_utf8, file_payload, read_or_none

#: A change's diff longer than this is cut and marked ``truncated``; show the file for the rest.
MAX_DIFF_CHARS: Final = 8000
_COMMIT = re.compile(r"[0-9a-f]{4,64}")
_WORD = re.compile(r"\w+", re.UNICODE)

Payload = dict[str, Any]


class RankedHit(Protocol):
    path: str
    score: float
    snippet: str
    version: str


@runtime_checkable
class RankedStore(Protocol):
    """A store with ranked search (``find``: BM25 over words), as gitmem's git store has."""

    def find(self, query: str, *, path: str = "", limit: int = 10) -> Sequence[RankedHit]: ...


def change_payload(entry: LogEntry) -> Payload:
    """One change as a model sees it: which commit, when, who (principal, run, tool call), what and why."""
    return {
        "commit": entry.commit,
        "time": entry.time.isoformat(),
        "principal": entry.origin.principal_id,
        "run": entry.origin.run_id,
        "tool_call": entry.origin.tool_call_id,
        "op": entry.op,
        "paths": list(entry.paths),
        "summary": entry.summary,
    }


def history(store: HistoryStore, path: str, limit: int, cursor: str | None, fmt: FileFormat) -> Payload:
    """A page of changes, newest first; ``next_cursor`` continues after the last one (``None``: no more)."""
    target = validate_path(path, fmt) if path else None
    if cursor is not None and not _COMMIT.fullmatch(cursor):
        raise MemoryStoreError("invalid_cursor", "cursor must be the next_cursor of an earlier memory_file_history")
    entries = store.log(target, until=cursor, limit=limit + 1)
    page, rest = entries[:limit], entries[limit:]
    return {"changes": [change_payload(e) for e in page], "next_cursor": rest[0].commit if rest else None}


def show(store: HistoryStore, revision: str, path: str | None, fmt: FileFormat) -> Payload:
    """The file ``path`` as it was at ``revision``, or (no path) what that change did: who, why and a diff."""
    if path is not None:
        file = store.show(revision, validate_path(path, fmt))
        return {"revision": revision, **file_payload(file, fmt)}
    found = store.log(None, until=revision, limit=1)
    if not found:
        raise MemoryStoreError("not_found", f"no commit {revision!r} in this memory")
    entry = found[0]
    try:
        diffs = store.diff(f"{entry.commit}~1", entry.commit)
    except MemoryStoreError as exc:
        if exc.code != "not_found":
            raise
        diffs = []  # the first commit has no parent: it made the memory
    text = "".join(d.patch for d in diffs)
    patch, cut = cut_utf8(text, MAX_DIFF_CHARS)
    out: Payload = {
        **change_payload(entry),
        "files": [{"path": d.path, "old_path": d.old_path, "status": d.status} for d in diffs],
        "diff": patch,
    }
    if cut:
        out["truncated"] = True
    return out


def _body_start(text: str) -> int:
    """The line number (from 1) where a file's text starts after its frontmatter."""
    try:
        _, body = split_frontmatter(text)
    except MemoryStoreError:
        return 1
    return len(text[: len(text) - len(body)].splitlines()) + 1


def matched_line(text: str, query: str) -> tuple[int, str] | None:
    """The first line after the frontmatter that holds a word of ``query`` (ignoring case), and its number."""
    words = {w.casefold() for w in _WORD.findall(query)}
    if not words:
        return None
    start = _body_start(text)
    for number, line in enumerate(text.splitlines()[start - 1 :], start=start):
        if words & {w.casefold() for w in _WORD.findall(line)}:
            return number, line[:MAX_MATCH_CHARS]
    return None


def search(store: FileStore, query: str, path: str, limit: int, fmt: FileFormat) -> Payload:
    """Files ranked by the words of ``query``, best first, each with the line that matched and its score."""
    if not isinstance(store, RankedStore):
        raise MemoryStoreError("unavailable", "this memory has no ranked search; use memory_file_grep")
    prefix = validate_directory(path, fmt)
    out = []
    for hit in store.find(query, path=prefix, limit=limit):
        entry: Payload = {"path": hit.path, "score": round(hit.score, 3), "version": hit.version}
        file = read_or_none(store, hit.path)
        found = matched_line(file.text, query) if file is not None else None
        if found is not None:
            entry["line"], entry["text"] = found
        else:
            entry["line"], entry["text"] = None, hit.snippet
        out.append(entry)
    return {"results": out}


def restore(store: HistoryStore, path: str, revision: str, version: str | None, origin: Any) -> Payload:
    """``path`` put back as it was at ``revision``, in one new commit, if the file is still at ``version``."""
    new = store.restore(path, revision, expected=version, origin=origin)
    if new is None:
        return {"status": "deleted", "path": path, "revision": revision, "version": None}
    return {"status": "restored", "path": path, "revision": revision, "version": new}
