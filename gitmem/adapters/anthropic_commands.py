"""What the memory tool's commands do to a gitmem mount, and how ``/memories`` paths map onto it.

:class:`MemoryCommands` holds the semantics of ``view``, ``create``, ``str_replace``,
``insert``, ``delete`` and ``rename`` as plain calls over any
:class:`~gitmem.store.FileStore` (the sync seam); :mod:`gitmem.adapters.anthropic_memory` puts them
behind the SDK's tool classes. Results and messages follow the SDK's
local-filesystem memory tool, so a model sees the same text from either backend.
Refusals are :class:`~anthropic.lib.tools.ToolError`, which the SDK's runner
returns to the model as an error result.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Callable
from typing import Any, Final

from anthropic.lib.tools import ToolError

from gitmem.errors import MemoryStoreError
from gitmem.fileformat import DEFAULT_FORMAT, FileFormat, validate_path
from gitmem.model import FileEntry, FileText, Origin
from gitmem.store import BatchFileStore, FileStore
from gitmem.tools import ops

ROOT: Final = "/memories"
LINE_NUMBER_WIDTH: Final = 6
MAX_LINES: Final = 999_999  # the SDK's limit for a view
MAX_VIEW_CHARS: Final = 1 << 20  # one view returns at most this much text; longer: use view_range
_LINK_WHY: Final = "a symbolic link or submodule in git, which the memory tool does not follow; nothing was done"
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


# --- paths ---------------------------------------------------------------------------


def store_path(path: object, fmt: FileFormat = DEFAULT_FORMAT) -> str:
    """The mount path that ``/memories/...`` names (``""`` for ``/memories`` itself), or a ``ToolError``.

    Pure: nothing is read. One trailing ``/`` is accepted (folders are written that way).
    """
    if not isinstance(path, str):
        raise ToolError(f"Path must be a string starting with {ROOT}, got: {type(path).__name__}")
    # Control characters are shown escaped; a printable path holds none (checked in C, not per character).
    shown = path if path.isprintable() or not any(unicodedata.category(c) == "Cc" for c in path) else repr(path)
    if "\x00" in path:
        raise ToolError(f"Path {shown} holds a NUL character; nothing was done")
    if "\\" in path:
        raise ToolError(f"Path {shown} holds a backslash; separate folders with '/' under {ROOT}")
    if _PERCENT_ESCAPE.search(path):
        raise ToolError(f"Path {shown} holds a percent-encoded character; write paths plainly under {ROOT}")
    if path != ROOT and not path.startswith(ROOT + "/"):
        if path.startswith(ROOT):
            raise ToolError(f"Path {shown} is outside {ROOT}: it only shares the prefix; use {ROOT}/...")
        raise ToolError(f"Path must start with {ROOT}, got: {shown}")
    rest = path[len(ROOT) + 1 :]
    if rest.endswith("/"):
        rest = rest[:-1]
    if not rest:
        return ""
    for segment in rest.split("/"):
        if not segment:
            raise ToolError(f"Path {shown} has an empty segment ('//'); write each folder name once")
        folded = segment if segment.isascii() else unicodedata.normalize("NFKC", segment)  # NFKC keeps ASCII
        if folded.strip() in (".", ".."):
            raise ToolError(f"Path {shown} would escape {ROOT} directory ('.' and '..' segments are refused)")
        if segment.startswith("~"):
            raise ToolError(f"Path {shown} has a segment starting with '~'; home directories are not reachable")
    try:
        return validate_path(rest, fmt)
    except MemoryStoreError as exc:
        raise ToolError(f"Invalid path {shown}: {exc.message}") from None


def names_root(path: object) -> bool:
    """Whether ``path`` means ``/memories`` itself once its ``.`` and ``..`` are applied.

    Paths with such segments are refused anyway; for ``delete`` and ``rename`` the
    refusal says what the SDK's tool says of them (``/memories/.``, ``/memories/sub/..``).
    """
    return isinstance(path, str) and path.startswith(ROOT) and posixpath.normpath(path) == ROOT


def format_size(size: int) -> str:
    """Sizes as the SDK's listing prints them: ``0B``, ``812B``, ``4K``, ``1.5M``."""
    units = ("B", "K", "M", "G")
    step = min(max(size.bit_length() - 1, 0) // 10, len(units) - 1)
    value = size / 1024**step
    return f"{int(value)}{units[step]}" if value == int(value) else f"{value:.1f}{units[step]}"


class _NotAFile(Exception):
    """Raised inside a change function: the path holds no file (a folder, or nothing)."""


# --- the commands ----------------------------------------------------------------------


class MemoryCommands:
    """The six commands on one mount, for one tool use (``origin`` names it)."""

    def __init__(self, store: FileStore, *, fmt: FileFormat, retries: int, origin: Origin) -> None:
        self.store = store
        self.fmt = fmt
        self.retries = retries
        self.origin = origin

    # -- helpers --

    def _fail(self, exc: MemoryStoreError, shown: str) -> ToolError:
        code = exc.code
        if code == "not_found":
            return ToolError(f"The path {shown} does not exist. Please provide a valid path.")
        if code == "conflict_retries_exhausted":
            return ToolError(
                f"{shown} kept changing while this command was retried {self.retries} times; nothing was written. "
                "View it again and repeat the command if it is still needed."
            )
        if code == "invalid_path":
            return ToolError(f"Invalid path {shown}: {exc.message}")
        if code in ("invalid_file", "too_large", "memory_full"):
            return ToolError(f"Nothing was written to {shown}: {exc.message}")
        return ToolError(f"The memory store refused the command ({code}): {exc.message}")

    def _files_under(self, folder: str) -> list[FileEntry]:
        prefix = folder + "/" if folder else ""
        return [e for e in self.store.list() if e.path.startswith(prefix)]

    def _missing(self, rel: str, shown: str) -> ToolError:
        if rel and self._files_under(rel):
            return ToolError(f"The path {shown} is not a file.")
        return self._link_error(rel, shown) or ToolError(f"The path {shown} does not exist. Please provide a valid path.")

    def _link_error(self, rel: str, shown: str, *, view: bool = False) -> ToolError | None:
        """The SDK's symlink refusal when ``rel``, or a folder above it, is a link entry in git.

        Asked only after a command found nothing usable at ``rel``, of a store that
        can tell (the git store's ``link_at``); others answer as if nothing were there.
        """
        link_at = getattr(self.store, "link_at", None)
        if not rel or not callable(link_at):
            return None
        try:
            link = link_at(rel)
        except MemoryStoreError:
            return None
        if not isinstance(link, str):
            return None
        if link != rel:
            return ToolError(
                f"Path {shown} would escape {ROOT} directory via symlink: path '{ROOT}/{link}' is a symlink ({_LINK_WHY})"
            )
        if view:
            return ToolError(f"Unsupported file type for {shown}: path {shown!r} is a symlink ({_LINK_WHY})")
        return ToolError(f"path {shown!r} is a symlink ({_LINK_WHY})")

    def _update(self, rel: str, shown: str, change: Callable[[FileText | None], str]) -> str:
        """One CAS commit of ``change`` applied to the file as it is, re-read after a conflict."""
        try:
            text, _ = ops.cas_update(
                self.store, rel, change, fmt=self.fmt, retries=self.retries, origin=self.origin
            )
        except _NotAFile:
            raise self._missing(rel, shown) from None
        except MemoryStoreError as exc:
            link = self._link_error(rel, shown) if exc.code == "invalid_path" else None
            raise link or self._fail(exc, shown) from None
        return text

    # -- view --

    def view(self, path: object, view_range: Any = None) -> str:
        rel = store_path(path, self.fmt)
        shown = str(path)
        if rel:
            try:
                file = ops.read_or_none(self.store, rel)
            except MemoryStoreError as exc:
                raise self._fail(exc, shown) from None
            if file is not None:
                return self._numbered(shown, file.text, view_range)
        under = self._files_under(rel)
        if rel and not under:
            link = self._link_error(rel, shown, view=True)
            raise link or ToolError(f"The path {shown} does not exist. Please provide a valid path.")
        return self._listing(shown.rstrip("/") or ROOT, rel, under)

    @staticmethod
    def _numbered(shown: str, text: str, view_range: Any) -> str:
        lines = text.split("\n")
        if len(lines) > MAX_LINES:
            raise ToolError(f"File {shown} exceeds maximum line limit of 999,999 lines.")
        first = 1
        if view_range is not None:
            ok = (
                isinstance(view_range, list | tuple)
                and len(view_range) == 2
                and all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
            )
            if not ok:
                raise ToolError(
                    f"Invalid `view_range` {view_range!r}: give [start_line, end_line] (end -1: to the end)"
                )
            start, end = view_range
            if not 1 <= start <= len(lines) or (end != -1 and end < start):
                raise ToolError(
                    f"Invalid `view_range` {list(view_range)}: start_line must be within [1, {len(lines)}] and "
                    "end_line at least start_line, or -1"
                )
            lines = lines[start - 1 : None if end == -1 else end]
            first = start
        body = "\n".join(f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{line}" for n, line in enumerate(lines, start=first))
        if len(body) > MAX_VIEW_CHARS:
            raise ToolError(
                f"File {shown} is too long to view at once (lines {first} to {first + len(lines) - 1} come to "
                f"{len(body):,} characters; a view returns at most {MAX_VIEW_CHARS:,}). "
                "View part of it with view_range."
            )
        return f"Here's the content of {shown} with line numbers:\n{body}"

    @staticmethod
    def _listing(shown: str, rel: str, under: list[FileEntry]) -> str:
        """Two levels below the folder, hidden names (and what is in them) left out, like the SDK."""
        cut = len(rel) + 1 if rel else 0
        total = 0
        top: dict[str, int] = {}
        below: dict[str, dict[str, int]] = {}
        for entry in under:
            total += entry.size
            parts = entry.path[cut:].split("/")
            if parts[0].startswith("."):
                continue
            if len(parts) == 1:
                top[parts[0]] = entry.size
                continue
            folder = parts[0] + "/"
            top[folder] = top.get(folder, 0) + entry.size
            if parts[1].startswith("."):
                continue
            child = f"{parts[0]}/{parts[1]}" + ("/" if len(parts) > 2 else "")
            kids = below.setdefault(folder, {})
            kids[child] = kids.get(child, 0) + entry.size
        rows = [f"{format_size(total)}\t{shown}"]
        for name in sorted(top, key=lambda n: n.rstrip("/")):
            rows.append(f"{format_size(top[name])}\t{shown}/{name}")
            kids = below.get(name, {})
            for child in sorted(kids, key=lambda n: n.rstrip("/")):
                rows.append(f"{format_size(kids[child])}\t{shown}/{child}")
        header = f"Here're the files and directories up to 2 levels deep in {shown}, excluding hidden items:"
        return header + "\n" + "\n".join(rows)

    # -- writes --

    def create(self, path: object, file_text: object) -> str:
        rel = store_path(path, self.fmt)
        shown = str(path)
        if not rel:
            raise ToolError(f"Cannot create a file at {ROOT} itself; name a file under it, such as {ROOT}/notes.md")
        if not isinstance(file_text, str):
            raise ToolError("`file_text` must be a string")

        exists = ToolError(f"File {shown} already exists")
        if self.store.format != self.fmt:  # the tool's own rules: checked after reading, as every edit

            def change(current: FileText | None) -> str:
                if current is not None:
                    raise exists
                return file_text

            self._update(rel, shown, change)
            return f"File created successfully at: {shown}"
        # No read first: a write expecting no file is refused under the store's writer lock
        # when one is there (as the SDK's O_EXCL open), so the commit is the only work.
        try:
            self.store.write(rel, file_text, expected=None, origin=self.origin)
        except MemoryStoreError as exc:
            if exc.code == "version_mismatch" and exc.current is not None:
                raise exists from None
            if exc.code in ("invalid_file", "too_large", "memory_full"):
                # A file that is there is the first answer, whatever the text (as when read first).
                try:
                    there = ops.read_or_none(self.store, rel) is not None
                except MemoryStoreError:
                    there = False
                if there:
                    raise exists from None
            link = self._link_error(rel, shown) if exc.code == "invalid_path" else None
            raise link or self._fail(exc, shown) from None
        return f"File created successfully at: {shown}"

    def str_replace(self, path: object, old_str: object, new_str: object) -> str:
        rel = store_path(path, self.fmt)
        shown = str(path)
        if not rel:
            raise ToolError(f"The path {shown} is not a file.")
        if not isinstance(old_str, str) or not isinstance(new_str, str):
            raise ToolError("`old_str` and `new_str` must be strings")
        if not old_str:
            raise ToolError("No replacement was performed: `old_str` is empty; give the exact text to replace.")
        seen = {"reads": 0, "line": 0}

        def change(current: FileText | None) -> str:
            seen["reads"] += 1
            if current is None:
                raise _NotAFile
            text = current.text
            count = text.count(old_str)
            note = " (the file changed while this command ran; view it again)" if seen["reads"] > 1 else ""
            if count == 0:
                raise ToolError(
                    f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {shown}.{note}"
                )
            if count > 1:
                lines, at, line, counted_to = [], text.find(old_str), 1, 0
                while at != -1:  # each line counted on from the last: one pass over the file
                    line += text.count("\n", counted_to, at)
                    counted_to = at
                    lines.append(str(line))
                    at = text.find(old_str, at + 1)
                raise ToolError(
                    f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines: "
                    f"{', '.join(lines)}. Please ensure it is unique{note}"
                )
            at = text.find(old_str)
            seen["line"] = text.count("\n", 0, at)
            return text[:at] + new_str + text[at + len(old_str) :]

        text = self._update(rel, shown, change)
        new_lines = text.split("\n")
        first = max(0, seen["line"] - 2)
        last = min(len(new_lines), seen["line"] + 3)
        snippet = "\n".join(f"{str(n + 1).rjust(LINE_NUMBER_WIDTH)}\t{new_lines[n]}" for n in range(first, last))
        return (
            f"The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{snippet}"
        )

    def insert(self, path: object, insert_line: object, insert_text: object) -> str:
        rel = store_path(path, self.fmt)
        shown = str(path)
        if not rel:
            raise ToolError(f"The path {shown} is not a file.")
        if not isinstance(insert_line, int) or isinstance(insert_line, bool):
            raise ToolError(f"Invalid `insert_line` parameter: {insert_line!r}. It must be a line number.")
        if not isinstance(insert_text, str):
            raise ToolError("`insert_text` must be a string")

        def change(current: FileText | None) -> str:
            if current is None:
                raise _NotAFile
            lines = current.text.split("\n")  # a \r stays with its line
            if lines[-1] == "":
                lines.pop()
            if not 0 <= insert_line <= len(lines):
                raise ToolError(
                    f"Invalid `insert_line` parameter: {insert_line}. It should be within the range [0, {len(lines)}]."
                )
            lines.insert(insert_line, insert_text.rstrip("\n"))
            text = "\n".join(lines)
            return text if text.endswith("\n") else text + "\n"

        self._update(rel, shown, change)
        return f"The file {shown} has been edited."

    def _delete_file(self, rel: str, version: str | None, shown: str) -> bool:
        """Delete ``rel`` as it was at ``version`` (read now when ``None``); ``False`` if absent.

        A delete that loses a race is not retried (as the tools' delete): the file changed
        after it was read, by a writer whose content nobody chose to drop, so the
        command reports the conflict and keeps the newer text. A file already gone
        counts as absent.
        """
        if version is None:
            current = ops.read_or_none(self.store, rel)
            if current is None:
                return False
            version = current.version
        try:
            self.store.delete(rel, expected=version, origin=self.origin)
        except MemoryStoreError as exc:
            if exc.code == "not_found" or (exc.code == "version_mismatch" and exc.current is None):
                return False  # another writer deleted it first: the goal is met
            if exc.code == "version_mismatch":
                raise ToolError(
                    f"{shown} changed after it was read, so it was not deleted (a lost delete is not retried). "
                    "View it again and repeat the command if it should still go."
                ) from None
            raise self._fail(exc, shown) from None
        return True

    def delete(self, path: object) -> str:
        if names_root(path):
            raise ToolError(f"Cannot delete the {ROOT} directory itself")
        rel = store_path(path, self.fmt)
        shown = str(path)
        if not rel:
            raise ToolError(f"Cannot delete the {ROOT} directory itself")
        try:
            if self._delete_file(rel, None, shown):
                return f"Successfully deleted {shown}"
            under = self._files_under(rel)
        except MemoryStoreError as exc:
            raise self._fail(exc, shown) from None
        if not under:
            raise self._link_error(rel, shown) or ToolError(f"The path {shown} does not exist")
        self._delete_files(under, rel, shown)
        return f"Successfully deleted {shown}"

    def _delete_files(self, under: list[FileEntry], rel: str, shown: str) -> None:
        """Delete the listed files: one commit when the store takes a batch, else one each.

        The batch expects the listed versions; when a file changed since, nothing is
        deleted. Files deleted by another writer meanwhile count as gone: the folder
        is listed again and the rest deleted (a bounded number of times).
        """
        store = self.store
        if not isinstance(store, BatchFileStore):
            self._each(
                under, shown, lambda e: self._delete_file(e.path, e.version, f"{ROOT}/{e.path}"), "deleted"
            )
            return
        for _ in range(self.retries + 1):
            try:
                store.delete_many([(e.path, e.version) for e in under], origin=self.origin)
                return
            except MemoryStoreError as exc:
                if exc.code != "version_mismatch":
                    raise self._fail(exc, shown) from None
                if exc.current is not None:
                    raise ToolError(
                        f"{ROOT}/{exc.current.path} changed after it was read, so nothing under {shown} was "
                        "deleted (a lost delete is not retried). View it again and repeat the command if it "
                        "should still go."
                    ) from None
            try:
                under = self._files_under(rel)
            except MemoryStoreError as exc:
                raise self._fail(exc, shown) from None
            if not under:
                return  # other writers deleted the rest: the goal is met
        raise self._fail(MemoryStoreError("conflict_retries_exhausted"), shown)

    def _each(self, entries: list[FileEntry], shown: str, step: Callable[[FileEntry], Any], done: str) -> None:
        """Run ``step`` on each file of a folder (one commit each); say how far it got if one fails."""
        for count, entry in enumerate(entries):
            try:
                step(entry)
            except ToolError as exc:
                raise ToolError(
                    f"{count} of {len(entries)} files under {shown} were {done}, then {ROOT}/{entry.path} failed: "
                    f"{exc.content if isinstance(exc.content, str) else exc}"
                ) from None

    def rename(self, old_path: object, new_path: object) -> str:
        if names_root(old_path):
            raise ToolError(f"Cannot rename the {ROOT} directory itself")
        source = store_path(old_path, self.fmt)
        destination = store_path(new_path, self.fmt)
        old_shown, new_shown = str(old_path), str(new_path)
        if not source:
            raise ToolError(f"Cannot rename the {ROOT} directory itself")
        if not destination:
            raise ToolError(f"The destination {new_shown} already exists")
        try:
            current = ops.read_or_none(self.store, source)
            if current is not None:
                self._move_file(source, destination, current, old_shown, new_shown)
                return f"Successfully renamed {old_shown} to {new_shown}"
            under = self._files_under(source)
            if not under:
                raise self._link_error(source, old_shown) or ToolError(f"The path {old_shown} does not exist")
            if destination == source or destination.startswith(source + "/"):
                raise ToolError(f"Cannot move {old_shown} into itself ({new_shown})")
            if ops.read_or_none(self.store, destination) is not None or self._files_under(destination):
                raise ToolError(f"The destination {new_shown} already exists")
            targets = {e.path: validate_path(destination + e.path[len(source) :], self.fmt) for e in under}
        except MemoryStoreError as exc:
            raise self._fail(exc, new_shown) from None

        if isinstance(self.store, BatchFileStore):
            self._move_folder(self.store, [(e.path, targets[e.path], e.version) for e in under], old_shown)
            return f"Successfully renamed {old_shown} to {new_shown}"

        def step(entry: FileEntry) -> None:
            current = FileText(entry.path, "", entry.version)  # only its version is used
            self._move_file(
                entry.path, targets[entry.path], current, f"{ROOT}/{entry.path}", f"{ROOT}/{targets[entry.path]}"
            )

        self._each(under, old_shown, step, "moved")
        return f"Successfully renamed {old_shown} to {new_shown}"

    def _move_folder(self, store: BatchFileStore, moves: list[tuple[str, str, str]], old_shown: str) -> None:
        """Every file of a folder moved in one commit, expecting the listed versions; else nothing moves."""
        try:
            store.move_many(moves, origin=self.origin)
        except MemoryStoreError as exc:
            if exc.code == "version_mismatch":
                what = f"{ROOT}/{exc.current.path} changed" if exc.current is not None else "a file was removed"
                raise ToolError(
                    f"{what} while {old_shown} was being renamed, so nothing was moved. "
                    "View the folder again and repeat the command if it is still needed."
                ) from None
            if exc.code == "already_exists":
                taken = f"{ROOT}/{exc.current.path}" if exc.current is not None else "the destination"
                raise ToolError(f"The destination {taken} already exists") from None
            raise self._fail(exc, old_shown) from None

    def _move_file(self, source: str, destination: str, current: FileText, old_shown: str, new_shown: str) -> None:
        """One commit moving ``source`` as it was read (``current``); re-read and retried when only it moved on.

        The store checks the source's version and that the destination is free
        under its writer lock, so nothing is read here beyond the source the
        caller already read: a refused move (``already_exists``, a folder in the
        way) tells what stands there.
        """
        try:
            for _ in range(self.retries + 1):
                try:
                    self.store.move(source, destination, expected=current.version, origin=self.origin)
                    return
                except MemoryStoreError as exc:
                    if exc.code != "version_mismatch":
                        raise
                found = ops.read_or_none(self.store, source)
                if found is None:
                    raise MemoryStoreError("not_found", f"{source} does not exist")
                current = found
            raise MemoryStoreError("conflict_retries_exhausted", f"{source} kept changing; nothing was moved")
        except MemoryStoreError as exc:
            if exc.code == "already_exists":
                raise ToolError(f"The destination {new_shown} already exists") from None
            if exc.code == "not_found":
                raise ToolError(f"The path {old_shown} does not exist") from None
            if exc.code == "invalid_path" and self._files_under(destination):
                raise ToolError(f"The destination {new_shown} already exists") from None
            link = self._link_error(destination, new_shown) if exc.code == "invalid_path" else None
            raise link or self._fail(exc, old_shown) from None

    def clear(self) -> str:
        """Delete every file (one commit if the store takes a batch); history keeps them (``purge`` would not)."""
        try:
            under = self._files_under("")
        except MemoryStoreError as exc:
            raise self._fail(exc, ROOT) from None
        if under:
            self._delete_files(under, "", ROOT)
        return "All memory cleared"
