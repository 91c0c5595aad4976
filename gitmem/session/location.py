"""Where a session's memory lives, and opening it there as a git-backed ``SessionMemory``.

The location is a folder used as a gitmem root: its ``session`` mount (a bare
repository, ``<folder>/session.git``, of kind ``session``) holds the items, so the
memory is cloned, reviewed and restored like any other mount. Unless configured
(``memory_dir``), it is ``<workspace>/.gitmem/memory``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Final

from gitmem.errors import MemoryStoreError
from gitmem.gitstore import DERIVED_DIR
from gitmem.model import Origin
from gitmem.root import Root
from gitmem.session.memory import SessionMemory
from gitmem.session.stats import FileAccessStats

DEFAULT_MOUNT: Final = "session"
STATS_FILE: Final = "session-stats"
CATALOGUE_FILE: Final = "session-catalogue.json"


def default_memory_dir(workspace: str | os.PathLike[str], memory_dir: str | os.PathLike[str] | None = None) -> Path:
    """``memory_dir`` when configured (relative to the workspace), else ``<workspace>/.gitmem/memory``."""
    base = Path(workspace).expanduser()
    if memory_dir is not None and str(memory_dir).strip():
        chosen = Path(memory_dir).expanduser()
        return chosen if chosen.is_absolute() else base / chosen
    return base / ".gitmem" / "memory"


def open_session_memory(
    directory: str | os.PathLike[str],
    *,
    mount: str = DEFAULT_MOUNT,
    create: bool = True,
    origin: Origin | None = None,
    clock: Callable[[], float] | None = None,
) -> SessionMemory:
    """The session memory in ``directory`` (created when ``create``), its stats beside the repo.

    Fails with ``unavailable`` naming the folder when it cannot be created or opened,
    and ``wrong_kind`` when the mount there holds something other than session items.
    """
    folder = Path(directory).expanduser().absolute()
    try:
        store = Root(folder).mount(mount, create=create, kind="session").sync
    except MemoryStoreError as exc:
        if exc.code in ("unavailable", "not_found"):
            raise MemoryStoreError(
                exc.code,  # type: ignore[arg-type]
                f"cannot open session memory in {folder}: {exc.message}",
            ) from exc
        raise
    except OSError as exc:
        raise MemoryStoreError("unavailable", f"cannot create session memory in {folder}: {exc}") from exc
    local = Path(store.path) / "gitmem"  # beside the repository's other local state, never committed
    stats = FileAccessStats(local / STATS_FILE, stamp=store.generation_file)
    catalogue = Path(store.path) / DERIVED_DIR / CATALOGUE_FILE  # holds item text: purge/forget delete it
    if clock is None:
        return SessionMemory(store, stats=stats, origin=origin, catalogue_file=catalogue)
    return SessionMemory(store, stats=stats, origin=origin, clock=clock, catalogue_file=catalogue)
