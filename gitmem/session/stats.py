"""Access statistics (``access_count``, ``last_accessed``) kept off ``main``.

Every recall touches the items it returns. Committing that would turn reading
into writing: a commit per turn, noise in ``git log``, and writers contending for
the lock. So the counts live beside the repository instead:

- :class:`FileAccessStats` appends one line per recall to
  ``<repo>/gitmem/session-stats`` (a local file inside the bare repository, never
  part of any commit). Appends are a single ``O_APPEND`` write under a shared
  ``flock``; when the log grows past a threshold one process folds it into one
  line per item and swaps the file in atomically under the exclusive lock.
  Every process sharing the repository sees the others' recalls.
- :class:`MemoryAccessStats` keeps them in a dict (the in-memory twin).

What survives a clone: the items (they are commits), not the statistics — a
clone starts every ``access_count`` at 0, so the "recalled 3 times" pruning
protection must be earned again there; tag an item ``pinned`` to protect it
everywhere.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final, Protocol

from gitmem import derived
from gitmem.errors import MemoryStoreError
from gitmem.localfile import MB, RefusedFile, open_local, open_private, replace_file
from gitmem.recall.values import is_date_time

#: Fold the log once it is this big (bytes); a line per recall is ~60 bytes plus ids.
COMPACT_BYTES: Final = 256 * 1024
#: The most of the log one look reads: far past what compaction lets it grow to. A larger
#: file was not written by gitmem and is refused (``unavailable``, naming it), not loaded.
READ_LIMIT: Final = 32 * MB

Counts = Mapping[str, tuple[int, float]]


class AccessStats(Protocol):
    """Per-item access counts and last access times (seconds since the epoch)."""

    def snapshot(self) -> Counts: ...

    def lookup(self, ids: Iterable[str]) -> Counts: ...

    def record(self, ids: Iterable[str], at: float) -> None: ...

    def forget(self, ids: Iterable[str]) -> None: ...


class MemoryAccessStats:
    """Statistics in a dict: for the in-memory store and tests."""

    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def snapshot(self) -> Counts:
        with self._lock:
            return dict(self._counts)

    def lookup(self, ids: Iterable[str]) -> Counts:
        with self._lock:
            return {i: self._counts[i] for i in ids if i in self._counts}

    def record(self, ids: Iterable[str], at: float) -> None:
        with self._lock:
            _add(self._counts, ids, at)

    def forget(self, ids: Iterable[str]) -> None:
        with self._lock:
            for i in ids:
                self._counts.pop(i, None)


def _add(counts: dict[str, tuple[int, float]], ids: Iterable[str], at: float) -> None:
    for i in ids:
        count, last = counts.get(i, (0, at))
        counts[i] = (count + 1, max(last, at))


class FileAccessStats:
    """Statistics in an append-only local log shared by every process on this machine.

    Line formats: ``a <time> <id> <id>… $`` (one recall), ``f <id>… $`` (forget),
    ``s <id> <count> <time> $`` (a folded total). Every append starts with a newline
    and every complete record ends with ``$``, so a line torn by a crash (no ``$``)
    is skipped, and the next record never runs into it.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, compact_bytes: int = COMPACT_BYTES, stamp: str | None = None
    ) -> None:
        self.path = Path(path)
        # Item ids are names: a log line appended across a purge or forget is dropped (gitmem.derived).
        self._seen = derived.Generation.read(stamp)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.compact_bytes = compact_bytes
        self._counts: dict[str, tuple[int, float]] = {}
        self._inode: int | None = None
        self._offset = 0
        self._guard = threading.Lock()

    def _locked(self, mode: int, folder: int | None = None) -> int:
        """The log's lock file, locked ``mode``; opened in ``folder`` (a descriptor of the log's folder) when given."""
        try:
            where = self.lock_path if folder is None else self.lock_path.name
            fd = open_private(where, os.O_RDWR | os.O_CREAT, dir_fd=folder)  # no link followed, no FIFO
        except OSError as exc:
            raise MemoryStoreError("unavailable", f"cannot open {self.lock_path}: {exc}") from exc
        fcntl.flock(fd, mode)
        return fd

    def snapshot(self) -> Counts:
        with self._guard:
            self._refresh()
            return dict(self._counts)

    def lookup(self, ids: Iterable[str]) -> Counts:
        with self._guard:
            self._refresh()
            return {i: self._counts[i] for i in ids if i in self._counts}

    def _refresh(self) -> None:
        """Catch up with the log; cheap when nothing was appended (one ``stat``)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._counts, self._offset, self._inode = {}, 0, None
            return
        except OSError as exc:
            raise MemoryStoreError("unavailable", f"cannot read {self.path}: {exc}") from exc
        if st.st_ino == self._inode and st.st_size == self._offset:
            return
        fd = self._locked(fcntl.LOCK_SH)
        try:
            self._catch_up()
        finally:
            os.close(fd)

    def record(self, ids: Iterable[str], at: float) -> None:
        ids = [i for i in ids if i]
        if ids:
            self._append(f"\na {at:.6f} {' '.join(ids)} $\n")

    def forget(self, ids: Iterable[str]) -> None:
        ids = [i for i in ids if i]
        if ids:
            self._append(f"\nf {' '.join(ids)} $\n")

    def _append(self, line: str) -> None:
        if not self._seen.current():
            # The ids may be of items erased since this log was read: drop them, and start from the new stamp.
            self._seen = derived.Generation.read(self._seen.stamp)
            return
        derived.publish(self._seen, self.path, lambda folder, name: self._write(line, folder, name))

    def _write(self, line: str, folder: int, name: str) -> None:
        data = line.encode("utf-8")
        fd = self._locked(fcntl.LOCK_SH, folder)
        try:
            try:
                out = open_private(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, dir_fd=folder)
            except OSError as exc:
                raise MemoryStoreError("unavailable", f"cannot write {self.path}: {exc}") from exc
            try:
                os.write(out, data)
                size = os.fstat(out).st_size
            finally:
                os.close(out)
        finally:
            os.close(fd)
        if size > self.compact_bytes:
            self.compact(folder)

    def compact(self, folder: int | None = None) -> None:
        """Fold the log into one ``s`` line per item (atomic replace under the exclusive lock).

        ``folder``: a descriptor of the log's folder, the one an append checked and wrote
        through; the lock and the new log are opened in it, never by a path a folder
        swapped for a link would redirect.
        """
        with self._guard:
            fd = self._locked(fcntl.LOCK_EX, folder)
            try:
                self._inode = None  # re-read from the start: exact totals, nothing double counted
                self._catch_up(folder)  # the log that is replaced, read where it is written
                lines = [f"s {i} {c} {t:.6f} $\n" for i, (c, t) in sorted(self._counts.items())]
                where = self.path if folder is None else self.path.name
                replace_file(where, "".join(lines), dir_fd=folder)
                self._inode = None
                self._catch_up(folder)
            except OSError as exc:
                raise MemoryStoreError("unavailable", f"cannot compact {self.path}: {exc}") from exc
            finally:
                os.close(fd)

    def _catch_up(self, folder: int | None = None) -> None:
        """Read what was appended since the last look (all of it when the file was swapped).

        ``folder``: a descriptor of the log's folder (a compaction's), the log opened in it by name.
        """
        try:
            where = self.path if folder is None else self.path.name
            fd = open_local(where, dir_fd=folder)  # a regular file, no link followed, never blocking
        except FileNotFoundError:
            self._counts, self._offset, self._inode = {}, 0, None
            return
        except OSError as exc:
            raise RefusedFile(self.path, f"cannot be read ({exc.strerror})") from None
        try:
            st = os.fstat(fd)
            if st.st_ino != self._inode:
                self._counts, self._offset, self._inode = {}, 0, st.st_ino
            if st.st_size - self._offset > READ_LIMIT:
                raise RefusedFile(self.path, f"has more than {READ_LIMIT} bytes to read")
            data = os.pread(fd, READ_LIMIT, self._offset)
        finally:
            os.close(fd)
        end = data.rfind(b"\n") + 1  # a line still being written waits for the next look
        for raw in data[:end].decode("utf-8", errors="replace").splitlines():
            _apply_line(self._counts, raw.split())
        self._offset += end


def _apply_line(counts: dict[str, tuple[int, float]], parts: list[str]) -> None:
    if len(parts) < 2 or parts[-1] != "$":  # empty, or torn by a crash
        return
    parts = parts[:-1]
    try:
        if parts[0] == "a" and len(parts) >= 3:
            _add(counts, parts[2:], _time(parts[1]))
        elif parts[0] == "f":
            for i in parts[1:]:
                counts.pop(i, None)
        elif parts[0] == "s" and len(parts) == 4:
            count = int(parts[2])
            if count < 0:
                return
            counts[parts[1]] = (count, _time(parts[3]))
    except (IndexError, ValueError):
        return


def _time(text: str) -> float:
    """A line's time; ``ValueError`` (the line is skipped) for one that is no date of the years 1 to 9999.

    Held to recall's one date check: a finite 1e300 became an item's ``last_accessed``, and every
    answer that formats it as a date (recent, recall) failed.
    """
    at = float(text)
    if not is_date_time(at):
        raise ValueError(f"{text} is not a time of the years 1 to 9999")
    return at
