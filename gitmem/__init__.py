"""gitmem: a git-backed, versioned memory repository for AI agents.

Each memory is a bare git repository; every change is one commit, a file's
version is its blob id and a change cursor is a commit id.

Opening a store imports pygit2 and changes three of libgit2's process-wide
settings for every pygit2 user in the process (strict object creation off, a
bigger tree cache, at most 256 open pack files: ``gitmem.git.repo.PYGIT2_SETTINGS``);
set ``GITMEM_PYGIT2_DEFAULTS=1`` before importing gitmem to keep libgit2's defaults.
"""

from __future__ import annotations

from gitmem.lazyexports import exports as _exports

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitmem.aio import AsyncFileStore
    from gitmem.errors import GitmemError, MemoryStoreError, MemoryToolError
    from gitmem.fileformat import FileFormat, describe, parse_frontmatter, validate_directory, validate_path
    from gitmem.gitstore import GitFileStore, SyncGitFileStore
    from gitmem.history import BlameLine, DiffHunk, FileDiff, ForgetReport, FsckReport, GcReport, LogEntry
    from gitmem.index.results import FindHit, IndexStatus
    from gitmem.memstore import InMemoryFileStore
    from gitmem.model import (
        ANY,
        AnyVersion,
        Applied,
        Changes,
        Edit,
        FileEntry,
        FileText,
        FullResync,
        GrepMatch,
        MountKind,
        Origin,
        SearchResult,
    )
    from gitmem.root import Root
    from gitmem.store import (
        BatchFileStore,
        FileStore,
        ForwardingFileStore,
        HistoryStore,
        RunScopedStore,
        SearchableFileStore,
    )

#: Where each public name lives; imported on first use so that ``import gitmem`` (and every
#: CLI call, which imports it) does not load pygit2, asyncio or the index until they are needed.
_LAZY: dict[str, str] = {
    "ANY": "gitmem.model",
    "AnyVersion": "gitmem.model",
    "Applied": "gitmem.model",
    "AsyncFileStore": "gitmem.aio",
    "BatchFileStore": "gitmem.store",
    "BlameLine": "gitmem.history",
    "Changes": "gitmem.model",
    "DiffHunk": "gitmem.history",
    "Edit": "gitmem.model",
    "FileDiff": "gitmem.history",
    "FileEntry": "gitmem.model",
    "FileFormat": "gitmem.fileformat",
    "FileStore": "gitmem.store",
    "FileText": "gitmem.model",
    "FindHit": "gitmem.index.results",
    "ForgetReport": "gitmem.history",
    "ForwardingFileStore": "gitmem.store",
    "FsckReport": "gitmem.history",
    "FullResync": "gitmem.model",
    "GcReport": "gitmem.history",
    "GitFileStore": "gitmem.gitstore",
    "GitmemError": "gitmem.errors",
    "GrepMatch": "gitmem.model",
    "HistoryStore": "gitmem.store",
    "InMemoryFileStore": "gitmem.memstore",
    "IndexStatus": "gitmem.index.results",
    "LogEntry": "gitmem.history",
    "MemoryStoreError": "gitmem.errors",
    "MemoryToolError": "gitmem.errors",
    "MountKind": "gitmem.model",
    "Origin": "gitmem.model",
    "Root": "gitmem.root",
    "RunScopedStore": "gitmem.store",
    "SearchResult": "gitmem.model",
    "SearchableFileStore": "gitmem.store",
    "SyncGitFileStore": "gitmem.gitstore",
    "describe": "gitmem.fileformat",
    "parse_frontmatter": "gitmem.fileformat",
    "validate_directory": "gitmem.fileformat",
    "validate_path": "gitmem.fileformat",
}


__version__ = "0.1.0"

__all__ = [
    "ANY",
    "AnyVersion",
    "Applied",
    "AsyncFileStore",
    "BatchFileStore",
    "BlameLine",
    "Changes",
    "DiffHunk",
    "Edit",
    "FileDiff",
    "FileEntry",
    "FileFormat",
    "FileStore",
    "FileText",
    "FindHit",
    "ForgetReport",
    "ForwardingFileStore",
    "FsckReport",
    "FullResync",
    "GcReport",
    "GitFileStore",
    "GitmemError",
    "GrepMatch",
    "HistoryStore",
    "InMemoryFileStore",
    "IndexStatus",
    "LogEntry",
    "MemoryStoreError",
    "MemoryToolError",
    "MountKind",
    "Origin",
    "Root",
    "RunScopedStore",
    "SearchResult",
    "SearchableFileStore",
    "SyncGitFileStore",
    "__version__",
    "describe",
    "parse_frontmatter",
    "validate_directory",
    "validate_path",
]

__getattr__, __dir__ = _exports(__name__, _LAZY, globals(), __all__)
