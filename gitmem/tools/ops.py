"""What the seven editing and reading file tools do, over any :class:`~gitmem.store.FileStore` (history: ``history_ops``).

Each function takes plain arguments and returns a JSON-ready ``dict``, or raises
:class:`~gitmem.errors.MemoryStoreError`; :func:`failure_payload` turns that into
the JSON a model gets back. A path is the store's to check: every surface reaches
the store, whose checks run before any I/O with its codes, so the write tools do
not check it again (only ``move`` does, to report its two paths in order); a
reply names a path as the caller gave it. Every write follows one rule (:func:`cas_update`):
read the file, check the tool's condition against what was read, validate the
result, then write expecting the version that was read. When another writer
changed the file in between, the store refuses with ``version_mismatch`` and the
write starts over from a fresh read, a bounded number of times. So two agents
editing different lines of one file both succeed, while an edit whose text is
gone fails and shows the file as it is now. A delete is the exception: it names
the version the model saw, and losing that race is final.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from gitmem.errors import LOST_RACE, MemoryStoreError, MemoryToolError, if_found
from gitmem.fileformat import FileFormat, encode_text, validate_directory, validate_path
from gitmem.grep import check_limit, compile_pattern, scan
from gitmem.model import FileText, Origin, SearchResult
from gitmem.store import FileStore, SearchableFileStore

#: A grep line longer than this is shown cut; the model can view the file for the rest.
MAX_MATCH_CHARS: Final = 500

Payload = dict[str, Any]


# --- payloads ------------------------------------------------------------------------


def cut_utf8(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` UTF-8 bytes on a character boundary, and whether it was cut."""
    if len(text) * 4 <= limit:
        return text, False
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", errors="ignore"), True


def file_payload(file: FileText, fmt: FileFormat) -> Payload:
    """A file as a model sees it; over the size limit it is cut and marked ``truncated``."""
    size = file.size
    content, cut = cut_utf8(file.text, fmt.max_file_bytes)
    out: Payload = {"path": file.path, "version": file.version, "size": size, "content": content}
    if cut:
        out["truncated"] = True
    return out


def failure_payload(exc: MemoryStoreError, fmt: FileFormat) -> Payload:
    """The JSON shape of every failure: code, message and the file as it is now (or null)."""
    current = file_payload(exc.current, fmt) if exc.current is not None else None
    return {"error": exc.code, "message": exc.message, "current": current}


def _not_found(path: str) -> MemoryStoreError:
    return MemoryStoreError(
        "not_found", f"{path} does not exist; view the folder ('' for the top level) to see what is there"
    )


def read_or_none(store: FileStore, path: str) -> FileText | None:
    return if_found(store.read, path)


# --- the write rule --------------------------------------------------------------------


def cas_update(
    store: FileStore,
    path: str,
    change: Callable[[FileText | None], str],
    *,
    fmt: FileFormat,
    retries: int,
    origin: Origin,
    absent_first: bool = False,
) -> tuple[str, str]:
    """Read ``path``, compute its new text with ``change``, write it expecting what was read.

    ``change`` sees the file as it is now (``None`` when absent) and raises a store
    error when the tool's condition does not hold. When another writer got in first
    (:data:`~gitmem.errors.LOST_RACE`) the whole read-check-write starts again, up to
    ``retries`` more times; then the call fails with ``conflict_retries_exhausted`` carrying the file as the last refusal saw it.
    Returns the new text and its version.

    ``absent_first``: the first try takes the file as absent without reading it
    (a create): the write expects no file, which the store checks under its lock
    anyway, so the read would ask the same question twice. Found there after all,
    the refusal is a lost race like any other, and the read-check-write goes on
    with every retry still to come.
    """
    latest: FileText | None = None
    # The store checks every text against its own format before any I/O (the seam's
    # contract); the text is checked here only when the caller's rules are other ones.
    # Each check scans the text for secrets, which is most of a check's cost.
    own_rules = store.format == fmt
    if not own_rules:  # the store checks paths by its own rules; the caller's may be stricter
        path = validate_path(path, fmt)
    if absent_first:
        text = change(None)
        if not own_rules:
            encode_text(text, fmt)
        try:
            return text, store.write(path, text, expected=None, origin=origin)
        except MemoryStoreError as exc:
            if exc.code not in LOST_RACE:
                raise
    for _ in range(retries + 1):
        current = read_or_none(store, path)
        text = change(current)
        if not own_rules:
            encode_text(text, fmt)
        try:
            version = store.write(path, text, expected=current.version if current is not None else None, origin=origin)
        except MemoryStoreError as exc:
            if exc.code not in LOST_RACE:
                raise
            latest = exc.current  # the file as that refusal saw it: None when it is gone
            continue
        return text, version
    raise MemoryToolError(
        "conflict_retries_exhausted",
        f"{path} kept changing while this write was retried {retries} times; nothing was written. "
        "Look at the file as it is now and try again if the change is still needed",
        current=latest,
    )


# --- read tools ------------------------------------------------------------------------


def view(store: FileStore, path: str, *, fmt: FileFormat) -> Payload:
    """A file's content, version and size, or one level of a folder."""
    if path in ("", "/"):
        listing = _list_folder(store, "")
        assert listing is not None
        return listing
    if path.endswith("/"):
        prefix = validate_directory(path, fmt)
        listing = _list_folder(store, prefix)
        if listing is None:
            raise MemoryStoreError("not_found", f"there is no folder {prefix}; view '' to see the top level")
        return listing
    path = validate_path(path, fmt)
    file = read_or_none(store, path)
    if file is not None:
        return file_payload(file, fmt)
    listing = _list_folder(store, path + "/")
    if listing is None:
        raise _not_found(path)
    return listing


def _list_folder(store: FileStore, prefix: str) -> Payload | None:
    files: list[Payload] = []
    folders: dict[str, int] = {}
    for entry in store.list():
        if not entry.path.startswith(prefix):
            continue
        name, sep, _ = entry.path[len(prefix) :].partition("/")
        if sep:
            folder = f"{prefix}{name}/"
            folders[folder] = folders.get(folder, 0) + 1
        else:
            files.append(
                {"path": entry.path, "description": entry.description, "size": entry.size, "version": entry.version}
            )
    if prefix and not files and not folders:
        return None
    out: Payload = {
        "path": prefix,
        "files": files,
        "folders": [{"path": p, "files": n} for p, n in sorted(folders.items())],
    }
    if not prefix and not files and not folders:
        out["hint"] = "This memory is empty. Add a file with memory_file_create."
    return out


def grep(
    store: FileStore,
    pattern: str,
    *,
    path: str = "",
    regex: bool = False,
    case_sensitive: bool = False,
    limit: int = 50,
    fmt: FileFormat,
) -> Payload:
    """Matching lines in path and line order; a hint when nothing matched.

    ``path`` is a folder (``""`` for all) or one file.
    """
    matcher = compile_pattern(pattern, regex=regex, case_sensitive=case_sensitive)
    limit = check_limit(limit)
    if path not in ("", "/") and not path.endswith("/"):
        # A file's path narrows the search to that file.
        file = read_or_none(store, validate_path(path, fmt))
        if file is not None:
            result = scan([(file.path, file.text)], matcher, limit)
            return _grep_payload(result, pattern, file.path, regex=regex, case_sensitive=case_sensitive)
    prefix = "" if path in ("", "/") else validate_directory(path if path.endswith("/") else path + "/", fmt)
    if isinstance(store, SearchableFileStore):
        result = store.search(pattern, regex=regex, case_sensitive=case_sensitive, path=prefix, limit=limit)
    else:
        texts: list[tuple[str, str]] = []
        for entry in store.list():
            if entry.path.startswith(prefix):
                file = read_or_none(store, entry.path)
                if file is not None:
                    texts.append((file.path, file.text))
        result = scan(sorted(texts), matcher, limit)
    return _grep_payload(result, pattern, prefix, regex=regex, case_sensitive=case_sensitive)


def _grep_payload(result: SearchResult, pattern: str, prefix: str, *, regex: bool, case_sensitive: bool) -> Payload:
    matches = []
    for m in result.matches:
        text, cut = cut_utf8(m.text, MAX_MATCH_CHARS)
        matches.append({"path": m.path, "line": m.line, "text": text + ("…" if cut else "")})
    out: Payload = {"matches": matches, "truncated": result.truncated}
    if result.truncated:
        out["hint"] = "More lines matched than were returned; narrow the pattern or the folder, or raise limit."
    elif not matches:
        out["hint"] = no_match_hint(pattern, prefix, regex=regex, case_sensitive=case_sensitive)
    return out


def no_match_hint(pattern: str, prefix: str, *, regex: bool, case_sensitive: bool) -> str:
    """Why a grep may have found nothing, and what to try next."""
    where = "in this memory" if not prefix else f"under {prefix}" if prefix.endswith("/") else f"in {prefix}"
    tips = [f"No line {where} contains {pattern!r}"]
    tips.append(
        "(as a regular expression" + (", case-sensitive)." if case_sensitive else ", ignoring case).")
        if regex
        else "(literal text" + (", case-sensitive)." if case_sensitive else ", ignoring case).")
    )
    if not regex and any(c in pattern for c in "|*+?[](){}^$\\"):
        tips.append("The pattern holds regex characters but was matched literally; pass regex=true to use them.")
    if case_sensitive:
        tips.append("Try case_sensitive=false.")
    if prefix:
        tips.append("Search the whole memory with path ''.")
    tips.append("Try a shorter or different word, or view '' to see which files exist.")
    return " ".join(tips)


# --- write tools -----------------------------------------------------------------------


def _written(status: str, path: str, text: str, version: str) -> Payload:
    return {"status": status, "path": path, "version": version, "size": len(text.encode("utf-8"))}


def create(store: FileStore, path: str, content: str, *, fmt: FileFormat, retries: int, origin: Origin) -> Payload:
    def change(current: FileText | None) -> str:
        if current is not None:
            raise MemoryStoreError(
                "already_exists", f"{path} already exists; edit or append to it instead", current=current
            )
        return content

    text, version = cas_update(store, path, change, fmt=fmt, retries=retries, origin=origin, absent_first=True)
    return _written("created", path, text, version)


def edit(
    store: FileStore,
    path: str,
    old_string: str,
    new_string: str,
    *,
    fmt: FileFormat,
    retries: int,
    origin: Origin,
) -> Payload:
    if not old_string:
        raise MemoryToolError("no_match", "old_string is empty; give the exact text to replace")

    def change(current: FileText | None) -> str:
        if current is None:
            raise _not_found(path)
        text = current.text
        first = text.find(old_string)
        if first == -1:
            raise MemoryToolError(
                "no_match",
                f"old_string does not occur in {path}; it may have been changed by someone else. "
                "'current' shows the file as it is now",
                current=current,
            )
        if text.find(old_string, first + 1) != -1:
            raise MemoryToolError(
                "ambiguous_match",
                f"old_string occurs more than once in {path}; include more of the surrounding text so it "
                "occurs exactly once",
                current=current,
            )
        return text[:first] + new_string + text[first + len(old_string) :]

    text, version = cas_update(store, path, change, fmt=fmt, retries=retries, origin=origin)
    return _written("edited", path, text, version)


def append(store: FileStore, path: str, content: str, *, fmt: FileFormat, retries: int, origin: Origin) -> Payload:
    if not content:
        raise MemoryStoreError("invalid_file", "content to append is empty")

    def change(current: FileText | None) -> str:
        if current is None:
            raise _not_found(path)
        text = current.text
        return text + ("\n" if text and not text.endswith("\n") else "") + content

    text, version = cas_update(store, path, change, fmt=fmt, retries=retries, origin=origin)
    return _written("appended", path, text, version)


def move(store: FileStore, source: str, destination: str, *, fmt: FileFormat, retries: int, origin: Origin) -> Payload:
    """One commit that renames a file; retried when only the source's content moved on.

    Both paths are checked before either is read, so a bad destination is reported
    before a missing source (the store's checks come after the reads).
    """
    source = validate_path(source, fmt)
    destination = validate_path(destination, fmt)
    latest: FileText | None = None
    for _ in range(retries + 1):
        current = read_or_none(store, source)
        if current is None:
            raise _not_found(source)
        taken = read_or_none(store, destination)
        if taken is not None:
            raise MemoryStoreError("already_exists", f"{destination} already exists; nothing was moved", current=taken)
        try:
            version = store.move(source, destination, expected=current.version, origin=origin)
        except MemoryStoreError as exc:
            if exc.code not in LOST_RACE:
                raise
            latest = exc.current  # the file as that refusal saw it: None when it is gone
            continue
        return {"status": "moved", "source": source, "destination": destination, "version": version}
    raise MemoryToolError(
        "conflict_retries_exhausted",
        f"{source} kept changing while the move was retried {retries} times; nothing was moved",
        current=latest,
    )


def delete(store: FileStore, path: str, version: str, *, fmt: FileFormat, origin: Origin) -> Payload:
    """Delete ``path`` only at ``version``; a lost race is reported, never retried."""
    if store.format != fmt:  # the store checks paths by its own rules; the caller's may be stricter
        path = validate_path(path, fmt)
    try:
        store.delete(path, expected=version, origin=origin)
    except MemoryStoreError as exc:
        if exc.code == "not_found" or (exc.code == "version_mismatch" and exc.current is None):
            raise _not_found(path) from None
        if exc.code != "version_mismatch":
            raise
        raise MemoryStoreError(
            "version_mismatch",
            f"{path} is no longer at version {version}; nothing was deleted. 'current' shows the file as it is "
            "now: delete it with its current version only if that is still right",
            current=exc.current,
        ) from None
    return {"status": "deleted", "path": path, "version": version}
