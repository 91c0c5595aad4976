"""A root directory of mounts: ``<root>/<name>.git``, one bare repository per memory."""

from __future__ import annotations

import errno
import fcntl
import os
import re
from contextlib import ExitStack

from gitmem.errors import MemoryStoreError
from gitmem.git.perms import make_private_dir, open_private

TYPE_CHECKING = False
if TYPE_CHECKING:  # the store (pygit2 and the engines) loads when a mount is opened: see gitmem.quickread
    from pathlib import Path

    from gitmem.fileformat import FileFormat
    from gitmem.gitstore import GitFileStore
    from gitmem.model import MountKind

MOUNT_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")


def check_mount_name(name: object) -> str:
    if not isinstance(name, str) or not MOUNT_NAME.fullmatch(name):
        raise MemoryStoreError(
            "invalid_path",
            f"{name!r} is not a mount name: use a lowercase letter, then up to 62 of a-z, 0-9 and '-'",
        )
    return name


def absolute_folder(path: str | os.PathLike[str]) -> str:
    """``str(Path(path).expanduser().absolute())``, without importing :mod:`pathlib` for the usual paths.

    A CLI read names its root and one memory; pathlib (with ``urllib.parse`` and
    ``ipaddress``) costs it more than the names' arithmetic. The spelling is pathlib's:
    ``.`` parts and repeated or trailing slashes dropped, ``..`` kept, a leading ``//``
    kept (POSIX leaves its meaning to the system); a relative path whose first part
    starts with ``~`` goes to pathlib itself. ``tests/test_root_folder.py`` holds the two to the same strings.
    """
    text = os.fspath(path)
    parts = [part for part in text.split("/") if part and part != "."]
    if not text.startswith("/"):
        if parts and parts[0].startswith("~"):  # pathlib expands it (and knows when it cannot)
            from pathlib import Path

            return str(Path(text).expanduser().absolute())
        text = os.getcwd()
        parts = [part for part in text.split("/") if part and part != "."] + parts
    lead = "//" if text.startswith("//") and not text.startswith("///") else "/"
    return lead + "/".join(parts)


def _exists(path: str) -> bool:
    """``Path(path).exists()`` of Python 3.11: missing means absent, other errors (a folder this
    user may not search) are raised rather than taken for "no such memory"."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return False
        raise
    except ValueError:
        return False
    return True


class Root:
    """A folder of memories. Creating a mount is safe when processes race to do it.

    ``Root()`` with no folder is the one the CLI and the MCP server use: ``$GITMEM_ROOT``,
    else ``$XDG_DATA_HOME/gitmem``, else ``~/.local/share/gitmem`` (read when the root is
    made), so a memory written from Python is the one ``gitmem ls`` shows.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        if path is None:
            from gitmem.config import default_root_folder

            path = default_root_folder()
        self.folder = absolute_folder(path)
        self._path: Path | None = None

    @property
    def path(self) -> Path:
        """The root folder, absolute (``~`` expanded; ``..`` kept as given)."""
        if self._path is None:
            from pathlib import Path

            self._path = Path(self.folder)
        return self._path

    def __repr__(self) -> str:
        return f"Root({self.folder!r})"

    def mount_path(self, name: str) -> Path:
        return self.path / f"{check_mount_name(name)}.git"

    def mount_folder(self, name: str) -> str:
        """``str(mount_path(name))``: the folder memory ``name`` has (or would have)."""
        return f"{self.folder}{'' if self.folder.endswith('/') else '/'}{check_mount_name(name)}.git"

    def existing(self, name: str) -> Path:
        """The folder of memory ``name``; ``unknown_memory`` when there is no such memory."""
        from pathlib import Path

        return Path(self.existing_folder(name))

    def existing_folder(self, name: str) -> str:
        """``str(existing(name))``, without pathlib: the CLI's quick reads open the folder themselves."""
        folder = self.mount_folder(name)
        if not _exists(folder + "/HEAD"):
            raise self._missing(name)
        return folder

    def _missing(self, name: str) -> MemoryStoreError:
        return MemoryStoreError("unknown_memory", f"no memory named {name!r} under {self.folder}")

    def mount(
        self,
        name: str,
        *,
        create: bool = False,
        fmt: FileFormat | None = None,
        kind: MountKind | None = None,
        hooks: bool = True,
    ) -> GitFileStore:
        """Open mount ``name``; with ``create=True`` make it first when it does not exist.

        ``kind`` (when given) is the kind a new mount gets and the kind an existing
        one must have (``wrong_kind`` otherwise); ``None`` opens any kind and creates
        a ``file`` mount. A mount made here gets gitmem's ``pre-receive`` and
        ``post-receive`` hooks (:func:`gitmem.hooks.install_hooks`) unless ``hooks``
        is false: a push to it over a file path or ssh then meets the memory's rules
        (and the erasure ledger) from its first day, not only after ``gitmem hooks install``.
        """
        store = self._mount(name, create=create, fmt=fmt, kind=kind or "file", hooks=hooks)
        if kind is not None:
            from gitmem.model import check_kind  # a push names a memory without loading the values

            check_kind(name, store.kind, kind)
        return store

    def kind(self, name: str) -> MountKind:
        """What mount ``name`` holds; ``unknown_memory`` when there is no such memory."""
        return self.mount(name).kind

    def _mount(
        self, name: str, *, create: bool, fmt: FileFormat | None, kind: MountKind, hooks: bool = True
    ) -> GitFileStore:
        from gitmem.gitstore import GitFileStore

        path = self.mount_path(name)
        if (path / "HEAD").exists():
            return GitFileStore.open(path, fmt)
        if not create:
            raise self._missing(name)
        try:
            from gitmem.gitstore import make_private_parents

            make_private_parents(os.fspath(self.path))
            make_private_dir(self.path)
            lock_fd = open_private(self.path / ".gitmem-root.lock", os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise MemoryStoreError("unavailable", f"cannot use root {self.path}: {exc}") from exc
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            if (path / "HEAD").exists():
                return GitFileStore.open(path, fmt)
            tmp = self.path / f".{name}.git.{os.getpid()}.tmp"
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
            GitFileStore.init(tmp, fmt, kind=kind)
            if hooks:
                from gitmem.hooks import install_hooks

                try:
                    install_hooks(tmp)
                except MemoryStoreError:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise
            try:
                os.replace(tmp, path)
            except OSError as exc:  # e.g. a foreign process left a partial folder there
                shutil.rmtree(tmp, ignore_errors=True)
                raise MemoryStoreError("unavailable", f"cannot create {path}: {exc}") from exc
            return GitFileStore.open(path, fmt)
        finally:
            os.close(lock_fd)

    def mounts(self) -> list[str]:
        """Names of the memories under this root, sorted."""
        names = []
        try:
            if not self.path.is_dir():
                return []
            for child in self.path.iterdir():
                stem = child.name[:-4] if child.name.endswith(".git") else None
                if stem and MOUNT_NAME.fullmatch(stem) and (child / "HEAD").is_file():
                    names.append(stem)
        except OSError as exc:  # e.g. a root (or a mount in it) this user may not read
            raise MemoryStoreError("unavailable", f"cannot list the memories in {self.path}: {exc}") from exc
        return sorted(names)

    def remove(self, name: str) -> None:
        """Delete a memory and all its history; open stores then answer ``memory_deleted``."""
        from gitmem.git.repo import GitRepo

        path = self.existing(name)
        trash = self.path / f".{name}.git.{os.getpid()}.removed"
        # Move it away under the mount's writer lock: a write caught mid-commit would
        # otherwise recreate refs/heads/ at the old path (libgit2 makes leading dirs).
        lock = GitRepo(os.fspath(path)).lock
        try:
            with ExitStack() as held:
                if (path / "gitmem").is_dir():
                    held.enter_context(lock.hold())
                os.replace(path, trash)
        except FileNotFoundError:
            raise self._missing(name) from None
        except OSError as exc:  # e.g. no write permission on the root folder: nothing was removed
            raise MemoryStoreError("unavailable", f"cannot remove {path}: {exc}") from exc
        finally:
            lock.close()
        import shutil

        shutil.rmtree(trash, ignore_errors=True)
