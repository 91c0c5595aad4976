"""A memory's way in from a folder and out to a folder or a tarball: ``gitmem import`` and ``export``.

Both ends are input, so neither trusts what it is handed:

- **Export** copies a commit's tree, and a tree made with plain git may name entries
  ``..`` or ``a/../..``, which joined to a destination would write outside it. Every
  exported path therefore passes :func:`~gitmem.fileformat.validate_path`, the rule a
  write applies; an entry that breaks it is skipped and listed with the rule, never
  written. Files are created exclusively (``O_EXCL | O_NOFOLLOW``) inside a fresh
  sibling folder that is then renamed onto the destination, so nothing is written
  through a link and a failure leaves no half-exported folder.
- **Import** reads a folder someone pointed at: a file's size is checked from its
  ``lstat`` before any byte is read (and at most the limit plus one byte is read, in
  case it grows), links are not followed, FIFOs, sockets and devices are refused
  without being opened (opening a FIFO would block), and every entry left out is
  listed with its reason. Into a memory (:func:`scan_for`), a file whose content a
  ``forget`` erased there is refused and listed the same way, so the write's own
  refusal of erased content never turns one such file into the refusal of all.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem import ignorerules
from gitmem.errors import MemoryStoreError
from gitmem.fileformat import MAX_PATH_SEGMENTS, FileFormat, encode_text, validate_path
from gitmem.localfile import open_folder, open_local_stat, read_control

if TYPE_CHECKING:
    from gitmem.git.historyimport import HistoryImport
    from gitmem.gitstore import SyncGitFileStore

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
#: Folders an import leaves out, and why.
SKIPPED_FOLDERS = {".git": "a clone's git metadata is not memory"}
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
#: A `.gitignore` larger than this is refused, not read (it decides what an import leaves out).
_GITIGNORE_LIMIT = 256 * 1024


@dataclass(frozen=True)
class Refusal:
    """One entry left out: its path, the spec code of the rule it broke, and a message naming it."""

    path: str
    error: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "error": self.error, "message": self.message}


@dataclass
class ExportReport:
    """What an export wrote (``files`` paths, ``bytes`` of content) and what it refused to write."""

    files: list[str] = field(default_factory=list)
    bytes: int = 0
    refused: list[Refusal] = field(default_factory=list)


@dataclass
class ImportScan:
    """A folder read for import: the accepted ``(path, text)`` pairs, the refused files, the skipped folders."""

    accepted: list[tuple[str, str]] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    skipped: list[Refusal] = field(default_factory=list)


def _refusal(path: str, exc: MemoryStoreError) -> Refusal:
    message = exc.message if path in exc.message else f"{path}: {exc.message}"
    return Refusal(path, exc.code, message)


def _exportable(files: list[tuple[str, str]], fmt: FileFormat, report: ExportReport) -> Iterator[tuple[str, str]]:
    """The ``(path, version)`` pairs whose path a write would accept, each once; the rest go to ``report``."""
    seen: set[str] = set()
    for path, version in files:
        try:
            clean = validate_path(path, fmt)
            if clean != path:
                raise MemoryStoreError("invalid_path", f"{path!r} is not in NFC form (a write stores {clean!r})")
            if clean in seen:
                raise MemoryStoreError("invalid_path", f"{path!r}: the tree names this path twice")
        except MemoryStoreError as exc:
            report.refused.append(_refusal(repr(path), exc))
            continue
        seen.add(clean)
        yield clean, version


def _safe_target(destination: Path) -> None:
    """Refuse a destination that is a link or a file, or a folder that is not empty."""
    try:
        info = os.lstat(destination)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"cannot look at {destination}: {exc.strerror}") from exc
    if stat.S_ISLNK(info.st_mode):
        raise MemoryStoreError("already_exists", f"{destination} is a symbolic link; export writes no file through one")
    if stat.S_ISDIR(info.st_mode):
        with os.scandir(destination) as entries:
            if next(entries, None) is None:
                return
    raise MemoryStoreError("already_exists", f"{destination} exists and is not an empty folder")


def _write_new(folder_fd: int, parts: list[str], data: bytes) -> None:
    """Create ``parts`` (a validated path's segments) under the folder open as ``folder_fd``, never via a link."""
    fds: list[int] = []
    try:
        current = folder_fd
        for segment in parts[:-1]:
            try:
                os.mkdir(segment, 0o777, dir_fd=current)
            except FileExistsError:
                pass
            current = os.open(segment, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=current)
            fds.append(current)
        fd = os.open(parts[-1], _NEW_FILE, 0o666, dir_fd=current)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    finally:
        for fd in fds:
            os.close(fd)


def export_folder(
    store: SyncGitFileStore, files: list[tuple[str, str]], destination: Path, *, commit: str | None = None
) -> ExportReport:
    """Write ``files`` (from :meth:`~gitmem.gitstore.SyncGitFileStore.snapshot`) as a new folder at ``destination``.

    ``destination`` must not exist or be an empty folder (not a link to one). With
    ``commit`` (the snapshot's), its links and submodules are listed as not exported.
    """
    _safe_target(destination)
    report = ExportReport(refused=_not_files(store, commit))
    destination.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    try:
        top = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for path, version in _exportable(files, store.format, report):
                data = store.raw(version)
                try:
                    _write_new(top, path.split("/"), data)
                except (FileExistsError, NotADirectoryError, IsADirectoryError):
                    # A crafted tree may hold a file and a folder of one name (or a name git folds).
                    report.refused.append(
                        Refusal(path, "invalid_path", f"{path}: another exported path already takes this name")
                    )
                    continue
                report.files.append(path)
                report.bytes += len(data)
        finally:
            os.close(top)
        # The folder keeps mkdtemp's owner-only mode, as everything gitmem makes for a memory.
        # rename(2) replaces an empty folder and refuses a full one or a link: no check-then-act gap.
        os.replace(tmp, destination)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return report


def export_tar(
    store: SyncGitFileStore, files: list[tuple[str, str]], destination: Path, *, commit: str | None = None
) -> ExportReport:
    """Write ``files`` into a new tarball at ``destination``, compressed as its suffix says (``commit``: as above)."""
    if os.path.lexists(destination):  # a link counts, dangling or not: nothing is written through one
        raise MemoryStoreError("already_exists", f"{destination} already exists")
    suffix = destination.name.rsplit(".", 1)[-1]
    mode = {"gz": "w:gz", "tgz": "w:gz", "bz2": "w:bz2", "xz": "w:xz"}.get(suffix, "w")
    destination.parent.mkdir(parents=True, exist_ok=True)
    report = ExportReport(refused=_not_files(store, commit))
    fd, name = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode=mode) as tar:  # type: ignore[call-overload]
            for path, version in _exportable(files, store.format, report):
                data = store.raw(version)
                info = tarfile.TarInfo(path)
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
                report.files.append(path)
                report.bytes += len(data)
        os.replace(tmp, destination)  # owner-only (mkstemp's mode), like the folder export
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return report


def _not_files(store: SyncGitFileStore, commit: str | None) -> list[Refusal]:
    """The entries of ``commit``'s tree that are neither files nor folders (links, submodules): never exported."""
    if commit is None:
        return []
    from gitmem.git.repo import translate_errors

    out: list[Refusal] = []
    with translate_errors(store.path):
        stack = [("", str(store.repo.tree_of(commit).id))]
        while stack:
            prefix, tree = stack.pop()
            for name, kind, oid in store.repo.tree_items(tree):
                path = f"{prefix}{name}"
                if kind == "tree":
                    stack.append((f"{path}/", oid))
                elif kind == "other":
                    shown = f"{path!r}: a symbolic link or submodule, not a file; not exported"
                    out.append(Refusal(repr(path), "invalid_file", shown))
    return sorted(out, key=lambda r: r.path)


# ---------------------------------------------------------------- import


_SPECIAL = {
    stat.S_IFLNK: "a symbolic link (links are not followed)",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}
"""What each kind of special file is called; any other that is no regular file or folder is "not a regular file"."""


def _same_file(now: os.stat_result, seen: os.stat_result) -> bool:
    return (now.st_dev, now.st_ino) == (seen.st_dev, seen.st_ino)


def _read_bounded(full: Path, rel: str, limit: int, seen: os.stat_result | None = None) -> bytes:
    """At most ``limit + 1`` bytes of a regular file, opened without following a link or blocking.

    ``seen``: what the walk looked at under this name; a file that is not that one (it, or a
    folder on its way, was replaced since) is refused, never read.
    """
    try:
        fd, now = open_local_stat(full)
    except OSError as exc:
        if exc.errno == errno.EINVAL:  # swapped for something else since the walk
            raise MemoryStoreError("invalid_file", f"{rel}: not a regular file") from None
        raise
    if seen is not None and not _same_file(now, seen):
        os.close(fd)
        why = f"{rel}: replaced (or a folder on its way was) since the import looked at it"
        raise MemoryStoreError("invalid_file", why)
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise MemoryStoreError("too_large", f"{rel}: the file grew past {limit} bytes while read")
    return data


def _check_file(full: Path, rel: str, info: os.stat_result, fmt: FileFormat) -> tuple[str, str]:
    """The file's memory path and text when it passes the rules of a store write, else ``MemoryStoreError``."""
    path = validate_path(rel, fmt)
    if info.st_size > fmt.max_file_bytes:
        raise MemoryStoreError("too_large", f"{rel}: {info.st_size} bytes; the limit is {fmt.max_file_bytes}")
    data = _read_bounded(full, rel, fmt.max_file_bytes, info)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryStoreError("invalid_file", f"{rel}: not UTF-8 text (byte {exc.start})") from None
    encode_text(text, fmt)
    return path, text


#: A folder being walked by :func:`scan_folder`: its descriptor, its path, its entries still to look at,
#: its prefix, its rules.
Walking = tuple[int, Path, Iterator[os.DirEntry[str]], str, list[ignorerules.Rule]]


def scan_folder(folder: Path, fmt: FileFormat, *, exclude: Sequence[str] = (), gitignore: bool = False) -> ImportScan:
    """Read ``folder`` for import: every entry is accepted, refused (with its rule) or skipped (with why).

    Entries are looked at with ``lstat`` only; nothing but a regular file is ever opened.
    ``exclude`` globs and, with ``gitignore``, the folder's ``.gitignore`` files leave
    entries out (see :mod:`gitmem.ignorerules`); each one left out is listed as skipped.

    The folder may change while it is read (someone else may write in it): each folder is
    opened by its name in the one above (no link followed, no path resolved again) and
    must be the one its listing showed; its entries are looked at, and its ``.gitignore``
    read, through that descriptor; and each file read must be the very file the walk
    looked at (device and inode). A subfolder swapped for a link to a folder outside
    never has anything of that folder read.
    """
    scan = ImportScan()
    found: list[tuple[str, Path, os.stat_result]] = []
    top_rules = ignorerules.parse(exclude, source="--exclude")

    def opened(
        here: Path, prefix: str, rules: list[ignorerules.Rule], above: int | None, seen: os.stat_result | None
    ) -> Walking | None:
        """The entries of one folder to walk, with its prefix and rules; ``None`` (listed as refused) if it cannot be.

        ``above``: the descriptor of the folder it is in (``None``: the top, named by the user);
        ``seen``: what the walk saw there under its name.
        """
        if prefix.count("/") >= MAX_PATH_SEGMENTS:
            # Any file in it would have more segments than a path may: nothing under it can come in,
            # and the walk goes no deeper (a folder nested thousands deep costs nothing more).
            deep = prefix.count("/")
            why = f"{prefix}: folders nested {deep} deep; a path holds at most {MAX_PATH_SEGMENTS} segments"
            scan.refused.append(Refusal(prefix, "invalid_path", f"{why}, so nothing under it is imported"))
            return None
        shown = prefix or "."
        try:
            fd = open_folder(here, follow=True) if above is None else open_folder(here.name, dir_fd=above)
        except OSError as exc:
            if above is not None and exc.errno in (errno.ELOOP, errno.ENOTDIR):
                why = f"{prefix}: no longer a folder (a link or a file now); nothing under it is imported"
                scan.refused.append(Refusal(shown, "invalid_file", why))
            else:
                scan.refused.append(Refusal(shown, "unavailable", f"{prefix or here}: cannot list: {exc.strerror}"))
            return None
        try:
            if seen is not None and not _same_file(os.fstat(fd), seen):
                why = f"{prefix}: replaced while the import looked at it; nothing under it is imported"
                scan.refused.append(Refusal(shown, "invalid_file", why))
                os.close(fd)
                return None
            if gitignore:
                try:
                    rules = [*rules, *_gitignore_rules(fd, prefix)]
                except MemoryStoreError as exc:  # what it leaves out is unknown: leave out the whole folder
                    where = f"{prefix}.gitignore"
                    why = f"{exc.message}; nothing under {prefix or './'} is imported"
                    scan.refused.append(Refusal(where, exc.code, why))
                    os.close(fd)
                    return None
            entries = sorted(os.scandir(fd), key=lambda e: e.name)  # each looked at through fd
        except OSError as exc:
            os.close(fd)
            scan.refused.append(Refusal(shown, "unavailable", f"{prefix or here}: cannot list: {exc.strerror}"))
            return None
        return fd, here, iter(entries), prefix, rules

    # Depth first, in name order, with a stack of the folders being walked (not one call per level).
    top = opened(folder, "", top_rules, None, None)
    stack = [top] if top is not None else []
    try:
        while stack:
            fd, here, entries, prefix, rules = stack[-1]
            entry = next(entries, None)
            if entry is None:
                os.close(fd)
                stack.pop()
                continue
            rel = f"{prefix}{entry.name}"
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as exc:
                scan.refused.append(Refusal(rel, "unavailable", f"{rel}: cannot look at it: {exc.strerror}"))
                continue
            is_dir = stat.S_ISDIR(info.st_mode)
            rule = ignorerules.ignored_by(rules, rel, is_dir)
            if rule is not None:
                shown = f"{rel}/" if is_dir else rel
                scan.skipped.append(Refusal(shown, "skipped", f"{shown}: left out by {rule.source} ({rule.text})"))
                continue
            if is_dir:
                if entry.name in SKIPPED_FOLDERS:
                    scan.skipped.append(Refusal(f"{rel}/", "skipped", f"{rel}/: {SKIPPED_FOLDERS[entry.name]}"))
                else:
                    below = opened(here / entry.name, f"{rel}/", rules, fd, info)
                    if below is not None:
                        stack.append(below)
                continue
            if not stat.S_ISREG(info.st_mode):
                kind = _SPECIAL.get(stat.S_IFMT(info.st_mode), "not a regular file")
                scan.refused.append(Refusal(rel, "invalid_file", f"{rel}: {kind}; only regular files are imported"))
                continue
            found.append((rel, here / entry.name, info))
    finally:
        for fd, *_ in stack:
            os.close(fd)

    for rel, full, info in sorted(found, key=lambda f: f[0]):
        try:
            scan.accepted.append(_check_file(full, rel, info, fmt))
        except MemoryStoreError as exc:
            scan.refused.append(_refusal(rel, exc))
        except OSError as exc:
            scan.refused.append(Refusal(rel, "unavailable", f"{rel}: cannot read: {exc.strerror}"))
    scan.refused.sort(key=lambda r: r.path)
    return scan


def scan_for(
    store: SyncGitFileStore, folder: Path, *, exclude: Sequence[str] = (), gitignore: bool = False
) -> ImportScan:
    """:func:`scan_folder` for an import into ``store``: also refused, file by file, is a file
    whose content a ``forget`` erased from that memory (rule ``erased``, code ``forbidden``).

    The write would refuse that content anyway ("erased stays erased"), but for the
    whole batch: one erased file in a folder of notes would keep every other note
    out. Found here, it is listed like any other refused file and the rest comes in.
    The check is by content (the version a write would store), whatever the file's
    path; the write itself still checks again, under its lock.
    """
    from gitmem.git.erasures import OVERRIDE_TRAILER, RULE_ERASED, erased_blobs
    from gitmem.git.repo import translate_errors
    from gitmem.git.treeedit import object_id

    scan = scan_folder(folder, store.format, exclude=exclude, gitignore=gitignore)
    if scan.accepted:
        with translate_errors(store.path):  # what a write refuses: what a forget erased (not what a purge did)
            erased = erased_blobs(store.repo.fresh(), store.path, purged=False)
        if erased:
            kept: list[tuple[str, str]] = []
            for path, text in scan.accepted:
                version = object_id(b"blob", encode_text(text, store.format))
                if version in erased:
                    message = (
                        f"{path}: {RULE_ERASED}: this content ({version[:12]}) was erased from this memory "
                        f"by forget and stays out; an admin can write it again with the {OVERRIDE_TRAILER} trailer"
                    )
                    scan.refused.append(Refusal(path, "forbidden", message))
                else:
                    kept.append((path, text))
            scan.accepted = kept
            scan.refused.sort(key=lambda r: r.path)
    return scan


def _gitignore_rules(folder: int, prefix: str) -> list[ignorerules.Rule]:
    """The rules of the ``.gitignore`` in the folder open as ``folder`` (none when it is absent).

    It decides what an import leaves out, so it is read as a control file (no
    link followed, never blocking, bounded, UTF-8): one that cannot be read
    raises ``MemoryStoreError`` instead of reading as "leaves out nothing".
    """
    source = f"{prefix}.gitignore"
    raw = read_control(".gitignore", _GITIGNORE_LIMIT, name=source, dir_fd=folder)
    if raw is None:
        return []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryStoreError("invalid_file", f"{source} is not UTF-8 text (byte {exc.start})") from None
    return ignorerules.parse(ignorerules.lines_of(text), base=prefix, source=source)


def import_history(
    store: SyncGitFileStore,
    source: str,
    *,
    rev: str = "HEAD",
    strict: bool = False,
    rewrite: bool = False,
    exclude: Sequence[str] = (),
    gitignore: bool = False,
) -> HistoryImport:
    """Bring the git history of ``rev`` in the repository at ``source`` into the memory (see
    :mod:`gitmem.git.historyimport`): commits kept as they are, each checked by the push rules;
    with ``rewrite``, rewritten without what the rules refuse or ``exclude``/``gitignore`` leave
    out (:mod:`gitmem.git.historyrewrite`)."""
    from gitmem.git.historyimport import import_history as bring

    if (exclude or gitignore) and not rewrite:
        raise MemoryStoreError(
            "invalid_pattern", "--exclude and --gitignore leave entries out of a history only with --rewrite"
        )
    return bring(
        store.repo, store.format, source, rev=rev, strict=strict, rewrite=rewrite, exclude=exclude, gitignore=gitignore
    )
