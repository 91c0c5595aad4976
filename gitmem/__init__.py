"""gitmem: a git-backed, versioned memory repository for AI agents.

Each memory is a bare git repository; every change is one commit, a file's
version is its blob id and a change cursor is a commit id.
"""

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
